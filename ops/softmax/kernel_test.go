package softmax

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestForwardRowPaths runs the contiguous forward and backward on the row
// paths that the op tests' shapes do not reach: rows longer than a block
// (several blocks, rescaled by e^{m_b − m}), and softmax outputs of at least
// streamBytes (forwardStreamed: numerators in scratch, output by
// non-temporal stores, in the fused loop with the next row's exponentials
// where rows are whole vectors on cache-line boundaries, n = 2000, and
// apart where they are not, n = 4093), with fully masked, NaN and +Inf
// rows, against the float64 reference loops. The backward of rows longer
// than a block runs on the 4097-long rows.
func TestForwardRowPaths(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	// 1100×4093: float32 streamed; 2100×2000: float32 and float64 streamed
	// (a float64 block holds 2048 entries).
	for _, c := range []struct{ outer, n int }{{3, 10000}, {4, 4097}, {1100, 4093}, {2100, 2000}} {
		big := c.outer*c.n*4 >= streamBytes
		if c.outer >= 1100 && !big {
			t.Fatalf("case %v: %d bytes, below streamBytes %d: the streamed path is not tested", c, c.outer*c.n*4, streamBytes)
		}
		shape := []int{c.outer, c.n}
		x := randSlice(rng, c.outer*c.n, 3)
		// Row 0: a descending ramp whose later blocks never raise the
		// maximum, row 1 an ascending one (every block raises it); then
		// the edge rows.
		for i := range c.n {
			x[i] = 50 - float64(i)*0.01
			x[c.n+i] = -50 + float64(i)*0.01
		}
		if c.outer > 3 {
			for i := range c.n {
				x[2*c.n+i] = math.Inf(-1)
			}
			x[3*c.n+c.n/2] = math.NaN()
		}
		if c.outer > 4 {
			x[4*c.n+7] = math.Inf(1)
		}
		x32 := narrow(x)
		xw := widen(x32)
		for _, k := range kinds {
			if big && k != kindSoftmax {
				continue // only softmax has a streamed path
			}
			t.Run(fmt.Sprintf("%v/%dx%d", k, c.outer, c.n), func(t *testing.T) {
				l := layout{outer: c.outer, n: c.n, inner: 1}
				want := reference(k, xw, shape, 1)
				y32 := make([]float32, len(want))
				forward(k, x32, y32, l)
				if err := compare(y32, want, 1e-6, 1e-44); err != nil {
					t.Errorf("float32: %v", err)
				}
				y := make([]float64, len(want))
				forward(k, xw, y, l)
				if err := compare(y, want, 1e-12, 1e-300); err != nil {
					t.Errorf("float64: %v", err)
				}
				if big || c.n > 5000 {
					return // the reference backward is O(n²) per row
				}
				// The backward from the float64 forward's output.
				w := randSlice(rng, len(want), 1)
				dx := make([]float64, len(x))
				var xin []float64
				if k == kindLogSumExp {
					xin = xw
				}
				backward(k, xin, y, w, dx, l)
				if err := compare(dx, referenceGrad(k, xw, w, shape, 1), 1e-11, 1e-14); err != nil {
					t.Errorf("float64 backward: %v", err)
				}
			})
		}
	}
}
