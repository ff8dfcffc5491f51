package parallel

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestForCoversEachItemOnce checks that every index in [0, n) is visited
// exactly once, for sizes around the grain and the core count.
func TestForCoversEachItemOnce(t *testing.T) {
	for _, tc := range []struct{ n, grain int }{
		{0, 1}, {1, 1}, {2, 1}, {7, 3}, {64, 1}, {1000, 7}, {1025, 1024}, {5, 0},
	} {
		hits := make([]int32, tc.n)
		For(tc.n, tc.grain, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				atomic.AddInt32(&hits[i], 1)
			}
		})
		for i, h := range hits {
			if h != 1 {
				t.Fatalf("n=%d grain=%d: index %d visited %d times, want 1", tc.n, tc.grain, i, h)
			}
		}
	}
}

// BenchmarkFor times For over a small loop split over every worker (a
// training step's elementwise op at a small width): what each call pays for
// handing chunks to the workers and waiting for them.
func BenchmarkFor(b *testing.B) {
	for _, n := range []int{Workers(), 64 * 1024} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			x := make([]float32, n)
			for i := 0; i < b.N; i++ {
				For(n, n/Workers(), func(lo, hi int) {
					for j := lo; j < hi; j++ {
						x[j] += 1
					}
				})
			}
		})
	}
}

// BenchmarkForAfterIdle times a For of one 20 µs item per worker (20 µs
// when every worker takes one at once) that comes after the caller has
// been busy alone for a while (gap): with a gap longer than the spin
// (FLASHGORGON_SPIN=50µs, say) the workers have stopped polling and
// parked, and the For pays for waking them, as a training step would after
// each stretch of work on one core. The gap is not timed.
func BenchmarkForAfterIdle(b *testing.B) {
	for _, gap := range []time.Duration{20 * time.Microsecond, 200 * time.Microsecond, 2 * time.Millisecond} {
		b.Run(fmt.Sprintf("gap=%v", gap), func(b *testing.B) {
			n := Workers()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for t0 := time.Now(); time.Since(t0) < gap; {
				}
				b.StartTimer()
				For(n, 1, func(lo, hi int) {
					for j := lo; j < hi; j++ {
						for t0 := time.Now(); time.Since(t0) < 20*time.Microsecond; {
						}
					}
				})
			}
		})
	}
}

// chunks runs For and returns the ranges body was called on, sorted.
func chunks(n, grain int) [][2]int {
	var mu sync.Mutex
	var got [][2]int
	For(n, grain, func(lo, hi int) {
		mu.Lock()
		got = append(got, [2]int{lo, hi})
		mu.Unlock()
	})
	sort.Slice(got, func(i, j int) bool { return got[i][0] < got[j][0] })
	return got
}

// TestForChunks checks the split: w = min(GOMAXPROCS, ⌈n/grain⌉) chunks
// [i·n/w, (i+1)·n/w), whichever goroutine runs them, for several
// GOMAXPROCS (the pool grows and keeps idle workers).
func TestForChunks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 3, 8, 16, 5} {
		runtime.GOMAXPROCS(procs)
		for _, tc := range []struct{ n, grain int }{{1, 1}, {7, 1}, {16, 1}, {100, 7}, {1000, 1}, {1025, 64}} {
			t.Run(fmt.Sprintf("procs=%d/n=%d/grain=%d", procs, tc.n, tc.grain), func(t *testing.T) {
				w := min(procs, (tc.n+tc.grain-1)/tc.grain)
				for rep := 0; rep < 20; rep++ {
					got := chunks(tc.n, tc.grain)
					if len(got) != w {
						t.Fatalf("%d chunks %v, want %d", len(got), got, w)
					}
					for i, c := range got {
						if want := [2]int{i * tc.n / w, (i + 1) * tc.n / w}; c != want {
							t.Fatalf("chunk %d is %v, want %v (all: %v)", i, c, want, got)
						}
					}
				}
			})
		}
	}
}

