package vec

import (
	"math"
	"unsafe"

	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// Float is the set of element types the kernels take (graph.Float).
type Float interface{ ~float32 | ~float64 }

// is32 tells whether T is a float32 type; the kernels switch on it once per
// call and view the slices as []float32 or []float64 (f32, f64), which
// also serves types defined on float32 and float64.
func is32[T Float]() bool {
	var z T
	return unsafe.Sizeof(z) == 4
}

func f32[T Float](x []T) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
}

func f64[T Float](x []T) []float64 {
	return unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
}

// base selects the exponential's base.
type base int

const (
	baseE base = iota // e^a
	base2             // 2^a
)

// kernels32 is one instruction set's float32 kernels. Each must accept any
// length, including 0, and any alignment; the exported functions have
// already checked that the lengths agree.
type kernels32 struct {
	max       func(x []float32) float32
	expSum    func(dst, x, next []float32, scale, shift float32, b base) float64
	expShifts func(dst, x, hi, lo []float32, b base)
	// expSumStream runs ExpShiftSumStream fused when it can (false: not
	// this length or alignment, or no assembly).
	expSumStream func(dst, x, next []float32, shift float32, out, prev []float32, c float32) (float64, bool)
	sum          func(x []float32) float64
	dot          func(x, y []float32) float64
	scale        func(x []float32, c float32)
	streamScaled func(dst, x []float32, c float32)
	mulDiff      func(dst, p, q []float32, c float32)
	mulDiffs     func(dst, p, q, c []float32)
	subScaled    func(dst, y, x []float32, c float32)
	subShift     func(dst, x []float32, a, b float64)
	// The tile kernels (tile.go), nil where they run as loops over the
	// row kernels.
	onlineExp2Rows  func(s []float32, ld, rows, cols int, n []int, m []float32, sum []float64)
	exp2MulDiffRows func(p, ds []float32, ld, rows, cols int, first []int, hi, lo, delta []float32)
	// subScaledRows runs SubScaledRows on checked arguments with rows,
	// nc ≥ 1 and some cnt[r] ≥ 1.
	subScaledRows func(c []float32, ldc, rows, nc int, coef []float32, ldcoef int, cnt []int, b []float32, ldb int)
	// transpose8 transposes the whole 8×8 blocks of a tile (nil: Go only).
	transpose8 func(dst []float32, ldd int, src []float32, lds, rows, cols int)
}

// level is the instruction set in force (isa.Get) and k32 its float32
// kernels, chosen once; tests switch both with useLevel.
var (
	level = isa.Get()
	k32   = kernelsFor(level)
)

// kernelsFor returns the float32 kernels of level l: the assembly ones
// where this build has them, the Go ones otherwise.
func kernelsFor(l isa.Level) *kernels32 {
	if k := asmKernels(l); k != nil {
		return k
	}
	return &generic32
}

// Level names the instruction set the float32 kernels run on.
func Level() isa.Level { return level }

// Max returns max_i x_i: NaN if some x_i is NaN, −Inf for an empty x.
func Max[T Float](x []T) T {
	if is32[T]() {
		return T(k32.max(f32(x)))
	}
	return T(maxGo(f64(x)))
}

// Exp sets dst_i = e^{x_i}. dst may be x.
func Exp[T Float](dst, x []T) { ExpShiftSum(dst[:len(x)], x, 1, 0) }

// Exp2 sets dst_i = 2^{x_i}. dst may be x.
func Exp2[T Float](dst, x []T) { Exp2ShiftSum(dst[:len(x)], x, 1, 0) }

// ExpShiftSum sets dst_i = e^{scale·x_i − shift} and returns Σ_i dst_i,
// accumulated in float64 (in float32 the assembly first adds groups of 4
// terms per lane in float32: a relative error below 3·2⁻²⁴ more). With dst nil it only returns the sum; dst may be
// x. This is the exponential step of a softmax row: with shift the row's
// maximum m (scale 1) every term is at most 1.
//
// In float32 the argument scale·x_i − shift is taken exactly, not rounded
// to float32 first, so y_i is within 2 ulp of e^{scale·x_i − shift} for
// every x_i (when scale·x_i does not overflow); in float64 it is computed
// in float64 and y_i is within 3 ulp of e raised to that value.
func ExpShiftSum[T Float](dst, x []T, scale, shift T) float64 {
	return expShiftSum(dst, x, nil, scale, shift, baseE)
}

