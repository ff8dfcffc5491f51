// Package vec holds the vectorized row kernels of the softmax family and of
// attention's online softmax: maximum, exponentials with a shift and their
// sum, rescaling, and the row operations of the backward passes. Each
// operation is written once per instruction set, in Go assembly for AVX-512
// and for AVX2+FMA (kernels_amd64.s) and in Go for every other machine;
// internal/isa picks the variant once per process (the build tag purego or
// FLASHGORGON_SIMD=generic force the Go one).
//
// Every kernel takes rows as slices of one element type T (float32 or
// float64, or a type defined on them) and switches on it once per call. The
// float32 kernels run the assembly; the float64 ones are Go loops in every
// build, exact to a few ulp, since float64 is the gradient-check path.
//
// For rows x, y, p, q of length n and scalars of T:
//
//	Max(x)                          max_i x_i (NaN if any x_i is NaN, −Inf if n = 0)
//	ExpShiftSum(dst, x, s, m)       dst_i = e^{s·x_i − m}, returns Σ_i dst_i (float64)
//	Exp2ShiftSum(dst, x, s, m)      dst_i = 2^{s·x_i − m}, returns Σ_i dst_i
//	ExpShifts(dst, x, hi, lo)       dst_i = e^{(x_i − hi_i) − lo_i}
//	Exp2Shifts(dst, x, hi, lo)      dst_i = 2^{(x_i − hi_i) − lo_i}
//	Exp(dst, x), Exp2(dst, x)       dst_i = e^{x_i}, 2^{x_i}
//	Scale(x, c)                     x_i ← c·x_i
//	StreamScaled(dst, x, c)         dst_i = c·x_i, non-temporal stores
//	MulDiff(dst, p, q, c)           dst_i = p_i·(q_i − c)
//	MulDiffs(dst, p, q, c)          dst_i = p_i·(q_i − c_i)
//	SubScaled(dst, y, x, c)         dst_i = y_i − c·x_i
//	SubShift(dst, x, a, b)          dst_i = (x_i − a) − b, in float64, rounded once
//	Sum(x), Dot(x, y)               Σ_i x_i, Σ_i x_i·y_i (float64)
//	SoftmaxGrad(dx, y, dy)          dx = y∘(dy − Σ y∘dy)
//	LogSoftmaxGrad(dx, y, dy)       dx = dy − e^y·Σ dy (0 for a row of −Inf)
//
// and for attention's score tiles (rows × cols at stride ld, one call per
// tile, AVX-512 assembly with masked lanes):
//
//	OnlineExp2Rows(s, ld, rows, cols, n, m, sum)    m ← max(m, max of the first n[r]), s ← 2^{s − m} (0 past n[r]), sum
//	Exp2MulDiffRows(p, ds, ld, rows, cols, first, hi, lo, D)
//	                                p ← 2^{(p − hi) − lo}, ds ← p∘(ds − D) (0 before first[r])
//	Transpose(dst, src, rows, cols) dst[c·rows + r] = src[r·cols + c] (AVX 8×8 blocks)
//
// and ExpShiftSumAhead / ExpShiftSumStream, ExpShiftSum with the next row
// prefetched / the previous row streamed out, for softmax over rows that
// come from memory.
//
// Float32 exponentials take the argument a = s·x_i − m exactly (its
// rounding error e, from an FMA and Knuth's TwoSum, is carried into the
// reduction), so each result is within 2 ulp of the exact e^{s·x_i − m}
// (TestExpAccuracy measures 0.90 ulp at most) for every x_i while |s·x_i| <
// 2²³ (always for s = 1): results below half the smallest subnormal are 0
// (−Inf gives 0), above MaxFloat32 +Inf, NaN gives NaN, subnormal results
// are rounded once. The reduction is a + e = n·ln2 + r with n = round(a·log₂e),
// |r| ≤ ln2/2 and ln2 split in a 9-bit head (n·head exact) and a tail;
// e^r = 1 + r·q(r) with q of degree 5 (Chebyshev interpolation of
// (e^r − 1)/r, within 0.21 ulp); 2ⁿ is applied by VSCALEFPS (AVX-512) or
// by two exponent-bit products (AVX2). Base 2 is the same code with other
// constants. The float64 kernels compute the argument in float64 and use
// ScalarExp (table-driven, within 3 ulp of math.Exp). One exception:
// OnlineExp2Rows in AVX-512 (attention's forward) rounds its argument
// s − m once and skips the clamps a ≤ 0 makes useless (13 vector
// instructions instead of 23), and computes 2^a from a 16-entry table of
// 2^(j/16) held in one register and a degree-3 polynomial on |r| ≤ 1/32
// (within 1.1 ulp; as many µops as the degree-6 polynomial, with a
// dependency chain of 36 cycles instead of 48: see EXP2TAB512 in
// kernels_amd64.s). Attention's two tile kernels, OnlineExp2Rows and
// Exp2MulDiffRows, set float32 probabilities below 2⁻¹²⁵ to 0 at every
// level: a subnormal result or operand costs an Intel core a microcode
// assist per instruction (see OnlineExp2Rows).
//
// Sums are accumulated in float64; the float32 exponentials' sums in
// assembly first add 4 terms per lane in float32 (relative error below
// 3·2⁻²⁴ more).
//
// Slices passed together must have the same length (a shorter one panics
// with an index error); dst may be the same slice as an input where the
// function's doc says so, but must not partially overlap one.
package vec
