package gemm

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// PeakFMA returns the float32 FMA rate in GFLOP/s of `threads` goroutines, each running the
// FMA loop of the kernels' level (isa.Get(): 12 independent FMAs on zmm or ymm registers)
// for about d: the arithmetic peak that this package's micro-kernels can approach, the
// denominator of a kernel's fraction of peak. The caller sets GOMAXPROCS ≥ threads. It
// returns 0 on the generic level, which has no FMA loop.
func PeakFMA(threads int, d time.Duration) float64 {
	loop, flops := peakLoop(isa.Get())
	if loop == nil || threads < 1 {
		return 0
	}
	const iters = 1 << 14 // ≈ 0.1 ms a call at 250 GFLOP/s
	var (
		wg    sync.WaitGroup
		calls atomic.Int64
	)
	start := time.Now()
	for range threads {
		wg.Go(func() {
			n := int64(0)
			for time.Since(start) < d {
				loop(iters)
				n++
			}
			calls.Add(n)
		})
	}
	wg.Wait()
	return float64(calls.Load()) * iters * float64(flops) / time.Since(start).Seconds() / 1e9
}