// Exp2ShiftSum is ExpShiftSum in base 2: dst_i = 2^{scale·x_i − shift}.
func Exp2ShiftSum[T Float](dst, x []T, scale, shift T) float64 {
	return expShiftSum(dst, x, nil, scale, shift, base2)
}

// ExpShiftSumAhead is ExpShiftSum that meanwhile loads next, the row to be
// processed after x, from memory into the L2 cache (float32 with assembly;
// there is nothing to gain elsewhere), one cache line per vector of x: a
// softmax over rows that come from memory then overlaps each row's loads
// with the previous row's exponentials. next may be nil or shorter than x
// (no prefetch then).
func ExpShiftSumAhead[T Float](dst, x, next []T, scale, shift T) float64 {
	return expShiftSum(dst, x, next, scale, shift, baseE)
}

// ExpShiftSumStream is ExpShiftSumAhead(dst, x, next, 1, shift) together
// with StreamScaled(out, prev, c): the step of a softmax over rows from
// memory that computes the numerators of one row (dst, x) while it writes
// the previous one (out = c·prev, non-temporal) and loads the next. Where
// lengths and alignment allow (len(out) = len(x), a multiple of the vector
// width, out on a 64-byte boundary) the two run in one loop, one vector of
// each per iteration, so that the stores overlap the exponentials; otherwise
// one after the other. out may be empty (nothing to write).
func ExpShiftSumStream[T Float](dst, x, next []T, shift T, out, prev []T, c T) float64 {
	dst, prev = dst[:len(x)], prev[:len(out)]
	if is32[T]() && len(out) > 0 {
		if s, ok := k32.expSumStream(f32(dst), f32(x), f32(next), float32(shift), f32(out), f32(prev), float32(c)); ok {
			return s
		}
	}
	StreamScaled(out, prev, c)
	return ExpShiftSumAhead(dst, x, next, 1, shift)
}

func expShiftSum[T Float](dst, x, next []T, scale, shift T, b base) float64 {
	if dst != nil {
		dst = dst[:len(x)]
	}
	if is32[T]() {
		return k32.expSum(f32(dst), f32(x), f32(next), float32(scale), float32(shift), b)
	}
	return expShiftSumGo(f64(dst), f64(x), float64(scale), float64(shift), b == base2)
}

// ExpShifts sets dst_i = e^{(x_i − hi_i) − lo_i}: each entry with a shift
// of its own, given as the sum of two values of T (hi the float rounding
// of the shift, lo the rest), as in attention's backward, which
// recomputes P from the saved log-sum-exp of each query. In float32 the
// argument is taken exactly. dst may be x.
func ExpShifts[T Float](dst, x, hi, lo []T) { expShifts(dst, x, hi, lo, baseE) }

// Exp2Shifts is ExpShifts in base 2: dst_i = 2^{(x_i − hi_i) − lo_i}.
func Exp2Shifts[T Float](dst, x, hi, lo []T) { expShifts(dst, x, hi, lo, base2) }

func expShifts[T Float](dst, x, hi, lo []T, b base) {
	n := len(x)
	dst, hi, lo = dst[:n], hi[:n], lo[:n]
	if is32[T]() {
		k32.expShifts(f32(dst), f32(x), f32(hi), f32(lo), b)
		return
	}
	expShiftsGo(f64(dst), f64(x), f64(hi), f64(lo), b)
}

// Sum returns Σ_i x_i, accumulated in float64.
func Sum[T Float](x []T) float64 {
	if is32[T]() {
		return k32.sum(f32(x))
	}
	return sumGo(f64(x))
}

// Dot returns Σ_i x_i·y_i, with the products and the sum in float64.
func Dot[T Float](x, y []T) float64 {
	y = y[:len(x)]
	if is32[T]() {
		return k32.dot(f32(x), f32(y))
	}
	return dotGo(f64(x), f64(y))
}

