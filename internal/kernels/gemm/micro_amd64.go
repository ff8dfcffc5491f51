//go:build !purego

package gemm

import "github.com/flashgorgon/flashgorgon/internal/isa"

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

var (
	avx512s = &kernel[float32]{isa.AVX512, 6, 32, microS512}
	avx512d = &kernel[float64]{isa.AVX512, 6, 16, microD512}
	avx2s   = &kernel[float32]{isa.AVX2, 6, 16, microS256}
	avx2d   = &kernel[float64]{isa.AVX2, 6, 8, microD256}
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