// TestForDynamicChunks checks ForDynamic's split: c = min(Balance·GOMAXPROCS,
// ⌈n/grain⌉) chunks [i·n/c, (i+1)·n/c), each run once, whichever worker
// claims it; a busy pool (a call from inside a body) still covers [0, n)
// once.
func TestForDynamicChunks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 3, 16} {
		runtime.GOMAXPROCS(procs)
		for _, tc := range []struct{ n, grain int }{{0, 1}, {1, 1}, {7, 1}, {16, 1}, {100, 7}, {1000, 1}, {1025, 64}, {5, 0}} {
			t.Run(fmt.Sprintf("procs=%d/n=%d/grain=%d", procs, tc.n, tc.grain), func(t *testing.T) {
				c := 0
				if tc.n > 0 {
					c = min(Balance*procs, (tc.n+max(tc.grain, 1)-1)/max(tc.grain, 1))
					if min(procs, c) <= 1 {
						c = 1
					}
				}
				for rep := 0; rep < 10; rep++ {
					var mu sync.Mutex
					var got [][2]int
					ForDynamic(tc.n, tc.grain, func(lo, hi int) {
						mu.Lock()
						got = append(got, [2]int{lo, hi})
						mu.Unlock()
					})
					sort.Slice(got, func(i, j int) bool { return got[i][0] < got[j][0] })
					if len(got) != c {
						t.Fatalf("%d chunks %v, want %d", len(got), got, c)
					}
					for i, r := range got {
						if want := [2]int{i * tc.n / c, (i + 1) * tc.n / c}; r != want {
							t.Fatalf("chunk %d is %v, want %v (all: %v)", i, r, want, got)
						}
					}
				}
			})
		}
	}
	runtime.GOMAXPROCS(4)
	const outer, inner = 9, 101
	hits := make([]int32, outer*inner)
	ForDynamic(outer, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			ForDynamic(inner, 3, func(a, b int) {
				for j := a; j < b; j++ {
					atomic.AddInt32(&hits[i*inner+j], 1)
				}
			})
		}
	})
	for i, h := range hits {
		if h != 1 {
			t.Fatalf("nested: index %d visited %d times, want 1", i, h)
		}
	}
}

