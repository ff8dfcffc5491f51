package gemm

import (
	"testing"
	"time"

	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// TestPeakFMA: PeakFMA is positive where the level has an FMA loop, zero on the generic
// level, and within a factor of two of the loop timed directly on one goroutine (the same
// loop, so only the clocks and the goroutine's start differ).
func TestPeakFMA(t *testing.T) {
	loop, flops := peakLoop(isa.Get())
	got := PeakFMA(1, 20*time.Millisecond)
	if loop == nil {
		if got != 0 {
			t.Fatalf("PeakFMA on the generic level = %v, want 0", got)
		}
		return
	}
	const iters = 1 << 14
	start, n := time.Now(), 0
	for time.Since(start) < 20*time.Millisecond {
		loop(iters)
		n++
	}
	want := float64(n) * iters * float64(flops) / time.Since(start).Seconds() / 1e9
	if !(got > want/2 && got < want*2) {
		t.Errorf("PeakFMA(1) = %.1f GFLOP/s, the loop timed directly %.1f", got, want)
	}
	if PeakFMA(0, time.Millisecond) != 0 {
		t.Error("PeakFMA(0 threads) != 0")
	}
}
