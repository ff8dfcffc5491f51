package softmax

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
)

// The fuzz targets run one op of the family, forward and backward, on a
// random shape (rank 1 … 4, each dimension 0 … 9), along a random axis
// (negative ones included), in float32 or float64, on values that the
// fuzzer controls (NaN, ±Inf, ±MaxFloat64, ±3e38, ±1e300, ±1e30, ±1e4, the
// edges of exp's range, tiny and ordinary values), and compare with
// naiveFamily, a float64 loop written here from the package documentation.
//
// What is expected, per row r = x[o, :, j] of the [Outer, N, Inner] view
// (package doc), with p the softmax, dy the upstream gradient (finite) and
// g = dy[o, j] for log-sum-exp:
//
//	row holds a NaN or a +Inf:   y = NaN in the whole row (lse NaN), dx = NaN in the whole row
//	row is only −Inf, or N = 0:  softmax 0, log-softmax −Inf, lse −Inf; dx = 0
//	otherwise, m = max_i r_i:    p_i = e^{r_i−m} / Σ_k e^{r_k−m}   (an entry of −Inf gets p = 0)
//	                             logp_i = (r_i − m) − log Σ_k e^{r_k−m},  lse = m + log Σ_k e^{r_k−m}
//	                             softmax dx_i = p_i·(dy_i − Σ_k dy_k·p_k)
//	                             log-softmax dx_i = dy_i − p_i·Σ_k dy_k
//	                             log-sum-exp dx_i = g·p_i
//
// computed in float64 whatever the dtype, where every result that
// overflows float64 (only r_i − m for r_i, m of opposite signs near
// MaxFloat64) is −Inf and a float32 result is the float64 one rounded once
// to float32 (so ±Inf where it overflows float32). A shape whose result
// has no elements must be refused by the constructor, and the ops' Do must
// still give the natural empty result (package doc, "Zero-length
// dimensions").
//
// Tolerances (per entry, want the expected value, scale the row's Σ|dy|,
// or |g| for log-sum-exp): NaN only matches NaN and ±Inf only itself;
// otherwise, in float64, forward 1e-12·|want| (+1e-300 for softmax,
// +1e-13 for the log results) and backward 1e-11·(|want| + scale); in
// float32, the package's 1e-6 relative bound (+1e-44 below float32's
// normal range, +1e-13 for the log results) forward and 1e-6·(|want| +
// scale) backward, where the error of the rounded y that the backward
// reads is bounded by a few 1e-8·scale.

func FuzzSoftmax(f *testing.F)    { fuzzFamily(f, kindSoftmax) }
func FuzzLogSoftmax(f *testing.F) { fuzzFamily(f, kindLogSoftmax) }
func FuzzLogSumExp(f *testing.F)  { fuzzFamily(f, kindLogSumExp) }

// fuzzShape packs a rank (1 + bits 0–1) and up to four dimensions (4 bits
// each from bit 2 on, taken mod 10) into the fuzzer's dims argument.
func fuzzShape(dims ...int) uint32 {
	u := uint32(len(dims) - 1)
	for i, d := range dims {
		u |= uint32(d) << (2 + 4*i)
	}
	return u
}

// value classes for the fuzzer's bytes (see decodeValue).
const (
	cNaN byte = iota
	cPosInf
	cNegInf
	cNegInf2
	cHuge30    // ±1e30·(1+u)
	cNearMax32 // ±3.4e38·u
	cHuge300   // ±1e300·(1+u): ±Inf in float32
	cMax64     // ±MaxFloat64
	cBig4      // ±1e4·(1+u)
	cTiny      // ±1e-30·u
	cExpEdge   // ±(700 + 50u): around the ends of exp's range
	cOrdinary  // this and above: [−8, 8)
)

// fv packs one fuzzer value: class c and 16 bits of payload.
func fv(c byte, payload uint16) []byte { return []byte{c, byte(payload >> 8), byte(payload)} }

func cat(parts ...[]byte) []byte {
	var r []byte
	for _, p := range parts {
		r = append(r, p...)
	}
	return r
}

