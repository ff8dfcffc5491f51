package softmax

import (
	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/internal/kernels/vec"
)

// exp is the scalar float64 exponential of the package (the strided panels,
// the recurrence's rescale factors, the references): vec.ScalarExp, within
// 3 ulp of math.Exp and about twice as fast.
func exp(x float64) float64 { return vec.ScalarExp(x) }

// expShiftSum sets dst[i] = e^{x[i]−m} when dst is not nil (len(dst) =
// len(x)) and returns Σ_i e^{x[i]−m}, accumulated in float64, computing in
// float64 whatever T is: the reference implementations' exponential step.
// The op's kernels use vec.ExpShiftSum instead, which runs the row in SIMD
// and takes the shift in T.
func expShiftSum[T graph.Float](dst, x []T, m float64) float64 {
	sum := 0.0
	for i, v := range x {
		e := vec.ScalarExp(float64(v) - m)
		if dst != nil {
			dst[i] = T(e)
		}
		sum += e
	}
	return sum
}