// Scale sets x_i = c·x_i: the rescale step (a softmax row by 1/Σ, an
// attention output row by 2^{m_old − m_new}).
func Scale[T Float](x []T, c T) {
	if is32[T]() {
		k32.scale(f32(x), float32(c))
		return
	}
	scaleGo(f64(x), float64(c))
}

// StreamScaled sets dst_i = c·x_i with non-temporal stores (float32 with
// assembly; a plain loop otherwise), which write whole cache lines to
// memory without reading them first and without evicting what the caches
// hold: for outputs too large to stay in cache, written once and not read
// soon (a softmax over 64 MiB). dst must not overlap x.
func StreamScaled[T Float](dst, x []T, c T) {
	x = x[:len(dst)]
	if is32[T]() {
		k32.streamScaled(f32(dst), f32(x), float32(c))
		return
	}
	scaleToGo(f64(dst), f64(x), float64(c))
}

// MulDiff sets dst_i = p_i·(q_i − c). It is attention's dS = P∘(dP − D)
// on a row of one query (c = D) and softmax's backward dx = y∘(dy − Σ y∘dy)
// (c = Dot(y, dy)). dst may be p or q.
func MulDiff[T Float](dst, p, q []T, c T) { pairScalar(dst, p, q, c, k32.mulDiff, mulDiffGo) }

// MulDiffs sets dst_i = p_i·(q_i − c_i): dS = P∘(dP − D) on a transposed
// tile row (one key, many queries, each with its D). dst may be p or q.
func MulDiffs[T Float](dst, p, q, c []T) {
	n := len(dst)
	p, q, c = p[:n], q[:n], c[:n]
	if is32[T]() {
		k32.mulDiffs(f32(dst), f32(p), f32(q), f32(c))
		return
	}
	mulDiffsGo(f64(dst), f64(p), f64(q), f64(c))
}

// SubScaled sets dst_i = y_i − c·x_i (one rounding in float32, where it
// is a fused multiply-add). dst may be x or y.
func SubScaled[T Float](dst, y, x []T, c T) { pairScalar(dst, y, x, c, k32.subScaled, subScaledGo) }

// pairScalar runs the float32 kernel k or the float64 one g on dst, a and b
// cut to len(dst), and the scalar c: the dispatch of the elementwise
// kernels of two vectors and a scalar (MulDiff, SubScaled).
func pairScalar[T Float](dst, a, b []T, c T, k func(dst, a, b []float32, c float32), g func(dst, a, b []float64, c float64)) {
	n := len(dst)
	a, b = a[:n], b[:n]
	if is32[T]() {
		k(f32(dst), f32(a), f32(b), float32(c))
		return
	}
	g(f64(dst), f64(a), f64(b), float64(c))
}

// SubShift sets dst_i = (x_i − a) − b computed in float64 and rounded once
// to T: log-softmax's y = (x − m) − log Σ, where a float32 shift would
// lose the small differences next to a large maximum. dst may be x.
func SubShift[T Float](dst, x []T, a, b float64) {
	dst = dst[:len(x)]
	if is32[T]() {
		k32.subShift(f32(dst), f32(x), a, b)
		return
	}
	subShiftGo(f64(dst), f64(x), a, b)
}

// SoftmaxGrad sets dx = y∘(dy − Σ_i y_i·dy_i), the gradient of softmax at
// its output y for the upstream gradient dy (one row). dx may be y or dy.
func SoftmaxGrad[T Float](dx, y, dy []T) {
	MulDiff(dx, y, dy, T(Dot(y, dy)))
}

// LogSoftmaxGrad sets dx = dy − e^y·Σ_i dy_i, the gradient of log-softmax at
// its output y for the upstream gradient dy (one row). A row with every y_i
// = −Inf (a fully masked row) gets dx = 0. dx may be y but not dy.
func LogSoftmaxGrad[T Float](dx, y, dy []T) {
	n := len(y)
	dx, dy = dx[:n], dy[:n]
	if n > 0 && math.IsInf(float64(Max(y)), -1) {
		clear(dx)
		return
	}
	s := Sum(dy)
	Exp(dx, y)
	SubScaled(dx, dy, dx, T(s))
}