func fuzzFamily(f *testing.F, k kind) {
	nan, inf, ninf := fv(cNaN, 0), fv(cPosInf, 0), fv(cNegInf, 0)
	seeds := []struct {
		dims   uint32
		axis   int8
		f32    bool
		seed   int64
		values []byte
	}{
		{fuzzShape(5), 0, false, 1, nil},
		{fuzzShape(2, 3), 1, true, 2, nil},
		{fuzzShape(3, 4, 2), -2, false, 3, nil},
		{fuzzShape(2, 3, 4, 5), 2, true, 4, nil},
		{fuzzShape(2, 0), 1, false, 5, nil},
		{fuzzShape(0, 3), 0, true, 6, nil},
		{fuzzShape(3, 0, 2), 1, false, 7, nil},
		{fuzzShape(0), 0, true, 8, nil},
		{fuzzShape(3, 3), 1, false, 9, cat(fv(cOrdinary, 0x9000), nan, fv(cOrdinary, 1), ninf, ninf, ninf, fv(cOrdinary, 2), inf, fv(cOrdinary, 3))},
		{fuzzShape(3, 3), 0, true, 10, cat(fv(cOrdinary, 0x9000), nan, fv(cOrdinary, 1), ninf, ninf, ninf, fv(cOrdinary, 2), inf, fv(cOrdinary, 3))},
		{fuzzShape(2, 4), 1, false, 11, cat(fv(cMax64, 0), fv(cMax64, 0x8000), fv(cHuge300, 7), fv(cHuge300, 0x8007), fv(cHuge30, 1), fv(cHuge30, 0x8001), fv(cNearMax32, 0x7fff), fv(cNearMax32, 0xffff))},
		{fuzzShape(2, 4), 1, true, 12, cat(fv(cMax64, 0), fv(cMax64, 0x8000), fv(cHuge300, 7), fv(cHuge300, 0x8007), fv(cHuge30, 1), fv(cHuge30, 0x8001), fv(cNearMax32, 0x7fff), fv(cNearMax32, 0xffff))},
		{fuzzShape(4, 2, 3), -1, false, 13, cat(fv(cExpEdge, 0), fv(cExpEdge, 0x8000), fv(cTiny, 5), fv(cBig4, 9), fv(cBig4, 0x8009), ninf, fv(cNegInf2, 0))},
		{fuzzShape(9, 9, 9, 9), 3, true, 14, cat(fv(cBig4, 3), ninf, nan)},
	}
	for _, s := range seeds {
		f.Add(s.dims, s.axis, s.f32, s.seed, s.values)
	}
	f.Fuzz(func(t *testing.T, dims uint32, axis int8, f32 bool, seed int64, values []byte) {
		rank := 1 + int(dims&3)
		shape := make([]int, rank)
		for i := range shape {
			shape[i] = int(dims>>(2+4*i)&15) % 10
		}
		ax := (int(axis)%(2*rank)+2*rank)%(2*rank) - rank // in [−rank, rank): a negative axis counts from the end
		a := (ax + rank) % rank
		rng := rand.New(rand.NewSource(seed))
		x := make([]float64, size(shape))
		for i := range x {
			if 3*i+2 < len(values) {
				x[i] = decodeValue(values[3*i], uint16(values[3*i+1])<<8|uint16(values[3*i+2]))
			} else {
				x[i] = rng.NormFloat64() * 3
			}
		}
		dy := make([]float64, size(outShape(k, shape, a)))
		for i := range dy {
			dy[i] = rng.NormFloat64()
		}
		name := fmt.Sprintf("%v%v axis %d", k, shape, ax)
		if f32 {
			checkFamily(t, name, k, narrow(x), narrow(dy), shape, ax)
		} else {
			checkFamily(t, name, k, x, dy, shape, ax)
		}
	})
}

// decodeValue turns a class byte and a 16-bit payload into a value (see the
// class constants); the payload's top bit is the sign of the signed classes.
func decodeValue(c byte, p uint16) float64 {
	u := float64(p&0x7fff) / 0x8000 // [0, 1)
	sign := 1.0
	if p&0x8000 != 0 {
		sign = -1
	}
	switch c % 32 {
	case cNaN:
		return math.NaN()
	case cPosInf:
		return math.Inf(1)
	case cNegInf, cNegInf2:
		return math.Inf(-1)
	case cHuge30:
		return sign * 1e30 * (1 + u)
	case cNearMax32:
		return sign * 3.4e38 * u
	case cHuge300:
		return sign * 1e300 * (1 + u)
	case cMax64:
		return sign * math.MaxFloat64
	case cBig4:
		return sign * 1e4 * (1 + u)
	case cTiny:
		return sign * 1e-30 * u
	case cExpEdge:
		return sign * (700 + 50*u)
	}
	return float64(int16(p)) / 4096
}

