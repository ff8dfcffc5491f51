//go:build !purego

package vec

import (
	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// The assembly of nn's kernels (nn_amd64.s), on whole vectors as the other
// kernels: n a multiple of 16 (AVX-512) or 8 (AVX2) and at least one
// vector. The row kernels (norms, affine) loop over rows ≥ 1 rows of d
// entries, d such a multiple, so that a call costs one dispatch per block
// of rows; the column sums take a block of 4 vectors of columns (64 or 32)
// over rows ≥ 1 rows, stride elements apart. The Go wrappers below do the
// tails.

//go:noescape
func geluArgAVX512(dst, x *float32, n int, k, c float32)

//go:noescape
func geluArgAVX2(dst, x *float32, n int, k, c float32)

//go:noescape
func geluOutAVX512(dst, x, e *float32, n int)

//go:noescape
func geluOutAVX2(dst, x, e *float32, n int)

//go:noescape
func geluGradOutAVX512(dst, x, e, gr *float32, n int, k2, k3 float32)

//go:noescape
func geluGradOutAVX2(dst, x, e, gr *float32, n int, k2, k3 float32)

//go:noescape
func normRowsAVX512(y, x *float32, rows, d, center int, nf, eps float64)

//go:noescape
func normRowsAVX2(y, x *float32, rows, d, center int, nf, eps float64)

//go:noescape
func normGradRowsAVX512(dx, x, gr *float32, rows, d, center int, nf, eps float64)

//go:noescape
func normGradRowsAVX2(dx, x, gr *float32, rows, d, center int, nf, eps float64)

//go:noescape
func mulAddRowsAVX512(dst, x, y, z *float32, rows, d int)

//go:noescape
func mulAddRowsAVX2(dst, x, y, z *float32, rows, d int)

//go:noescape
func mulRowsAVX512(dst, x, y *float32, rows, d int)

//go:noescape
func mulRowsAVX2(dst, x, y *float32, rows, d int)

//go:noescape
func addRowsAVX512(dst, x, y *float32, rows, d int)

//go:noescape
func addRowsAVX2(dst, x, y *float32, rows, d int)

//go:noescape
func copyRowsAVX512(dst, src *float32, rows, d, ds, ss int)

//go:noescape
func copyRowsAVX2(dst, src *float32, rows, d, ds, ss int)

//go:noescape
func colSumAVX512(acc *float64, x *float32, rows, stride int)

//go:noescape
func colSumAVX2(acc *float64, x *float32, rows, stride int)

//go:noescape
func colSumProdAVX512(acc *float64, x, y *float32, rows, stride int)

//go:noescape
func colSumProdAVX2(acc *float64, x, y *float32, rows, stride int)

//go:noescape
func adamWAVX512(p, gr, m, v *float32, n int, h *adamConsts)

//go:noescape
func adamWAVX2(p, gr, m, v *float32, n int, h *adamConsts)

// adamConsts is the layout the AdamW assembly reads (offsets 8·k): the
// moments' factors, E and A of adamScalars, and 1 − Decay.
type adamConsts struct {
	b1, nb1, b2, nb2, e, a, keep float64
	tiny                         float64 // 2⁻¹²⁶: moments below it in magnitude are stored as 0
	abs                          uint64  // the mask of a float64's magnitude bits
}

func (v wide) geluArg(dst, x *float32, n int) {
	if v {
		geluArgAVX512(dst, x, n, geluK2n, geluC32)
		return
	}
	geluArgAVX2(dst, x, n, geluK2n, geluC32)
}

func (v wide) geluOut(dst, x, e *float32, n int) {
	if v {
		geluOutAVX512(dst, x, e, n)
		return
	}
	geluOutAVX2(dst, x, e, n)
}

func (v wide) geluGradOut(dst, x, e, g *float32, n int) {
	if v {
		geluGradOutAVX512(dst, x, e, g, n, geluK2, geluK3)
		return
	}
	geluGradOutAVX2(dst, x, e, g, n, geluK2, geluK3)
}

func (v wide) normRows(y, x *float32, rows, d, center int, eps float64) {
	if v {
		normRowsAVX512(y, x, rows, d, center, float64(d), eps)
		return
	}
	normRowsAVX2(y, x, rows, d, center, float64(d), eps)
}

func (v wide) normGradRows(dx, x, g *float32, rows, d, center int, eps float64) {
	if v {
		normGradRowsAVX512(dx, x, g, rows, d, center, float64(d), eps)
		return
	}
	normGradRowsAVX2(dx, x, g, rows, d, center, float64(d), eps)
}

// affineRows runs y = x·γ + β (either may be nil, not both) on rows of d.
func (v wide) affineRows(y, x, gamma, beta *float32, rows, d int) {
	switch {
	case gamma != nil && beta != nil && bool(v):
		mulAddRowsAVX512(y, x, gamma, beta, rows, d)
	case gamma != nil && beta != nil:
		mulAddRowsAVX2(y, x, gamma, beta, rows, d)
	case gamma != nil && bool(v):
		mulRowsAVX512(y, x, gamma, rows, d)
	case gamma != nil:
		mulRowsAVX2(y, x, gamma, rows, d)
	case bool(v):
		addRowsAVX512(y, x, beta, rows, d)
	default:
		addRowsAVX2(y, x, beta, rows, d)
	}
}

func (v wide) copyRows(dst, src *float32, rows, d, ds, ss int) {
	if v {
		copyRowsAVX512(dst, src, rows, d, ds, ss)
		return
	}
	copyRowsAVX2(dst, src, rows, d, ds, ss)
}

func (v wide) colSum(acc *float64, x, y *float32, rows, stride int) {
	switch {
	case bool(v) && y == nil:
		colSumAVX512(acc, x, rows, stride)
	case bool(v):
		colSumProdAVX512(acc, x, y, rows, stride)
	case y == nil:
		colSumAVX2(acc, x, rows, stride)
	default:
		colSumProdAVX2(acc, x, y, rows, stride)
	}
}

func (v wide) adamW(p, g, m, vv *float32, n int, h *adamConsts) {
	if v {
		adamWAVX512(p, g, m, vv, n, h)
		return
	}
	adamWAVX2(p, g, m, vv, n, h)
}

var (
	nnKernelsAVX512 = wide(true).nnKernels()
	nnKernelsAVX2   = wide(false).nnKernels()
)

// flag is 1 for true, 0 for false (the assembly's int flags).
func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

func asmNNKernels(l isa.Level) *nnKernels32 {
	switch l {
	case isa.AVX512:
		return nnKernelsAVX512
	case isa.AVX2:
		return nnKernelsAVX2
	}
	return nil
}

func (s wide) nnKernels() *nnKernels32 {
	w := s.width()
	body := func(n int) int { return n &^ (w - 1) } // entries done in assembly
	return &nnKernels32{
		geluArg: func(dst, x []float32) {
			n := body(len(x))
			if n > 0 {
				s.geluArg(&dst[0], &x[0], n)
			}
			geluArgGo(dst[n:], x[n:])
		},
		geluOut: func(dst, x, e []float32) {
			n := body(len(x))
			if n > 0 {
				s.geluOut(&dst[0], &x[0], &e[0], n)
			}
			geluOutGo(dst[n:], x[n:], e[n:])
		},
		geluGradOut: func(dst, x, e, g []float32) {
			n := body(len(x))
			if n > 0 {
				s.geluGradOut(&dst[0], &x[0], &e[0], &g[0], n)
			}
			geluGradOutGo(dst[n:], x[n:], e[n:], g[n:])
		},
		// Rows of a length that is not a multiple of the vector width run
		// in Go (nn's rows are multiples of 16 in practice).
		normRows: func(y, x []float32, d int, center bool, eps float64) {
			if rows := len(x) / d; rows == 0 || d%w != 0 {
				normRowsGo(y, x, d, center, eps)
			} else {
				s.normRows(&y[0], &x[0], rows, d, flag(center), eps)
			}
		},
		normGradRows: func(dx, x, g []float32, d int, center bool, eps float64) {
			if rows := len(x) / d; rows == 0 || d%w != 0 {
				normGradRowsGo(dx, x, g, d, center, eps)
			} else {
				s.normGradRows(&dx[0], &x[0], &g[0], rows, d, flag(center), eps)
			}
		},
		affineRows: func(y, x, gamma, beta []float32) {
			d := len(gamma)
			if gamma == nil {
				d = len(beta)
			}
			rows := len(x) / max(d, 1)
			if rows == 0 || d%w != 0 {
				affineRowsGo(y, x, gamma, beta)
				return
			}
			var g, b *float32
			if gamma != nil {
				g = &gamma[0]
			}
			if beta != nil {
				b = &beta[0]
			}
			s.affineRows(&y[0], &x[0], g, b, rows, d)
		},
		copyRows: func(dst, src []float32, rows, d, ds, ss int) {
			if d%w != 0 {
				copyRowsGo(dst, src, rows, d, ds, ss)
				return
			}
			s.copyRows(&dst[0], &src[0], rows, d, ds, ss)
		},
		colSums: func(acc []float64, x, y []float32, d int) {
			rows := len(x) / d
			if rows == 0 {
				return
			}
			cb := 4 * w // columns per block of the assembly
			j := 0
			for ; j+cb <= d; j += cb {
				var yj *float32
				if y != nil {
					yj = &y[j]
				}
				s.colSum(&acc[j], &x[j], yj, rows, d)
			}
			colSumsFrom(acc, x, y, d, j)
		},
		adamW: func(p, g, m, v []float32, h *AdamWStep) {
			n := body(len(p))
			if n > 0 {
				a, e := adamScalars(h)
				k := adamConsts{b1: h.Beta1, nb1: 1 - h.Beta1, b2: h.Beta2, nb2: 1 - h.Beta2, e: e, a: a, keep: 1 - h.Decay, tiny: 0x1p-126, abs: 1<<63 - 1}
				s.adamW(&p[0], &g[0], &m[0], &v[0], n, &k)
			}
			adamWGo(p[n:], g[n:], m[n:], v[n:], h)
		},
	}
}
