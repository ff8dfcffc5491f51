// Package gemm is a float32 matrix product for nn's linear layers: packed
// panels and a 6×16 register-blocked micro-kernel (AVX2 + FMA assembly on
// amd64, plain Go elsewhere or with the purego tag), split over cores with
// internal/parallel. Gonum's pure-Go Sgemm runs at a few GFLOP/s on the
// shapes of a small transformer; this runs near the FMA units' rate.
package gemm

import (
	"fmt"
	"sync"

	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// Block sizes: mr×nr is the micro-kernel's tile; kc the depth of one packed
// panel pass (a 6×kc panel of A and a kc×16 panel of B stay in L1); mc and
// nc the rows and columns one parallel work item covers.
const (
	mr = 6
	nr = 16
	kc = 256
	mc = 8 * mr
	nc = 8 * nr
)

// Sgemm computes, for row-major matrices,
//
//	C = alpha·op(A)·op(B) + beta·C      op(A) [m, k], op(B) [k, n], C [m, n]
//
// where op(X) is X, or Xᵀ when the transpose flag is set: with tA, A is
// stored [k, m]; with tB, B is stored [n, k]. lda, ldb and ldc are the row
// strides of the stored matrices. With beta = 0, C is not read (NaNs in it
// do not propagate). It panics on slices too short for the shapes, as BLAS
// does; callers check shapes first.
func Sgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: negative size m=%d n=%d k=%d", m, n, k))
	}
	if m == 0 || n == 0 {
		return
	}
	checkLen("A", a, tA, m, k, lda)
	checkLen("B", b, tB, k, n, ldb)
	checkLen("C", c, false, m, n, ldc)

	// C ← beta·C first; the kernels then only accumulate.
	if beta != 1 {
		parallel.For(m, 64, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				row := c[i*ldc : i*ldc+n]
				if beta == 0 {
					clear(row)
					continue
				}
				for j := range row {
					row[j] *= beta
				}
			}
		})
	}
	if k == 0 || alpha == 0 {
		return
	}

	rowBlocks := (m + mc - 1) / mc
	colBlocks := (n + nc - 1) / nc
	colPanels := (n + nr - 1) / nr
	bp := getFloats(kc * colPanels * nr)
	defer putFloats(bp)
	for p0 := 0; p0 < k; p0 += kc {
		depth := min(kc, k-p0)
		// op(B)[p0:p0+depth, :] is packed once for every row block.
		parallel.For(colPanels, 4, func(lo, hi int) {
			packB((*bp)[lo*nr*depth:], b, tB, ldb, p0, lo*nr, depth, min(hi*nr, n)-lo*nr)
		})
		parallel.For(rowBlocks*colBlocks, 1, func(lo, hi int) {
			buf := bufPool.Get().(*buffers)
			defer bufPool.Put(buf)
			for item := lo; item < hi; item++ {
				i0 := (item / colBlocks) * mc
				j0 := (item % colBlocks) * nc
				rows, cols := min(mc, m-i0), min(nc, n-j0)
				packA(buf.a[:], a, tA, lda, i0, p0, rows, depth, alpha)
				for ii := 0; ii < rows; ii += mr {
					ap := buf.a[ii*depth:]
					for jj := 0; jj < cols; jj += nr {
						bpan := (*bp)[(j0+jj)*depth:]
						if ii+mr <= rows && jj+nr <= cols {
							micro(depth, ap, bpan, c[(i0+ii)*ldc+j0+jj:], ldc)
							continue
						}
						// Edge tile: compute into a full scratch tile and
						// add the part that lies inside C.
						clear(buf.tile[:])
						micro(depth, ap, bpan, buf.tile[:], nr)
						for r := 0; r < min(mr, rows-ii); r++ {
							dst := c[(i0+ii+r)*ldc+j0+jj:]
							for q := 0; q < min(nr, cols-jj); q++ {
								dst[q] += buf.tile[r*nr+q]
							}
						}
					}
				}
			}
		})
	}
}

// floatPool recycles the packed-B buffers.
var floatPool sync.Pool

func getFloats(n int) *[]float32 {
	if p, ok := floatPool.Get().(*[]float32); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	s := make([]float32, n)
	return &s
}

func putFloats(p *[]float32) { floatPool.Put(p) }

type buffers struct {
	a    [mc * kc]float32
	tile [mr * nr]float32
}

var bufPool = sync.Pool{New: func() any { return new(buffers) }}

