//go:build !purego

package gemm

import (
	"fmt"
	"os"
	"strconv"
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

// The variants of each level. AVX-512:
//
//	1  6×32 / 6×16, micro.h: 12 accumulators, even and odd depth steps
//	   in two register sets (24 in all), chunkPaired; totals on the frame
//	   unaligned. 72–86% of a Zen 5 core's peak, 42–55% of a Sapphire
//	   Rapids core's at nn's shapes.
//	2  6×32 / 6×16 generated (gen_micro.go): one chain per accumulator,
//	   chunkSingle, aligned totals, four steps a turn, edge kernels for
//	   the last rows.
//	3  8×32 / 8×16 generated: 16 accumulators; divides attention's 64 and
//	   128 rows.
//	4  12×32 / 12×16 generated: 24 accumulators, 14 loads per 24 FMAs.
//	5  14×32 / 14×16 generated: 28 accumulators.
//	6  6×64 / 6×32 generated: 24 accumulators, 10 loads per 24 FMAs.
//	7  8×32 / 8×16 as 3, prefetching B eight depth steps ahead.
//	8  12×32 / 12×16 as 4, prefetching B eight depth steps ahead.
//	9  4×64 / 4×32 generated: 16 accumulators, 8 loads per 16 FMAs.
//	10 6×64 / 6×32 as 6, each FMA broadcasting its A value from memory
//	   ({1to16}): 28 instead of 34 vector instructions per step.
//	11 12×32 / 12×16 as 4, with broadcasting FMAs.
//	12 8×32 / 8×16 as 3, with broadcasting FMAs.
//
// AVX2: 1  6×16 / 6×8, micro.h, one chain per accumulator.
var (
	variants512 = []variant{
		{"avx512v1_6x32paired",
			&kernel[float32]{level: isa.AVX512, mr: 6, nr: 32, micro: microS512, trans: transposeS8, tblock: 8, rows: copyRows, chunk: chunkPaired},
			&kernel[float64]{level: isa.AVX512, mr: 6, nr: 16, micro: microD512, trans: transposeD4, tblock: 4, rows: copyRows, chunk: chunkPaired}},
		generated512(2, 6, 2),
		generated512(3, 8, 2),
		generated512(4, 12, 2),
		generated512(5, 14, 2),
		generated512(6, 6, 4),
		prefetching512(7, 8, 2),
		prefetching512(8, 12, 2),
		generated512(9, 4, 4),
		embedding512(10, 6, 4),
		embedding512(11, 12, 2),
		embedding512(12, 8, 2),
	}
	variants256 = []variant{
		{"avx2v1_6x16",
			&kernel[float32]{level: isa.AVX2, mr: 6, nr: 16, micro: microS256, trans: transposeS8, tblock: 8, rows: copyRows, chunk: chunkSingle},
			&kernel[float64]{level: isa.AVX2, mr: 6, nr: 8, micro: microD256, trans: transposeD4, tblock: 4, rows: copyRows, chunk: chunkSingle}},
	}
)

// default512 is the number of the AVX-512 variant in use.
const default512 = 1

// VariantEnv is the environment variable that runs another AVX-512 variant
// by number (FLASHGORGON_GEMM_VARIANT=4), read at start-up: for timing a
// variant inside a whole program (cmd/cpubench). A value that names no
// variant leaves the default.
const VariantEnv = "FLASHGORGON_GEMM_VARIANT"

// selected512 is the AVX-512 variant in use (an index into variants512).
var selected512 = pick512(os.Getenv(VariantEnv))

func pick512(env string) int {
	if n, err := strconv.Atoi(env); err == nil && n >= 1 && n <= len(variants512) {
		return n - 1
	}
	return default512 - 1
}

// generated512 is variant n of AVX-512: the generated kernels of mr rows
// and nv vectors per row, with the kernels of fewer rows for the edges.
func generated512(n, mr, nv int) variant {
	s, d := gen512s[nv], gen512d[nv]
	return variant{
		fmt.Sprintf("avx512v%d_%dx%d", n, mr, nv*16),
		&kernel[float32]{level: isa.AVX512, mr: mr, nr: nv * 16, micro: s[mr-1], edge: s[:mr-1], trans: transposeS8, tblock: 8, rows: copyRows, chunk: chunkSingle},
		&kernel[float64]{level: isa.AVX512, mr: mr, nr: nv * 8, micro: d[mr-1], edge: d[:mr-1], trans: transposeD4, tblock: 4, rows: copyRows, chunk: chunkSingle},
	}
}

// prefetching512 is variant n of AVX-512: generated512's kernel of mr rows
// that also prefetches B eight depth steps ahead.
func prefetching512(n, mr, nv int) variant {
	v := generated512(n, mr, nv)
	v.name += "pf"
	v.s.micro, v.d.micro = pf512s[[2]int{mr, nv}], pf512d[[2]int{mr, nv}]
	return v
}

// embedding512 is variant n of AVX-512: generated512's kernel of mr rows
// with FMAs that broadcast A's values from memory.
func embedding512(n, mr, nv int) variant {
	v := generated512(n, mr, nv)
	v.name += "e"
	v.s.micro, v.d.micro = em512s[[2]int{mr, nv}], em512d[[2]int{mr, nv}]
	return v
}

// variants lists the variants of level l, the one in use first.
func variants(l isa.Level) []variant {
	switch l {
	case isa.AVX512:
		vs := []variant{variants512[selected512]}
		for i, v := range variants512 {
			if i != selected512 {
				vs = append(vs, v)
			}
		}
		return vs
	case isa.AVX2:
		return variants256
	}
	return []variant{genericV}
}

func kernels32(l isa.Level) *kernel[float32] { return variants(l)[0].s }
func kernels64(l isa.Level) *kernel[float64] { return variants(l)[0].d }
