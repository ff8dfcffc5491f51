// Package parallel splits loops over independent work items across the
// machine's cores. It is the one place where the project decides how many
// goroutines a kernel may use, so ops stay free of scheduling code.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Workers returns how many goroutines For may use at most: kernels that
// size their units of work for the workers (so that each has several) ask
// here rather than reading GOMAXPROCS themselves.
func Workers() int { return runtime.GOMAXPROCS(0) }

// For calls body(lo, hi) on disjoint ranges that cover [0, n) exactly once,
// in parallel when the work is large enough to pay for goroutines.
//
// grain is the smallest number of items worth a goroutine of its own; the
// range is cut into w = min(GOMAXPROCS, ⌈n/grain⌉) chunks, chunk i being
// [i·n/w, (i+1)·n/w): the split depends on n, grain and GOMAXPROCS only.
// With w = 1 body runs once, on the calling goroutine. For returns when
// every call of body has returned.
//
// The chunks are run by the calling goroutine and a pool of worker
// goroutines, each taking the next chunk not yet taken until none is left
// (so a worker that the OS has not scheduled yet delays nobody). A worker
// with nothing to do polls for a short while (spinFor) before it parks, so
// that the many short loops of a training step (thousands of elements each
// at 16 cores) do not each pay for waking sleeping threads. The pool serves
// one For at a time; a For that finds it busy (one called from inside a
// body, or from another goroutine at the same time) starts goroutines of
// its own.
func For(n, grain int, body func(lo, hi int)) { forChunks(n, grain, 1, body) }

// Balance is how many chunks per worker ForDynamic cuts a loop into.
const Balance = 4

// ForDynamic calls body(lo, hi) on disjoint ranges that cover [0, n)
// exactly once, as For does, but cuts the range into up to Balance chunks
// per worker, c = min(Balance·GOMAXPROCS, ⌈n/grain⌉) chunks [i·n/c,
// (i+1)·n/c), which the workers claim one at a time as they finish: a core
// that starts late or runs slow (another process's thread on it, a sibling
// hyperthread, a worker woken late) then delays the loop by one small chunk,
// not by its whole share. For long loops of many equal items (the row
// strips of a large matrix product); each chunk should be worth several µs.
// The split depends on n, grain and GOMAXPROCS only.
func ForDynamic(n, grain int, body func(lo, hi int)) { forChunks(n, grain, Balance, body) }

// forChunks is For (perWorker 1) and ForDynamic (perWorker Balance): body over
// [0, n) in min(perWorker·GOMAXPROCS, ⌈n/grain⌉) chunks, on the pool when it
// is free, else on goroutines of its own (one chunk each, as For).
func forChunks(n, grain, perWorker int, body func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	workers := Workers()
	chunks := min(perWorker*workers, (n+grain-1)/grain)
	workers = min(workers, chunks)
	if workers <= 1 {
		body(0, n)
		return
	}
	if thePool.mu.TryLock() {
		defer thePool.mu.Unlock()
		thePool.run(n, chunks, workers, body)
		return
	}
	spawn(n, workers, body)
}

// spawn runs body over [0, n) in workers chunks on new goroutines and the
// caller: For's path when the pool is busy.
func spawn(n, workers int, body func(lo, hi int)) {
	var wg sync.WaitGroup
	wg.Add(workers - 1)
	for w := 1; w < workers; w++ {
		lo, hi := w*n/workers, (w+1)*n/workers
		go func() {
			defer wg.Done()
			body(lo, hi)
		}()
	}
	body(0, n/workers)
	wg.Wait()
}

// spinFor is how long an idle worker, and the caller waiting for the
// workers, poll before blocking; every pollsPerYield polls they yield the
// processor to any other thread ready to run (yield), so that polling costs
// little where threads outnumber cores.
const (
	spinFor       = 50 * time.Microsecond
	pollsPerYield = 16
)

// Worker states.
const (
	stateSpinning int32 = iota // polling for a job
	stateParked                // blocked on wake
	stateJob                   // told that a job is open
)