// checkFamily checks k along axis on x (shape) with upstream gradient dy:
// the constructor accepts it exactly when the result has elements; the
// forward op's Do gives naiveFamily's y and leaves x alone; the backward
// op's Do, on that y, gives naiveFamily's dx.
func checkFamily[T graph.Float](t *testing.T, name string, k kind, x, dy []T, shape []int, axis int) {
	t.Helper()
	a := (axis + len(shape)) % len(shape)
	out := outShape(k, shape, a)
	dt := tensor.Float64
	if _, ok := any(x).([]float32); ok {
		dt = tensor.Float32
	}
	name += " " + dt.String()

	// Graph-build time: refused exactly when the result has no elements.
	g := gorgonia.NewGraph()
	xn := graph.Input(g, "x", graph.NewTensor(shape, append([]T(nil), x...)))
	yn, err := apply1(k, xn, axis)
	switch empty := graph.Empty(tensor.Shape(out)); {
	case empty && err == nil:
		t.Fatalf("%s: built a result of shape %v, which has no elements", name, yn.Shape())
	case !empty && err != nil:
		t.Fatalf("%s: %v", name, err)
	case err == nil && !slices.Equal(yn.Shape(), out) && !(len(out) == 0 && yn.IsScalar()):
		t.Fatalf("%s: node shape %v, want %v", name, yn.Shape(), tensor.Shape(out))
	}

	// The ops, as a machine runs them.
	def := fwdOp{kind: k, axis: a, dims: len(shape)}
	op := graph.NewOp(def)
	xv := tensor.New(tensor.WithShape(shape...), tensor.Of(dt))
	if len(x) > 0 {
		xv = graph.NewTensor(shape, append([]T(nil), x...))
	}
	y, err := op.Do(xv)
	if err != nil {
		t.Fatalf("%s forward: %v", name, err)
	}
	if !slices.Equal(y.Shape(), out) && !(len(out) == 0 && y.Shape().IsScalar()) {
		t.Fatalf("%s forward: shape %v, want %v", name, y.Shape(), tensor.Shape(out))
	}
	if len(x) > 0 && !sameBits(dataOf[T](xv), x) {
		t.Fatalf("%s forward changed its input", name)
	}
	wantY, wantDx := naiveFamily(k, widenAny(x), widenAny(dy), shape, a)
	gotY := dataOf[T](y)
	if err := compareFamily(k, gotY, wantY, nil, forwardTol(k, dt)); err != nil {
		t.Fatalf("%s forward: %v\nx  = %v", name, err, x)
	}

	var dyv gorgonia.Value
	switch {
	case len(out) == 0:
		dyv = scalarValue(dy[0])
	case len(dy) == 0:
		dyv = tensor.New(tensor.WithShape(out...), tensor.Of(dt))
	default:
		dyv = graph.NewTensor(out, append([]T(nil), dy...))
	}
	args := []gorgonia.Value{y, dyv}
	if k == kindLogSumExp {
		args = []gorgonia.Value{xv, y, dyv}
	}
	dx, err := graph.NewOp(bwdOp(def)).Do(args...)
	if err != nil {
		t.Fatalf("%s backward: %v", name, err)
	}
	if !slices.Equal(dx.Shape(), shape) {
		t.Fatalf("%s backward: shape %v, want %v", name, dx.Shape(), tensor.Shape(shape))
	}
	scale := rowScale(k, widenAny(dy), shape, a)
	if err := compareFamily(k, dataOf[T](dx), wantDx, scale, backwardTol(dt)); err != nil {
		t.Fatalf("%s backward: %v\nx  = %v\ndy = %v", name, err, x, dy)
	}
}

// tol is a per-entry tolerance: |got − want| ≤ rel·(|want| + scale) + abs,
// where scale is the entry's row scale (backward only).
type tol struct{ rel, abs float64 }

func forwardTol(k kind, dt tensor.Dtype) tol {
	t := tol{rel: 1e-12, abs: 1e-300}
	if dt == tensor.Float32 {
		t = tol{rel: 1e-6, abs: 1e-44}
	}
	if k != kindSoftmax {
		t.abs = 1e-13
	}
	return t
}

func backwardTol(dt tensor.Dtype) tol {
	if dt == tensor.Float32 {
		return tol{rel: 1e-6, abs: 1e-44}
	}
	return tol{rel: 1e-11, abs: 1e-300}
}