// TestForNestedAndConcurrent calls For from inside a body and from several
// goroutines at once (the pool serves one; the others start goroutines):
// every index is still visited once. Run with -race.
func TestForNestedAndConcurrent(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(4)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rep := 0; rep < 50; rep++ {
				const outer, inner = 13, 37
				hits := make([]int32, outer*inner)
				For(outer, 1, func(lo, hi int) {
					for i := lo; i < hi; i++ {
						For(inner, 4, func(a, b int) {
							for j := a; j < b; j++ {
								atomic.AddInt32(&hits[i*inner+j], 1)
							}
						})
					}
				})
				for i, h := range hits {
					if h != 1 {
						errs <- fmt.Errorf("index %d visited %d times", i, h)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestForPanicOnCaller: a body that panics on the calling goroutine (with
// one core For runs it there) leaves the pool usable, and so does a panic in
// the chunks that the caller takes while workers run the others.
func TestForPanicOnCaller(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 4} {
		runtime.GOMAXPROCS(procs)
		caller := goid()
		panicked := false
		// The caller takes a chunk unless the workers took them all first
		// (a loaded machine): try again then.
		for try := 0; try < 20 && !panicked; try++ {
			func() {
				defer func() { panicked = recover() != nil }()
				For(1024, 1, func(lo, hi int) {
					if goid() == caller {
						panic("boom")
					}
					time.Sleep(time.Millisecond)
				})
			}()
		}
		if !panicked {
			t.Fatalf("procs=%d: the caller never took a chunk", procs)
		}
		if got := chunks(64, 1); len(got) != procs {
			t.Fatalf("procs=%d: after the panic, %d chunks", procs, len(got))
		}
	}
}

// goid returns the calling goroutine's id (from its stack header).
func goid() string {
	var b [64]byte
	f := strings.Fields(string(b[:runtime.Stack(b[:], false)]))
	return f[1]
}

// TestParseSpin checks the values of FLASHGORGON_SPIN: Go durations ≥ 0
// (a bare 0 included) capped at MaxSpin, DefaultSpin when unset, and an
// error naming the variable for anything else.
func TestParseSpin(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want time.Duration
		bad  bool
	}{
		{"", DefaultSpin, false},
		{"0", 0, false},
		{"50µs", 50 * time.Microsecond, false},
		{" 50us ", 50 * time.Microsecond, false},
		{"5ms", 5 * time.Millisecond, false},
		{"1h", MaxSpin, false},
		{"-1ms", DefaultSpin, true},
		{"5", DefaultSpin, true},
		{"fast", DefaultSpin, true},
	} {
		t.Run(tc.env, func(t *testing.T) {
			got, err := parseSpin(tc.env)
			if got != tc.want || (err != nil) != tc.bad {
				t.Fatalf("parseSpin(%q) = %v, %v; want %v, error %t", tc.env, got, err, tc.want, tc.bad)
			}
			if err != nil && !strings.Contains(err.Error(), SpinEnv) {
				t.Fatalf("error %q does not name %s", err, SpinEnv)
			}
		})
	}
}

// TestPollFor: the spin in force is FLASHGORGON_SPIN's, cut to
// OversubscribedSpin when GOMAXPROCS exceeds the CPUs.
func TestPollFor(t *testing.T) {
	for _, tc := range []struct {
		spin        time.Duration
		procs, cpus int
		want        time.Duration
	}{
		{5 * time.Millisecond, 16, 16, 5 * time.Millisecond},
		{5 * time.Millisecond, 2, 16, 5 * time.Millisecond},
		{5 * time.Millisecond, 16, 2, OversubscribedSpin},
		{10 * time.Microsecond, 16, 2, 10 * time.Microsecond},
		{0, 17, 16, 0},
		{MaxSpin, 1, 1, MaxSpin},
	} {
		if got := pollFor(tc.spin, tc.procs, tc.cpus); got != tc.want {
			t.Errorf("pollFor(%v, GOMAXPROCS %d, %d CPUs) = %v, want %v", tc.spin, tc.procs, tc.cpus, got, tc.want)
		}
	}
}

// TestIdleWorkersPark checks the spin policy on a pool of its own: after a
// job, no worker parks before the spin has passed since the job opened (a
// worker polls for the spin from the end of its last chunk), and every
// worker has parked soon after (idle workers stop taking CPU time); the
// parked workers then serve the next job. GOMAXPROCS stays within the CPUs
// (pollFor would cut the spin otherwise); the pool runs 4 workers anyway.
func TestIdleWorkersPark(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(min(4, runtime.NumCPU()))
	for _, s := range []time.Duration{0, 100 * time.Millisecond} {
		t.Run(s.String(), func(t *testing.T) {
			p := newPool(s)
			const n, workers = 64, 4
			hits := make([]int32, 2*n)
			job := func(off int) {
				p.mu.Lock()
				defer p.mu.Unlock()
				p.run(n, workers, workers, func(lo, hi int) {
					for i := lo; i < hi; i++ {
						atomic.AddInt32(&hits[off+i], 1)
					}
				})
			}
			t0 := time.Now()
			job(0)
			for {
				parked := 0
				for _, wk := range p.workers {
					if wk.state.Load() == stateParked {
						parked++
					}
				}
				since := time.Since(t0)
				if parked > 0 && since < s {
					t.Fatalf("%d workers parked %v after the job opened, before the spin of %v", parked, since, s)
				}
				if parked == len(p.workers) {
					break
				}
				if since > s+5*time.Second {
					t.Fatalf("%d of %d workers still polling %v after the job opened (spin %v)", len(p.workers)-parked, len(p.workers), since, s)
				}
				time.Sleep(time.Millisecond)
			}
			job(n)
			for i, h := range hits {
				if h != 1 {
					t.Fatalf("index %d visited %d times, want 1", i, h)
				}
			}
		})
	}
}
