package gemm

import (
	"sync"
	"unsafe"

	"github.com/flashgorgon/flashgorgon/internal/kernels/vec"
	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// Depth-split products. Gemm splits a product over the cores by strips of
// rows or columns of C, which leaves most cores idle when C is small and
// the depth long: the weight gradients of a network, op(A)ᵀ·op(B) with
// C [In, Out] over a depth of batch·context rows (C 64×256 over a depth of
// 2048: four strips of 64 columns, four cores). GemmDepth also cuts such a
// product along the depth:
//
//	C = Σ_p op(A)[:, K_p]·op(B)[K_p, :]      K_p = [p·k/P, (p+1)·k/P), p < P = DepthParts(m, n, k)
//
// and runs each part of each of Gemm's strips as a product of its own, part
// 0 into C and the others into scratch, then adds the parts into C in the
// order of p. P depends on the sizes (and the micro-kernel's tile) only, so
// the result has the same bits at any GOMAXPROCS (though not those of Gemm,
// which sums the depth in one chain of blocks).

// Depth-split thresholds: C of at most depthMaxOut entries that Gemm cuts
// into fewer than depthUnits strips, over a depth of at least depthMinK;
// parts of at least depthPart steps, P chosen for depthUnits cores (a
// constant, not GOMAXPROCS: the split must not depend on the machine's
// load).
const (
	depthMaxOut = 1 << 18
	depthMinK   = 1024
	depthPart   = 256
	depthUnits  = 16
)

// depthSplit returns the strips of C that Gemm would cut a product of C
// [m, n] into (rows of mr when m ≥ n, columns of nr otherwise) and the
// number of depth parts P that GemmDepth cuts each into (1: it runs Gemm).
func depthSplit[T Float](kn *kernel[T], m, n, k int) (strips, width int, rows bool, parts int) {
	mr, nr := kn.mr, kn.nr
	rows, width = m >= n, nr
	if rows {
		width = mr
		strips = (m + mr - 1) / mr
	} else {
		strips = (n + nr - 1) / nr
	}
	if m*n > depthMaxOut || k < depthMinK || strips >= depthUnits {
		return strips, width, rows, 1
	}
	// The P that finishes first on depthUnits cores, ⌈strips·P/units⌉/P
	// product-parts of time (the smallest P of a tie), if it beats the
	// strips alone (one strip-time) by a third; otherwise the partial sums
	// would cost more than they save.
	best, t := 1, 1 // time t/best
	for p := 2; p <= min(depthUnits, k/depthPart); p++ {
		if tp := (strips*p + depthUnits - 1) / depthUnits; tp*best < t*p {
			best, t = p, tp
		}
	}
	if 3*t > 2*best {
		return strips, width, rows, 1
	}
	return strips, width, rows, best
}

// DepthParts returns how many depth parts GemmDepth cuts a product of C
// [m, n] over depth k into (1: it runs Gemm).
func DepthParts[T Float](m, n, k int) int {
	_, _, _, p := depthSplit(kernelFor[T](), m, n, k)
	return p
}

// GemmDepth computes C = op(A)·op(B) (Gemm with alpha 1 and beta 0, each
// depth block summed in one chain: see the package comment), cut along
// the depth too when DepthParts(m, n, k) > 1. Arguments and errors are
// Gemm's. nn's matrix products run on it.
func GemmDepth[T Float](tA, tB bool, m, n, k int, a []T, lda int, b []T, ldb int, c []T, ldc int) error {
	if err := check(tA, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc); err != nil {
		return err
	}
	kn := chainFor[T]()
	strips, width, rows, parts := depthSplit(kn, m, n, k)
	if parts <= 1 {
		product(kn, tA, tB, m, n, k, 1, a, lda, b, ldb, 0, c, ldc)
		return nil
	}
	sp := getScratch[T]((parts - 1) * m * n)
	defer putScratch(sp)
	scratch := *sp
	// Unit u is strip u mod strips of part u / strips. Part p's depth
	// range [k0, k1) starts at row k0 of a stored [k, ·] operand (A when
	// tA, B when not tB) and at column k0 of a stored [·, k] one.
	parallel.ForDynamic(parts*strips, 1, func(lo, hi int) {
		w := getWorkspace[T]()
		defer putWorkspace(w)
		for u := lo; u < hi; u++ {
			p, s := u/strips, u%strips
			k0, k1 := p*k/parts, (p+1)*k/parts
			aOff, bOff := k0, k0*ldb
			if tA {
				aOff = k0 * lda
			}
			if tB {
				bOff = k0
			}
			dst, ld := c, ldc
			if p > 0 {
				dst, ld = scratch[(p-1)*m*n:p*m*n], n
			}
			r0, r1, c0, c1 := 0, m, 0, n
			if rows {
				r0, r1 = s*width, min((s+1)*width, m)
				if tA {
					aOff += r0
				} else {
					aOff += r0 * lda
				}
			} else {
				c0, c1 = s*width, min((s+1)*width, n)
				if tB {
					bOff += c0 * ldb
				} else {
					bOff += c0
				}
			}
			w.gemm(kn, tA, tB, r1-r0, c1-c0, k1-k0, 1, a[aOff:], lda, b[bOff:], ldb, 0, dst[r0*ld+c0:], ld)
		}
	})
	// C += part p, p = 1, …, P−1, rows of C over the cores.
	parallel.For(m, max(1, 8192/max(n, 1)), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := c[i*ldc : i*ldc+n]
			for p := 1; p < parts; p++ {
				part := scratch[(p-1)*m*n+i*n:]
				vec.Add(row, row, part[:n])
			}
		}
	})
	return nil
}

// The scratch of depth parts, reused across calls as the workspaces are:
// one pool per element size.
var scratchPools [2]sync.Pool

func scratchPool[T Float]() *sync.Pool {
	var z T
	if unsafe.Sizeof(z) == 4 {
		return &scratchPools[0]
	}
	return &scratchPools[1]
}

func getScratch[T Float](n int) *[]T {
	if p, ok := scratchPool[T]().Get().(*[]T); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	s := make([]T, n)
	return &s
}

func putScratch[T Float](p *[]T) { scratchPool[T]().Put(p) }
