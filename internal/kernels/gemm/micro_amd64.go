//go:build !purego

package gemm

import (
	"unsafe"

	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// The assembly micro-kernels (micro_amd64.s); see microKernel for the
// semantics.

//go:noescape
func microS512(k, kb int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, loadC bool)

//go:noescape
func microD512(k, kb int, a *float64, rs, ps int, b *float64, bs int, c *float64, ldc int, alpha, beta float64, loadC bool)

//go:noescape
func microS256(k, kb int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, loadC bool)

//go:noescape
func microD256(k, kb int, a *float64, rs, ps int, b *float64, bs int, c *float64, ldc int, alpha, beta float64, loadC bool)

// The transposers (transpose_amd64.s, AVX): 8×8 float32 and 4×4 float64
// blocks; see transposer.

//go:noescape
func transposeS8(dst *float32, ldd int, src *float32, lds int, rows, cols int)

//go:noescape
func transposeD4(dst *float64, ldd int, src *float64, lds int, rows, cols int)

// copyRows (transpose_amd64.s, AVX) is the rowCopier.
//
//go:noescape
func copyRows(dst unsafe.Pointer, ldd int, src unsafe.Pointer, lds, rows, width int)

var (
	avx512s = &kernel[float32]{isa.AVX512, 6, 32, microS512, transposeS8, 8, copyRows, chunkPaired}
	avx512d = &kernel[float64]{isa.AVX512, 6, 16, microD512, transposeD4, 4, copyRows, chunkPaired}
	avx2s   = &kernel[float32]{isa.AVX2, 6, 16, microS256, transposeS8, 8, copyRows, chunkSingle}
	avx2d   = &kernel[float64]{isa.AVX2, 6, 8, microD256, transposeD4, 4, copyRows, chunkSingle}
)

func kernels32(l isa.Level) *kernel[float32] {
	switch l {
	case isa.AVX512:
		return avx512s
	case isa.AVX2:
		return avx2s
	}
	return generic32
}

func kernels64(l isa.Level) *kernel[float64] {
	switch l {
	case isa.AVX512:
		return avx512d
	case isa.AVX2:
		return avx2d
	}
	return generic64
}