// compareFamily compares got with want rounded to got's precision: NaN
// matches only NaN, ±Inf only itself, anything else within t (scale[i]
// added to |want| when scale is not nil).
func compareFamily[T graph.Float](k kind, got []T, want, scale []float64, t tol) error {
	rounded := make([]float64, len(want))
	for i, w := range want {
		rounded[i] = float64(T(w)) // the float32 result is the float64 one rounded once
	}
	return compareScaled(got, rounded, scale, t.rel, t.abs)
}

// naiveFamily computes k's output y and the gradient dx of Σ dy∘y for x of
// shape along axis (≥ 0), by the definitions in the comment at the top of
// this file, one row of the [outer, n, inner] view at a time.
func naiveFamily(k kind, x, dy []float64, shape []int, axis int) (y, dx []float64) {
	outer, n, inner := 1, shape[axis], 1
	for _, s := range shape[:axis] {
		outer *= s
	}
	for _, s := range shape[axis+1:] {
		inner *= s
	}
	if k == kindLogSumExp {
		y = make([]float64, outer*inner)
	} else {
		y = make([]float64, len(x))
	}
	dx = make([]float64, len(x))
	nan, ninf := math.NaN(), math.Inf(-1)
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			at := func(i int) int { return (o*n+i)*inner + j }
			poisoned, m := false, ninf
			for i := 0; i < n; i++ {
				switch v := x[at(i)]; {
				case math.IsNaN(v) || math.IsInf(v, 1):
					poisoned = true
				case v > m:
					m = v
				}
			}
			if poisoned || math.IsInf(m, -1) {
				fill, grad := nan, nan
				if !poisoned { // only −Inf, or no entries
					fill, grad = ninf, 0
					if k == kindSoftmax {
						fill = 0
					}
				}
				if k == kindLogSumExp {
					y[o*inner+j] = fill
				}
				for i := 0; i < n; i++ {
					if k != kindLogSumExp {
						y[at(i)] = fill
					}
					dx[at(i)] = grad
				}
				continue
			}
			sum := 0.0
			for i := 0; i < n; i++ {
				sum += math.Exp(x[at(i)] - m)
			}
			logSum := math.Log(sum)
			p := make([]float64, n)
			for i := range p {
				p[i] = math.Exp(x[at(i)]-m) / sum
			}
			switch k {
			case kindSoftmax:
				s := 0.0
				for i := range p {
					y[at(i)] = p[i]
					s += dy[at(i)] * p[i]
				}
				for i := range p {
					dx[at(i)] = p[i] * (dy[at(i)] - s)
				}
			case kindLogSoftmax:
				s := 0.0
				for i := range p {
					y[at(i)] = (x[at(i)] - m) - logSum
					s += dy[at(i)]
				}
				for i := range p {
					dx[at(i)] = dy[at(i)] - p[i]*s
				}
			case kindLogSumExp:
				y[o*inner+j] = m + logSum
				for i := range p {
					dx[at(i)] = dy[o*inner+j] * p[i]
				}
			}
		}
	}
	return y, dx
}

// rowScale gives each entry of x the size of its row's upstream gradient:
// Σ_i |dy[o,i,j]| for softmax and log-softmax, |dy[o,j]| for log-sum-exp.
func rowScale(k kind, dy []float64, shape []int, axis int) []float64 {
	outer, n, inner := 1, shape[axis], 1
	for _, s := range shape[:axis] {
		outer *= s
	}
	for _, s := range shape[axis+1:] {
		inner *= s
	}
	scale := make([]float64, outer*n*inner)
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			s := 0.0
			if k == kindLogSumExp {
				s = math.Abs(dy[o*inner+j])
			} else {
				for i := 0; i < n; i++ {
					s += math.Abs(dy[(o*n+i)*inner+j])
				}
			}
			for i := 0; i < n; i++ {
				scale[(o*n+i)*inner+j] = s
			}
		}
	}
	return scale
}

func widenAny[T graph.Float](x []T) []float64 {
	r := make([]float64, len(x))
	for i, v := range x {
		r[i] = float64(v)
	}
	return r
}

// sameBits reports whether a and b hold the same values, NaN included.
func sameBits[T graph.Float](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(a[i] != a[i] && b[i] != b[i]) {
			return false
		}
	}
	return true
}

// scalarValue wraps v as Gorgonia's scalar value of its type (what a
// machine passes for the gradient of a scalar output).
func scalarValue[T graph.Float](v T) gorgonia.Value {
	if f, ok := any(v).(float32); ok {
		return gorgonia.NewF32(f)
	}
	return gorgonia.NewF64(float64(v))
}
