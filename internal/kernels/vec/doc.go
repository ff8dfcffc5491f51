// Package vec holds the vectorized row kernels of the softmax family and of
// attention's online softmax: maximum, exponentials with a shift and their
// sum, rescaling, and the row operations of the backward passes. Each
// operation is written once per instruction set, in Go assembly for AVX-512
// and for AVX2+FMA and in Go for every other machine; internal/isa picks the
// variant once per process (build tag purego or FLASHGORGON_SIMD=generic
// force the Go one).
//
// Every kernel takes rows as slices of float32 or float64 (the type
// parameter T) and switches on the type once per call. The float32 kernels
// run the assembly; the float64 ones are Go loops in every build, exact to a
// few ulp, since float64 is the gradient-check path.
//
// Exponentials. For a row x of length n and float32 scalars scale, shift,
//
//	ExpShiftSum   y_i = e^{scale·x_i − shift},  returns Σ_i y_i (in float64)
//	Exp2ShiftSum  y_i = 2^{scale·x_i − shift},  returns Σ_i y_i
//
// where the argument scale·x_i − shift is taken exactly (its rounding error
// is carried into the reduction, see exp_amd64.s), so each y_i is within
// 2 ulp of the exact result for every float32 x_i: results below the
// smallest subnormal round to 0 (−Inf gives 0), results above MaxFloat32
// are +Inf, NaN gives NaN. The float32 exponential reduces the argument a
// as a = n·ln2 + r with n = round(a·log₂e), |r| ≤ ln2/2, ln2 split in a
// 9-bit head (exact products) and a tail; e^r = 1 + r·q(r) with q a degree-5
// polynomial (Chebyshev interpolation of (e^r − 1)/r, below 0.25 ulp); 2ⁿ
// is applied with VSCALEFPS (AVX-512) or with two exponent-bit multiplies
// (AVX2), so subnormal results are rounded once. The float64 kernels
// compute the argument in float64 (two roundings) and use ScalarExp.
//
// Sums (Sum, Dot, ExpShiftSum's total) are accumulated in float64; the
// float32 ExpShiftSum in assembly first adds 4 terms per lane in float32.
//
// Slices passed together must have the same length (a shorter one panics
// with an index error); dst may be the same slice as an input where the
// doc says so, but must not partially overlap one.
package vec