// A job's claim word: its generation, its number of chunks w and the next
// chunk to take, so that one compare-and-swap takes a chunk of the job
// that is open now and of no other.
const (
	claimBits = 20 // next and w: fewer than 2²⁰ chunks
	claimMask = 1<<claimBits - 1
)

// pool is the set of worker goroutines For hands chunks to; mu is held by
// the For using it.
type pool struct {
	mu      sync.Mutex
	workers []*worker
	gen     uint64
	// The open job: body over [0, n), claimed through claim; done counts
	// the finished chunks, and whoever finishes the last sends on fin.
	body  func(lo, hi int)
	n     int
	claim atomic.Uint64
	done  atomic.Int64
	fin   chan struct{}
}

// worker is one goroutine of the pool.
type worker struct {
	state atomic.Int32
	wake  chan struct{}
}

var thePool = &pool{fin: make(chan struct{}, 1)}

// run opens a job of w chunks of body over [0, n), tells workers−1 ≤ w−1
// workers, takes chunks itself and waits until every chunk is finished;
// p.mu is held.
func (p *pool) run(n, w, workers int, body func(lo, hi int)) {
	if w > claimMask {
		w = claimMask
	}
	workers = min(workers, w)
	for len(p.workers) < workers-1 {
		wk := &worker{wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, wk)
		go p.loop(wk)
	}
	p.gen++
	p.body, p.n = body, n
	p.done.Store(0)
	p.claim.Store(p.gen<<(2*claimBits) | uint64(w)<<claimBits)
	for _, wk := range p.workers[:workers-1] {
		for {
			st := wk.state.Load()
			if st == stateJob || wk.state.CompareAndSwap(stateSpinning, stateJob) {
				break
			}
			if wk.state.CompareAndSwap(stateParked, stateJob) {
				wk.wake <- struct{}{}
				break
			}
		}
	}
	// Wait for the chunks taken by workers even when one of the caller's
	// panics: they read p's job.
	defer p.wait()
	p.work()
}

// work takes chunks of the open job and runs them until none is left.
func (p *pool) work() {
	for {
		c := p.claim.Load()
		w, next := int(c>>claimBits&claimMask), int(c&claimMask)
		if next >= w {
			return
		}
		if !p.claim.CompareAndSwap(c, c+1) {
			continue
		}
		p.chunk(next, w)
	}
}

// chunk runs chunk i of w of the open job (open until the chunk is done:
// body and n are its own) and counts it done, even when body panics on the
// calling goroutine, whose wait would otherwise never end.
func (p *pool) chunk(i, w int) {
	defer func() {
		if p.done.Add(1) == int64(w) {
			p.fin <- struct{}{}
		}
	}()
	p.body(i*p.n/w, (i+1)*p.n/w)
}

// wait returns when every chunk of the open job is finished.
func (p *pool) wait() {
	w := int64(p.claim.Load() >> claimBits & claimMask)
	if p.done.Load() != w {
		start := time.Now()
		for i := 1; p.done.Load() != w; i++ {
			if i%pollsPerYield == 0 {
				if time.Since(start) > spinFor {
					break
				}
				yield()
			}
		}
	}
	<-p.fin
	p.body = nil
}

// loop is a worker goroutine: it waits to be told of a job (polling, then
// parked) and takes chunks of the open job.
func (p *pool) loop(wk *worker) {
	for {
		if !wk.await() {
			<-wk.wake
		}
		// Reset before taking chunks, so that a job opened meanwhile
		// tells this worker again.
		wk.state.Store(stateSpinning)
		p.work()
	}
}

// await polls for a job for spinFor and reports whether one came; when
// none did it marks the worker parked (the caller then blocks on wake, which
// the next job's opening sends to) and reports false.
func (wk *worker) await() bool {
	start := time.Now()
	for i := 1; ; i++ {
		if wk.state.Load() == stateJob {
			return true
		}
		if i%pollsPerYield == 0 {
			if time.Since(start) > spinFor {
				break
			}
			yield()
		}
	}
	// A job opened between the last poll and the mark is seen here.
	return !wk.state.CompareAndSwap(stateSpinning, stateParked)
}
