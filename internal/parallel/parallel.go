// Package parallel splits loops over independent work items across the
// machine's cores. It is the one place where the project decides how many
// goroutines a kernel may use, so ops stay free of scheduling code.
package parallel

import (
	"runtime"
	"sync"
)

// Workers returns how many goroutines For may use at most: kernels that
// size their units of work for the workers (so that each has several) ask
// here rather than reading GOMAXPROCS themselves.
func Workers() int { return runtime.GOMAXPROCS(0) }

// For calls body(lo, hi) on disjoint ranges that cover [0, n) exactly once,
// in parallel when the work is large enough to pay for goroutines.
//
// grain is the smallest number of items worth a goroutine of its own; the
// range is cut into at most GOMAXPROCS chunks of at least grain items each.
// With n <= grain (or one core) body runs once, on the calling goroutine.
// For returns when every call of body has returned.
func For(n, grain int, body func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	workers := Workers()
	if max := (n + grain - 1) / grain; workers > max {
		workers = max
	}
	if workers <= 1 {
		body(0, n)
		return
	}
	var wg sync.WaitGroup
	wg.Add(workers)
	for w := 0; w < workers; w++ {
		lo, hi := w*n/workers, (w+1)*n/workers
		go func() {
			defer wg.Done()
			body(lo, hi)
		}()
	}
	wg.Wait()
}
