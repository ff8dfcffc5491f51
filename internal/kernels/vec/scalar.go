package vec

import "math"

// Constants of the float64 exponential's reduction x = (64·k + j)·ln2/64 + r.
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

// ScalarExp returns eˣ within 3 ulp of math.Exp (TestScalarExp), about
// twice as fast as math.Exp: the float64 exponential of every kernel here.
//
// With x·64/ln2 rounded to the integer n = 64·k + j (0 ≤ j < 64),
//
//	eˣ = 2ᵏ · 2^(j/64) · eʳ,   r = x − n·ln2/64,   |r| ≤ ln2/128,
//
// where 2^(j/64) comes from a table, 2ᵏ is added to the exponent bits, and
// eʳ − 1 is the degree-5 Taylor polynomial (truncation below 2⁻⁵⁴ on that
// interval). Arguments outside (−708, 709), whose results are subnormal or
// overflow, and NaN and ±Inf go to math.Exp.
func ScalarExp(x float64) float64 {
	if !(x > -708 && x < 709) {
		return math.Exp(x)
	}
	n, nf := expRound(x * expInvLn2x64)
	return expScale(n, x-nf*expLn2HiDiv64-nf*expLn2LoDiv64)
}

// expRound returns y rounded to the nearest integer (|y| < 2⁵¹), as an
// int64 and as a float64, by the shifter's addition.
func expRound(y float64) (int64, float64) {
	nf := y + expShifter
	return int64(math.Float64bits(nf) - math.Float64bits(expShifter)), nf - expShifter
}

// expScale returns 2^(n/64)·eʳ for |r| ≤ ln2/128: 2^(j/64) (j = n mod 64)
// from the table with ⌊n/64⌋ added to its exponent bits, times 1 plus the
// degree-5 Taylor polynomial of eʳ − 1.
func expScale(n int64, r float64) float64 {
	p := r + r*r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120))))
	t := math.Float64frombits(exp2Table[n&63] + uint64(n>>6)<<52)
	return t + t*p
}

// scalarExp2 returns 2ˣ within 3 ulp of math.Exp2 (TestScalarExp): the
// reduction of ScalarExp in base 2, x = n/64 + f with n = round(64·x), where
// f is exact and the remaining e^{f·ln2} needs the same polynomial.
// Arguments outside (−1021, 1023), NaN and ±Inf go to math.Exp2.
func scalarExp2(x float64) float64 {
	if !(x > -1021 && x < 1023) {
		return math.Exp2(x)
	}
	n, nf := expRound(x * 64)
	return expScale(n, (x-nf/64)*math.Ln2) // x − n/64 is exact: |x| < 2¹⁰, n/64 a multiple of 2⁻⁶
}

// expShiftSumGo is the Go kernel of ExpShiftSum and Exp2ShiftSum for either
// element type: dst[i] = b^{scale·x[i] − shift} (b = e, or 2 when base2)
// with the argument computed in float64, and the float64 sum of the
// results as rounded to T. dst may be nil (sum only) or x itself. For base e
// the exponential is ScalarExp's body in the loop (its two steps inline;
// ScalarExp itself is too large for Go to inline), so that the independent
// iterations overlap in the CPU's pipeline (about 2× faster than a call).
func expShiftSumGo[T Float](dst, x []T, scale, shift float64, base2 bool) float64 {
	store := dst != nil
	if store {
		dst = dst[:len(x)]
	}
	sum := 0.0
	for i, v := range x {
		a := scale*float64(v) - shift
		var e float64
		switch {
		case base2:
			e = scalarExp2(a)
		case a > -708 && a < 709:
			n, nf := expRound(a * expInvLn2x64)
			e = expScale(n, a-nf*expLn2HiDiv64-nf*expLn2LoDiv64)
		default:
			e = math.Exp(a) // subnormal, 0, overflow, NaN
		}
		y := T(e)
		if store {
			dst[i] = y
		}
		sum += float64(y)
	}
	return sum
}
