package gemm

import (
	"unsafe"

	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// A microKernel computes one mr×nr tile of C from depth k of a strip of
// op(A) and a strip of op(B):
//
//	t[i][j] = Σ_{p<k} a[i·rs + p·ps] · b[p·bs + j]      i < mr, j < nr
//	c[i·ldc + j] = alpha·t[i][j] + beta·c[i·ldc + j]    (alpha·t[i][j] when !loadC)
//
// summing t in chunks of kb depth steps (the package comment's scheme).
// k ≥ 1, kb ≥ 1; strides are in elements.
type microKernel[T Float] func(k, kb int, a *T, rs, ps int, b *T, bs int, c *T, ldc int, alpha, beta T, loadC bool)

// A kernel is a micro-kernel with its tile.
type kernel[T Float] struct {
	level  isa.Level
	mr, nr int
	micro  microKernel[T]
}

// The kernels in use, picked from isa.Get() at start-up.
var (
	kern32 *kernel[float32]
	kern64 *kernel[float64]
)

func init() { useLevel(isa.Get()) }

// useLevel switches the package to the kernels of level l (which this
// build and machine must support) and returns the function that switches
// back. Tests use it, before running products, to cover every level.
func useLevel(l isa.Level) (restore func()) {
	old32, old64 := kern32, kern64
	kern32, kern64 = kernels32(l), kernels64(l)
	return func() { kern32, kern64 = old32, old64 }
}

// kernelFor returns the kernel for T. A type defined on float32 or float64
// has the same layout and calling convention as it, so the kernel built for
// the underlying type serves it.
func kernelFor[T Float]() *kernel[T] {
	var z T
	if unsafe.Sizeof(z) == 4 {
		return (*kernel[T])(unsafe.Pointer(kern32))
	}
	return (*kernel[T])(unsafe.Pointer(kern64))
}

// Generic is the tile of the portable kernel.
const genMR, genNR = 4, 4

var (
	generic32 = &kernel[float32]{isa.Generic, genMR, genNR, microGo[float32]}
	generic64 = &kernel[float64]{isa.Generic, genMR, genNR, microGo[float64]}
)

// microGo is the portable micro-kernel (genMR×genNR), in the same
// accumulation scheme as the assembly ones.
func microGo[T float32 | float64](k, kb int, a *T, rs, ps int, b *T, bs int, c *T, ldc int, alpha, beta T, loadC bool) {
	as := unsafe.Slice(a, (genMR-1)*rs+(k-1)*ps+1)
	bsl := unsafe.Slice(b, (k-1)*bs+genNR)
	var tot, acc [genMR][genNR]T
	for p0 := 0; p0 < k; p0 += kb {
		acc = [genMR][genNR]T{}
		for p := p0; p < min(p0+kb, k); p++ {
			bp := bsl[p*bs : p*bs+genNR]
			for i := range genMR {
				ai := as[i*rs+p*ps]
				for j := range genNR {
					acc[i][j] += ai * bp[j]
				}
			}
		}
		for i := range genMR {
			for j := range genNR {
				tot[i][j] += acc[i][j]
			}
		}
	}
	cs := unsafe.Slice(c, (genMR-1)*ldc+genNR)
	for i := range genMR {
		row := cs[i*ldc : i*ldc+genNR]
		for j := range row {
			if loadC {
				row[j] = alpha*tot[i][j] + beta*row[j]
			} else {
				row[j] = alpha * tot[i][j]
			}
		}
	}
}