func checkLen(name string, x []float32, trans bool, rows, cols, ld int) {
	if trans {
		rows, cols = cols, rows
	}
	if ld < cols {
		panic(fmt.Sprintf("gemm: %s has %d columns but row stride %d", name, cols, ld))
	}
	if rows > 0 && len(x) < (rows-1)*ld+cols {
		panic(fmt.Sprintf("gemm: %s holds %d values, needs %d for %d×%d at stride %d", name, len(x), (rows-1)*ld+cols, rows, cols, ld))
	}
}

// packA copies alpha·op(A)[i0:i0+rows, p0:p0+depth] into panels of mr rows:
// panel q holds rows q·mr…, stored p-major (dst[q·mr·depth + p·mr + r]), the
// rows past the edge zero.
func packA(dst, a []float32, tA bool, lda, i0, p0, rows, depth int, alpha float32) {
	for q := 0; q < rows; q += mr {
		panel := dst[q*depth : q*depth+mr*depth]
		h := min(mr, rows-q)
		if tA { // A stored [k, m]: row p0+p holds op(A)[·, p]; read mr neighbours at a time
			for p := 0; p < depth; p++ {
				src := a[(p0+p)*lda+i0+q : (p0+p)*lda+i0+q+h]
				out := panel[p*mr : p*mr+mr]
				for r, v := range src {
					out[r] = alpha * v
				}
				clear(out[h:])
			}
			continue
		}
		if h == mr { // six row streams at once; the panel is written in order
			base := (i0+q)*lda + p0
			r0 := a[base : base+depth]
			r1 := a[base+lda : base+lda+depth]
			r2 := a[base+2*lda : base+2*lda+depth]
			r3 := a[base+3*lda : base+3*lda+depth]
			r4 := a[base+4*lda : base+4*lda+depth]
			r5 := a[base+5*lda : base+5*lda+depth]
			for p := range r0 {
				out := panel[p*mr : p*mr+mr : p*mr+mr]
				out[0], out[1], out[2] = alpha*r0[p], alpha*r1[p], alpha*r2[p]
				out[3], out[4], out[5] = alpha*r3[p], alpha*r4[p], alpha*r5[p]
			}
			continue
		}
		for r := 0; r < mr; r++ {
			if r >= h {
				for p := 0; p < depth; p++ {
					panel[p*mr+r] = 0
				}
				continue
			}
			i := i0 + q + r
			row := a[i*lda+p0 : i*lda+p0+depth]
			for p, v := range row {
				panel[p*mr+r] = alpha * v
			}
		}
	}
}

// packB copies op(B)[p0:p0+depth, j0:j0+cols] into panels of nr columns:
// panel q holds columns q·nr…, stored row by row (dst[q·depth + p·nr + j]),
// the columns past the edge zero.
func packB(dst, b []float32, tB bool, ldb, p0, j0, depth, cols int) {
	for q := 0; q < cols; q += nr {
		panel := dst[q*depth : q*depth+nr*depth]
		w := min(nr, cols-q)
		if tB { // B stored [n, k]: row j holds op(B)[·, j], contiguous in p
			for j := 0; j < nr; j++ {
				if j >= w {
					for p := 0; p < depth; p++ {
						panel[p*nr+j] = 0
					}
					continue
				}
				src := b[(j0+q+j)*ldb+p0 : (j0+q+j)*ldb+p0+depth]
				for p, v := range src {
					panel[p*nr+j] = v
				}
			}
			continue
		}
		for p := 0; p < depth; p++ {
			out := panel[p*nr : p*nr+nr]
			copy(out[:w], b[(p0+p)*ldb+j0+q:])
			clear(out[w:])
		}
	}
}

// microGo is the portable micro-kernel: C[0:6, 0:16] += Apanel·Bpanel.
func microGo(depth int, a, b, c []float32, ldc int) {
	var acc [mr][nr]float32
	for p := 0; p < depth; p++ {
		bp := b[p*nr : p*nr+nr]
		ap := a[p*mr : p*mr+mr]
		for r := 0; r < mr; r++ {
			ar := ap[r]
			for j := 0; j < nr; j++ {
				acc[r][j] += ar * bp[j]
			}
		}
	}
	for r := 0; r < mr; r++ {
		row := c[r*ldc : r*ldc+nr]
		for j := range row {
			row[j] += acc[r][j]
		}
	}
}
