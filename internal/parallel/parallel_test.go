package parallel

import (
	"sync/atomic"
	"testing"
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
