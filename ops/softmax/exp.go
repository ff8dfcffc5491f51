package softmax

import (
	"math"

	"github.com/flashgorgon/flashgorgon/graph"
)

// Constants of exp's reduction x = (64·k + j)·ln2/64 + r.
const (
	// expShifter is 1.5·2⁵²: adding it to a float64 of magnitude below 2⁵¹
	// rounds to an integer that sits, in two's complement, in the low bits.
	expShifter   = 0x1.8p52
	expInvLn2x64 = 64 / math.Ln2
	// ln2/64 split in two so that k·ln2Hi is exact for |k| < 2²¹:
	// ln2Hi has 21 trailing zero bits.
	expLn2HiDiv64 = 6.93147180369123816490e-01 / 64
	expLn2LoDiv64 = 1.90821492927058770002e-10 / 64
)

// exp2Table[j] holds the bits of 2^(j/64).
var exp2Table = func() (t [64]uint64) {
	for j := range t {
		t[j] = math.Float64bits(math.Exp2(float64(j) / 64))
	}
	return t
}()

// exp returns eˣ within 3 ulp of math.Exp (test: TestExpAccuracy), about
// twice as fast as math.Exp here, which matters because the kernels spend
// most of their time in it.
//
// With x·64/ln2 rounded to the integer n = 64·k + j (0 ≤ j < 64),
//
//	eˣ = 2ᵏ · 2^(j/64) · eʳ,   r = x − n·ln2/64,   |r| ≤ ln2/128,
//
// where 2^(j/64) comes from a table, 2ᵏ is added to the exponent bits, and
// eʳ − 1 is the degree-5 Taylor polynomial (truncation below 2⁻⁵⁴ on that
// interval). Arguments outside (−708, 709), whose results are subnormal or
// overflow, and NaN and ±Inf go to math.Exp.
func exp(x float64) float64 {
	if !(x > -708 && x < 709) {
		return math.Exp(x)
	}
	nf := x*expInvLn2x64 + expShifter
	n := int64(math.Float64bits(nf) - math.Float64bits(expShifter))
	nf -= expShifter
	r := x - nf*expLn2HiDiv64 - nf*expLn2LoDiv64
	p := r + r*r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120))))
	t := math.Float64frombits(exp2Table[n&63] + uint64(n>>6)<<52)
	return t + t*p
}

// expShiftSum sets dst[i] = e^{x[i]−m} when dst is not nil (len(dst) =
// len(x)) and returns Σ_i e^{x[i]−m}, accumulated in float64. It is exp
// written out inside the loop: the call is too large for Go to inline, and
// without it the iterations, which do not depend on each other, overlap in
// the CPU's pipeline (about 2× faster than calling exp here).
func expShiftSum[T graph.Float](dst, x []T, m float64) float64 {
	store := dst != nil
	sum := 0.0
	for i, v := range x {
		a := float64(v) - m
		var e float64
		if a > -708 && a < 709 {
			nf := a*expInvLn2x64 + expShifter
			n := int64(math.Float64bits(nf) - math.Float64bits(expShifter))
			nf -= expShifter
			r := a - nf*expLn2HiDiv64 - nf*expLn2LoDiv64
			p := r + r*r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120))))
			t := math.Float64frombits(exp2Table[n&63] + uint64(n>>6)<<52)
			e = t + t*p
		} else {
			e = math.Exp(a) // subnormal, 0, overflow, NaN
		}
		if store {
			dst[i] = T(e)
		}
		sum += e
	}
	return sum
}
