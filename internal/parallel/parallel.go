// Package parallel splits loops over independent work items across the
// machine's cores. It is the one place where the project decides how many
// goroutines a kernel may use, so ops stay free of scheduling code.
//
// The loops run on a pool of worker goroutines. A worker that has finished
// its chunks polls for the next loop for a while (the spin duration) before
// it parks; a loop that finds workers parked wakes them, which costs a
// futex wake and, on a virtual machine whose idle vCPUs sleep, the time the
// host takes to run them again. A training step is hundreds of loops a
// millisecond or so long with gaps of tens of µs between them, so the
// default spin (DefaultSpin, a few ms) keeps the workers polling through a
// whole step and parks them a few ms after the work ends. The environment
// variable FLASHGORGON_SPIN (SpinEnv), read once at start-up, sets the spin
// as a Go duration ("0" parks at once, "50µs", "5ms"), at most MaxSpin;
// Spin reports the value in force and SpinErr an unusable setting.
//
// Polling takes CPU time that other threads ready to run could use. When
// GOMAXPROCS exceeds the CPUs the process may run on (runtime.NumCPU), the
// workers themselves outnumber the cores, and the spin is cut to
// OversubscribedSpin, as libgomp cuts its spin count when its threads
// outnumber the CPUs. On a machine shared with other busy processes a short
// spin or none (FLASHGORGON_SPIN=50µs or 0) may do better too, as OpenMP's
// passive wait policy does.
package parallel

import (
	"fmt"
	"log"
	"os"
	"runtime"
	"strings"
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
// with nothing to do polls for the spin duration (see the package doc)
// before it parks, so that the many short loops of a training step do not
// each pay for waking sleeping threads. The pool serves
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

// SpinEnv is the environment variable that sets the spin duration.
const SpinEnv = "FLASHGORGON_SPIN"

// DefaultSpin is the spin duration when SpinEnv is unset: longer than a
// training step's gaps between loops and than a worker's wait for the
// slowest chunk of a loop (a ms or two at 16 cores), so that workers stay
// polling from the first loop of a step to the last, and short enough that
// idle workers stop taking CPU time soon after the work ends (at most
// DefaultSpin × workers of CPU time per stretch of work).
const DefaultSpin = 5 * time.Millisecond

// MaxSpin caps SpinEnv (the longest default of the common OpenMP runtimes,
// Intel's 200 ms), so that no setting keeps idle workers polling for long.
const MaxSpin = 200 * time.Millisecond

// OversubscribedSpin is the most a worker polls while GOMAXPROCS exceeds
// runtime.NumCPU (see the package doc): main's fixed spin before SpinEnv.
const OversubscribedSpin = 50 * time.Microsecond

// spin is how long an idle worker, and the caller waiting for the workers,
// poll before blocking (read once at start-up, see SpinEnv): thePool's.
var spin, spinErr = parseSpin(os.Getenv(SpinEnv))

// An unusable SpinEnv is said once, as the device selection says an unusable
// FLASHGORGON_DEVICE: the loops run on with DefaultSpin.
func init() {
	if spinErr != nil {
		log.Printf("flashgorgon: %v", spinErr)
	}
}

// numCPU is how many CPUs the process may run on (at start-up).
var numCPU = runtime.NumCPU()

// parseSpin reads a value of SpinEnv: empty gives DefaultSpin, a Go
// duration ≥ 0 (a bare "0" included) gives itself capped at MaxSpin;
// anything else is an error and gives DefaultSpin.
func parseSpin(env string) (time.Duration, error) {
	env = strings.TrimSpace(env)
	if env == "" {
		return DefaultSpin, nil
	}
	d, err := time.ParseDuration(env)
	if err != nil || d < 0 {
		return DefaultSpin, fmt.Errorf("parallel: %s=%q is not a duration ≥ 0 such as 0, 50µs or 5ms; spinning %v", SpinEnv, env, DefaultSpin)
	}
	return min(d, MaxSpin), nil
}

// Spin returns the spin duration in force.
func Spin() time.Duration { return spin }

// SpinErr reports an unusable SpinEnv value (the spin is then DefaultSpin),
// so that programs can say so; loops never fail over it.
func SpinErr() error { return spinErr }

// A spinning goroutine pauses for pausesPerPoll PAUSE instructions between
// polls (pause: a fraction of a µs that leaves the core's other hardware
// thread its resources, as OpenMP runtimes and Go's own spinning locks do)
// and reads the clock every pollsPerYield polls. At each reading it yields
// the processor to any other thread ready to run (yield, so that polling
// costs little where threads outnumber cores), and every goschedEvery
// readings to any other goroutine ready to run (runtime.Gosched: a worker
// polls on a P of its own, which the program's other goroutines, the
// garbage collector's included, may be waiting for).
const (
	pausesPerPoll = 16
	pollsPerYield = 16
	goschedEvery  = 64
)

// pollFor returns how long to poll for a spin of spin with procs
// goroutines' worth of processors (GOMAXPROCS) on cpus CPUs: spin, or at
// most OversubscribedSpin when procs > cpus.
func pollFor(spin time.Duration, procs, cpus int) time.Duration {
	if procs > cpus {
		return min(spin, OversubscribedSpin)
	}
	return spin
}

// poll calls ready until it reports true, and reports true, or until
// pollFor(spin, GOMAXPROCS, numCPU) has passed, and reports false.
func poll(spin time.Duration, ready func() bool) bool {
	if ready() {
		return true
	}
	if spin = pollFor(spin, Workers(), numCPU); spin <= 0 {
		return false
	}
	start := time.Now()
	for i := 1; ; i++ {
		pause(pausesPerPoll)
		if ready() {
			return true
		}
		if i%pollsPerYield == 0 {
			if time.Since(start) > spin {
				return false
			}
			if i%(pollsPerYield*goschedEvery) == 0 {
				runtime.Gosched()
			} else {
				yield()
			}
		}
	}
}

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
	spin    time.Duration // how long idle workers and the caller poll
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

var thePool = newPool(spin)

// newPool returns a pool without workers (run starts them) whose idle
// workers poll for spin before they park.
func newPool(spin time.Duration) *pool {
	return &pool{spin: spin, fin: make(chan struct{}, 1)}
}

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
	poll(p.spin, func() bool { return p.done.Load() == w })
	<-p.fin
	p.body = nil
}

// loop is a worker goroutine: it waits to be told of a job (polling, then
// parked) and takes chunks of the open job.
func (p *pool) loop(wk *worker) {
	for {
		if !wk.await(p.spin) {
			<-wk.wake
		}
		// Reset before taking chunks, so that a job opened meanwhile
		// tells this worker again.
		wk.state.Store(stateSpinning)
		p.work()
	}
}

// await polls for a job for the spin duration and reports whether one
// came; when none did it marks the worker parked (the caller then blocks on
// wake, which the next job's opening sends to) and reports false.
func (wk *worker) await(spin time.Duration) bool {
	if poll(spin, func() bool { return wk.state.Load() == stateJob }) {
		return true
	}
	// A job opened between the last poll and the mark is seen here.
	return !wk.state.CompareAndSwap(stateSpinning, stateParked)
}
