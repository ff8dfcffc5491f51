package attention

import (
	"math"
	"math/rand"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"

	"gorgonia.org/gorgonia"

	"github.com/flashgorgon/flashgorgon/graph"
)

// TestMemory runs forward and backward of the fused op at B = H = 1,
// N = 16384, d = 64 in float32 through a TapeMachine and bounds the memory
// it takes: the N×N float32 score matrix alone would be 1 GiB, the limit is
// 128 MiB.
//
// Two measurements: the bytes allocated from building the graph to the end
// of the run (runtime.MemStats.TotalAlloc; whatever the collector does,
// the heap cannot grow by more than what was allocated, so this bounds the
// peak growth with no sampling), and the peak of the live heap
// (MemStats.HeapAlloc) seen by a goroutine sampling every 5 ms, over the
// heap before building.
//
// It runs the causal variant: ~120 GFLOP for forward and backward instead
// of twice that, around ten seconds on two cores.
func TestMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("about ten seconds; run without -short")
	}
	const N, D = 16384, 64
	const limit = 128 << 20
	rng := rand.New(rand.NewSource(13))
	qt := graph.RandTensor[float32](rng, 1, 1, N, D)
	kt := graph.RandTensor[float32](rng, 1, 1, N, D)
	vt := graph.RandTensor[float32](rng, 1, 1, N, D)
	wt := graph.RandTensor[float32](rng, 1, 1, N, D)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var (
		peak uint64
		mu   sync.Mutex
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		var ms runtime.MemStats
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapAlloc)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	g := gorgonia.NewGraph()
	q, k, v := graph.Input(g, "q", qt), graph.Input(g, "k", kt), graph.Input(g, "v", vt)
	o, err := Attention(q, k, v, Options{Causal: true})
	if err != nil {
		t.Fatal(err)
	}
	loss, err := weightedSum(o, graph.Input(g, "w", wt))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := graph.ForwardBackward(loss, q, k, v); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	close(stop)
	<-done

	dq, err := graph.Grads[float32](q)
	if err != nil {
		t.Fatal(err)
	}
	if hasNaN(dq) || norm(dq) == 0 {
		t.Fatalf("dq is NaN or zero (norm %v)", norm(dq))
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	growth := uint64(0)
	if peak > before.HeapAlloc {
		growth = peak - before.HeapAlloc
	}
	t.Logf("N=%d d=%d float32 causal forward+backward in %v: allocated %.1f MiB, peak live heap growth %.1f MiB (limit %d MiB; N×N float32 = %d MiB)",
		N, D, elapsed.Round(time.Millisecond), float64(allocated)/(1<<20), float64(growth)/(1<<20), limit>>20, N*N*4>>20)
	if allocated > limit {
		t.Errorf("allocated %d MiB, over the %d MiB limit", allocated>>20, limit>>20)
	}
	if growth > limit {
		t.Errorf("peak heap growth %d MiB, over the %d MiB limit", growth>>20, limit>>20)
	}
}

// TestKernelsAllocateNothing: once the pools are warm, a call of the
// forward or the backward kernel allocates only a few small objects (the
// closures and goroutines of the parallel loops, the pool's handles): no
// buffer of the problem's size, no tile or workspace per call. It measures
// MemStats.TotalAlloc over several calls with every core allowed (one
// scratch per worker) after two warm-up calls, the least of three rounds
// (a collection empties the pools).
func TestKernelsAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers at random")
	}
	p := &params{B: 1, H: 4, Hkv: 2, Nq: 300, Nk: 260, D: 32, Scale: 0.2, Causal: true}
	rng := rand.New(rand.NewSource(14))
	n, nk, nl := p.B*p.H*p.Nq*p.D, p.B*p.Hkv*p.Nk*p.D, p.B*p.H*p.Nq
	q, k, v := convert[float32](randn(rng, n)), convert[float32](randn(rng, nk)), convert[float32](randn(rng, nk))
	o, l, lr := make([]float32, n), make([]float32, nl), make([]float32, nl)
	do := convert[float32](randn(rng, n))
	dq, dk, dv := make([]float32, n), make([]float32, nk), make([]float32, nk)
	call := func() {
		flashForward(p, q, k, v, o, l, lr)
		flashBackward(p, q, k, v, o, l, lr, do, nil, dq, dk, dv)
	}
	call()
	call()
	// The least of three rounds: a collection inside a round empties the
	// pools and shows up as that round's misses.
	const calls = 10
	perCall, objects := math.Inf(1), uint64(0)
	for round := 0; round < 3; round++ {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := 0; i < calls; i++ {
			call()
		}
		runtime.ReadMemStats(&after)
		if b := float64(after.TotalAlloc-before.TotalAlloc) / calls; b < perCall {
			perCall, objects = b, (after.Mallocs-before.Mallocs)/calls
		}
	}
	// One call's temporaries: the backward's buffer holds Q and dO
	// transposed plus the dQ partials, several times q's size.
	if limit := 0.5 * float64(4*n); perCall > limit {
		t.Errorf("%.0f bytes allocated per forward+backward call, want at most %.0f (q alone is %d bytes)", perCall, limit, 4*n)
	}
	t.Logf("%.0f bytes, %d objects per call", perCall, objects)
}

// TestIdleBuffersDropped: the slot keeping the large temporaries between
// calls hands its buffer to one caller at a time, keeps the larger of two,
// and lets the collector free a buffer nobody gave back for two
// collections (as a sync.Pool's contents go). It runs on a slot of its own:
// other tests use the package's slots.
func TestIdleBuffersDropped(t *testing.T) {
	var s bufSlot
	b := slotGet[float64](&s, 100)
	slotPut(&s, b)
	if c := slotGet[float64](&s, 60); &c[0] != &b[0] {
		t.Fatal("the buffer given back was not handed out again")
	}
	if c := slotGet[float64](&s, 60); &c[0] == &b[0] {
		t.Fatal("the buffer was handed out twice")
	}
	slotPut(&s, b)
	slotPut(&s, make([]float64, 20)) // the slot keeps the larger
	if c := slotGet[float64](&s, 40); cap(c) != 100 {
		t.Fatalf("getBuf(40) got capacity %d, want the kept 100", cap(c))
	}
	slotPut(&s, make([]float64, 1<<16))
	b = nil
	for deadline := time.Now().Add(time.Second); ; {
		runtime.GC()
		s.mu.Lock()
		wp, _ := s.ptr.(weak.Pointer[float64])
		s.mu.Unlock()
		if wp.Value() == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a buffer nobody gave back stays alive through a second of collections")
		}
	}
}
