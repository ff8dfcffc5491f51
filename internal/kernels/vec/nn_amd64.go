//go:build !purego

package vec

import (
	"math"

	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// The assembly of nn's kernels (nn_amd64.s), on whole vectors as the other
// kernels: n a multiple of 16 (AVX-512) or 8 (AVX2) and at least one
// vector; the column sums take a block of 4 vectors of columns (64 or 32)
// over rows ≥ 1 rows, stride elements apart. The Go wrappers below do the
// tails and the loops over rows.

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
func sumSqDevAVX512(x *float32, n int, mu float64) float64

//go:noescape
func sumSqDevAVX2(x *float32, n int, mu float64) float64

//go:noescape
func sumDotDevAVX512(gr, x *float32, n int, mu float64) (sg, sgx float64)

//go:noescape
func sumDotDevAVX2(gr, x *float32, n int, mu float64) (sg, sgx float64)

//go:noescape
func shiftScaleAVX512(dst, x *float32, n int, mu, r float64)

//go:noescape
func shiftScaleAVX2(dst, x *float32, n int, mu, r float64)

//go:noescape
func normGradRowAVX512(dst, gr, x *float32, n int, mu, a, b, c float64)

//go:noescape
func normGradRowAVX2(dst, gr, x *float32, n int, mu, a, b, c float64)

//go:noescape
func mulAddRowAVX512(dst, x, y, z *float32, n int)

//go:noescape
func mulAddRowAVX2(dst, x, y, z *float32, n int)

//go:noescape
func mulRowAVX512(dst, x, y *float32, n int)

//go:noescape
func mulRowAVX2(dst, x, y *float32, n int)

//go:noescape
func addRowAVX512(dst, x, y *float32, n int)

//go:noescape
func addRowAVX2(dst, x, y *float32, n int)

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

// adamConsts is the layout the AdamW assembly reads (offsets 8·k).
type adamConsts struct {
	b1, nb1, b2, nb2, eps, lr, keep, c1, c2 float64
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

func (v wide) sumSqDev(x *float32, n int, mu float64) float64 {
	if v {
		return sumSqDevAVX512(x, n, mu)
	}
	return sumSqDevAVX2(x, n, mu)
}

func (v wide) sumDotDev(g, x *float32, n int, mu float64) (float64, float64) {
	if v {
		return sumDotDevAVX512(g, x, n, mu)
	}
	return sumDotDevAVX2(g, x, n, mu)
}

func (v wide) shiftScale(dst, x *float32, n int, mu, r float64) {
	if v {
		shiftScaleAVX512(dst, x, n, mu, r)
		return
	}
	shiftScaleAVX2(dst, x, n, mu, r)
}

func (v wide) normGradRow(dst, g, x *float32, n int, mu, a, b, c float64) {
	if v {
		normGradRowAVX512(dst, g, x, n, mu, a, b, c)
		return
	}
	normGradRowAVX2(dst, g, x, n, mu, a, b, c)
}

func (v wide) mulAddRow(dst, x, y, z *float32, n int) {
	if v {
		mulAddRowAVX512(dst, x, y, z, n)
		return
	}
	mulAddRowAVX2(dst, x, y, z, n)
}

func (v wide) mulRow(dst, x, y *float32, n int) {
	if v {
		mulRowAVX512(dst, x, y, n)
		return
	}
	mulRowAVX2(dst, x, y, n)
}

func (v wide) addRow(dst, x, y *float32, n int) {
	if v {
		addRowAVX512(dst, x, y, n)
		return
	}
	addRowAVX2(dst, x, y, n)
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

func asmNNKernels(l isa.Level) *nnKernels32 {
	switch l {
	case isa.AVX512:
		return nnKernelsAVX512
	case isa.AVX2:
		return nnKernelsAVX2
	}
	return nil
}

// rowStats is rowStatsGo on the assembly: μ from sum, Σ(x − μ)² from
// sumSqDev, both in float64; nb is the row's vector part.
func (s wide) rowStats(x []float32, nb int, center bool, eps float64) (mu, r float64) {
	n := float64(len(x))
	if center {
		sum := sumGo(x[nb:])
		if nb > 0 {
			sum += s.sum(&x[0], nb)
		}
		mu = sum / n
	}
	var ss float64
	for _, v := range x[nb:] {
		c := float64(v) - mu
		ss += c * c
	}
	if nb > 0 {
		ss += s.sumSqDev(&x[0], nb, mu)
	}
	return mu, 1 / math.Sqrt(ss/n+eps)
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
		normRows: func(y, x []float32, d int, center bool, eps float64) {
			nb := body(d)
			for r := 0; r+d <= len(x); r += d {
				xr, yr := x[r:r+d], y[r:r+d]
				mu, inv := s.rowStats(xr, nb, center, eps)
				if nb > 0 {
					s.shiftScale(&yr[0], &xr[0], nb, mu, inv)
				}
				for j := nb; j < d; j++ {
					yr[j] = float32((float64(xr[j]) - mu) * inv)
				}
			}
		},
		normGradRows: func(dx, x, g []float32, d int, center bool, eps float64) {
			nb, n := body(d), float64(d)
			for r := 0; r+d <= len(x); r += d {
				xr, gr, dr := x[r:r+d], g[r:r+d], dx[r:r+d]
				mu, inv := s.rowStats(xr, nb, center, eps)
				var sg, sgx float64 // Σ g, Σ g·(x − μ)
				if nb > 0 {
					sg, sgx = s.sumDotDev(&gr[0], &xr[0], nb, mu)
				}
				for j := nb; j < d; j++ {
					gv := float64(gr[j])
					sg += gv
					sgx += gv * (float64(xr[j]) - mu)
				}
				// dx = r·(g − mean(g) − x̂·mean(g∘x̂)) = a·g + b·(x − μ) + c.
				mg := sg / n
				if !center {
					mg = 0
				}
				a, b, c := inv, -inv*inv*inv*sgx/n, -inv*mg
				if nb > 0 {
					s.normGradRow(&dr[0], &gr[0], &xr[0], nb, mu, a, b, c)
				}
				for j := nb; j < d; j++ {
					dr[j] = float32(a*float64(gr[j]) + b*(float64(xr[j])-mu) + c)
				}
			}
		},
		affineRows: func(y, x, gamma, beta []float32) {
			d := len(gamma)
			if gamma == nil {
				d = len(beta)
			}
			nb := body(d)
			for r := 0; r+d <= len(x); r += d {
				xr, yr := x[r:r+d], y[r:r+d]
				if nb > 0 {
					switch {
					case gamma != nil && beta != nil:
						s.mulAddRow(&yr[0], &xr[0], &gamma[0], &beta[0], nb)
					case gamma != nil:
						s.mulRow(&yr[0], &xr[0], &gamma[0], nb)
					default:
						s.addRow(&yr[0], &xr[0], &beta[0], nb)
					}
				}
				var g, b []float32
				if gamma != nil {
					g = gamma[nb:]
				}
				if beta != nil {
					b = beta[nb:]
				}
				affineRowsGo(yr[nb:], xr[nb:], g, b)
			}
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
				k := adamConsts{b1: h.Beta1, nb1: 1 - h.Beta1, b2: h.Beta2, nb2: 1 - h.Beta2, eps: h.Eps,
					lr: h.LR, keep: 1 - h.Decay, c1: h.C1, c2: h.C2}
				s.adamW(&p[0], &g[0], &m[0], &v[0], n, &k)
			}
			adamWGo(p[n:], g[n:], m[n:], v[n:], h)
		},
	}
}
