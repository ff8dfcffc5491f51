//go:build !purego

package gemm

import (
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"github.com/flashgorgon/flashgorgon/internal/isa"
	"github.com/flashgorgon/flashgorgon/internal/kernels/vec"
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

// The transposers (AVX): 8×8 float32 blocks (vec.Transpose8, shared with
// vec.Transpose) and 4×4 float64 blocks (transpose_amd64.s); see transposer.

//go:noescape
func transposeD4(dst *float64, ldd int, src *float64, lds int, rows, cols int)

// copyRows (transpose_amd64.s, AVX) is the rowCopier.
//
//go:noescape
func copyRows(dst unsafe.Pointer, ldd int, src unsafe.Pointer, lds, rows, width int)

// copyPieces (transpose_amd64.s, AVX) is the pieceCopier.
//
//go:noescape
func copyPieces(dst unsafe.Pointer, ldd int, src unsafe.Pointer, lds, rows, pieces, width int)

//go:generate go run gen_micro.go

// The variants of each level, numbered once (numbers are not reused). Each
// was timed round-robin on the GPU machine's Xeon (Sapphire Rapids class,
// one core, BenchmarkVariantTable; percentages of the AVX-512 FMA peak loop
// measured in the same rounds, mean over attention's ten tile products and
// nn's ten products, cmd/cpubench/results/gemm-xeon-variants-run3.log) and
// on the development machine's Zen 5 (where all reach 80–90% and differ by
// a few percent):
//
//	1  6×32 / 6×16, micro.h: 12 accumulators, even and odd depth steps
//	   in two register sets (24 in all), chunkPaired; totals on the frame
//	   unaligned. Xeon 67.4%.
//	2  6×32 / 6×16 generated (gen_micro.go): one chain per accumulator,
//	   chunkSingle, aligned totals, first step then three, then four steps
//	   a turn, alpha = 1 and beta = 1 shortcuts, edge kernels for the last
//	   rows (exact, instead of recomputing a full strip). Xeon 70.5%.
//	4  12×32 / 12×16 generated: 24 accumulators, 14 loads per 24 FMAs
//	   (BLIS's Skylake-X shape). Xeon 71.5%.
//	6  6×64 / 6×32 generated: 24 accumulators, 10 loads per 24 FMAs; its
//	   nr = 64 is attention's key block and head dimension. Xeon 74.4%
//	   (76–80% on the tiles, 49–79% on nn's products); in use.
//
//	13 variant 6 with a group of row strips run column strip after column
//	   strip where a strip of packed op(B) fits in L1 (kernel.bPanel,
//	   kc = 128 in float32: depth ≤ 512), BLIS's order: the B strip is
//	   read from L1 by the group's strips and only A's mr values a depth
//	   step stream from L2, where variant 6 streams B's nr = 64 values a
//	   step from L2 (about 21 bytes a cycle at two FMAs a cycle). Zen 5,
//	   one core, nn's k = 256 products: within noise of variant 6 (its
//	   L2 keeps up), −8% on 4096×256·(1024×256)ᵀ. Not yet timed on the Xeon.
//	14 variant 4 (12×32) in that order: its B strip is 32 KiB at kc = 256
//	   too (k > 512: nn's 1024-deep and 4096-deep products), where variant
//	   13's is 64 KiB and runs in variant 6's order. Not yet timed on the
//	   Xeon.
//	15 variant 6 packing a transposed A (kernel.packAT; packABlock), as
//	   every variant did before variant 6 read it in place: on the
//	   development machine's Xeon (one core, nn's five 4096-deep weight
//	   gradients xᵀ·g) the packing pass took 4–15% of the product
//	   (copyPieces: 24-byte pieces at about 1.5 cycles a value); read in
//	   place, mr values a depth step lda apart, 256×256 ran 4–6% faster
//	   and the 1024- and 768-wide ones within ±3% (BenchmarkVariantTable,
//	   three runs; results/dev-2026-11-23-s6.md).
//	16 variant 6 packing a transposed A in the first column strip's tile
//	   (kernel.packFirst): the 6×64 kernel's packing twin copies the six
//	   values of each depth step it reads (one masked load and store) and
//	   prefetches the row's next line; the strip's other tiles read the
//	   copy. Development machine's Xeon, nn's ten weight gradients xᵀ·g
//	   over 4096 and 2048 tokens, alternating with variant 6 in one
//	   process (BenchmarkPackFirstAB, 1 and 2 cores): 0.74–1.04× variant
//	   6's rate, median 0.99 (without the prefetch 0.84–1.07×): the copy
//	   costs what the strips after the first gain. The GPU machine's
//	   Xeon, two cores: 1.02–1.13× (cmd/cpubench/results/
//	   xeon-2026-11-24-s10); the development machine, one core when it
//	   was quiet: 1.00–1.04× (eleventh session). Since then nn's products
//	   (GemmDepth, GemmBias) pack so on every variant whose tile has a
//	   twin (packingFirst); variant 16 packs so in Gemm, Workspace.Gemm
//	   and GemmChain too (attention's tiles), and is not the default.
//
//	17 8×48 / 8×32, 8×16 generated in variant 13's order (bPanel: the
//	   24 KiB B strip at kc = 128 stays in L1), each depth step
//	   prefetching the next line of A's first row into L2. Variant 6's
//	   float32 kernel runs nn's weight gradients xᵀ·g of 96 columns on it
//	   (kernel.exact, forGradient): the 256×96 head gradient was the one
//	   product of nn's fifteen at the GPT's shapes under 70% of the core
//	   peak (61%, cmd/cpubench/results/dev-2026-11-24-s14). On 6×64 its
//	   strips of xᵀ are packed by the twin for one 6×32 tile of 12
//	   accumulators; the profile: the twin's tiles at 173 GFLOP/s and the
//	   6×32 ones at 210 on one core (the twin alone, A and B in L2, 192
//	   GFLOP/s against 228 for the plain 6×64 kernel reading A in place:
//	   its masked copy and prefetch cost 15%). Development machine's
//	   Xeon, the head's eight depth parts on one goroutine (x and g from
//	   L3, GFLOP/s): 6×64 172–183, 4×96 (one strip, A in place) 177–187,
//	   8×48 in variant 6's order 186–193, in variant 13's 187–190, with
//	   the next-line prefetch 192–199; prefetching the next depth block's
//	   lines instead (PREFETCHT1 or T2 at k·ps ahead) 193–195; the
//	   product as its transpose gᵀ·x (96×256: variants 6, 4, 13, 14)
//	   169–191. With A and g in L2 (one part repeated) 6×64 reached 200
//	   and 8×48 with the prefetch 218–220: a tenth of the rate is x and g
//	   coming from L3 at 36 FLOP a byte.
//
// Dropped after the Xeon runs (the logs keep their numbers): 3 8×32
// (72.1%), 5 14×32 (71.2%), 7 and 8 the 8×32 and 12×32 prefetching B eight
// steps ahead (71.4%, 72.0%: no gain), 9 4×64 (71.8%), 10–12 6×64, 12×32,
// 8×32 with FMAs that broadcast A from memory ({1to16}: fewer instructions
// per FMA, but 62–64% on the Xeon and 8–18% slower than their twins on
// Zen 5).
//
// AVX2: 1  6×16 / 6×8, micro.h, one chain per accumulator.
var (
	variants512 = []variant{
		{1, "avx512v1_6x32paired",
			&kernel[float32]{level: isa.AVX512, mr: 6, nr: 32, micro: microS512, trans: vec.Transpose8, tblock: 8, rows: copyRows, pieces: copyPieces, chunk: chunkPaired},
			&kernel[float64]{level: isa.AVX512, mr: 6, nr: 16, micro: microD512, trans: transposeD4, tblock: 4, rows: copyRows, pieces: copyPieces, chunk: chunkPaired}},
		generated512(2, 6, 2),
		generated512(4, 12, 2),
		generated512(6, 6, 4),
		tuned(generated512(13, 6, 4), tuning{panel: true}),
		tuned(generated512(14, 12, 2), tuning{panel: true}),
		tuned(generated512(15, 6, 4), tuning{packAT: true}),
		tuned(generated512(16, 6, 4), tuning{packFirst: true}),
		tuned(generated512(17, 8, 3), tuning{panel: true}),
	}
	variants256 = []variant{
		{1, "avx2v1_6x16",
			&kernel[float32]{level: isa.AVX2, mr: 6, nr: 16, micro: microS256, trans: vec.Transpose8, tblock: 8, rows: copyRows, pieces: copyPieces, chunk: chunkSingle},
			&kernel[float64]{level: isa.AVX2, mr: 6, nr: 8, micro: microD256, trans: transposeD4, tblock: 4, rows: copyRows, pieces: copyPieces, chunk: chunkSingle}},
	}
)

// default512 is the number of the AVX-512 variant in use.
const default512 = 6

// VariantEnv is the environment variable that runs another AVX-512 variant
// by number (FLASHGORGON_GEMM_VARIANT=1), read at start-up: for timing a
// variant inside a whole program (cmd/cpubench). A value that names no
// variant leaves the default.
const VariantEnv = "FLASHGORGON_GEMM_VARIANT"

// selected512 is the AVX-512 variant in use (an index into variants512).
var selected512 = pick512(os.Getenv(VariantEnv))

func pick512(env string) int {
	want := default512
	if n, err := strconv.Atoi(env); err == nil {
		want = n
	}
	for i, v := range variants512 {
		if v.num == want {
			return i
		}
	}
	for i, v := range variants512 {
		if v.num == default512 {
			return i
		}
	}
	panic("gemm: no AVX-512 variant numbered default512")
}

// generated512 is variant n of AVX-512: the generated kernels of mr rows
// and nv vectors per row, with the kernels of fewer rows for the edges, and
// for products of fewer columns the 12-row kernels of 1 and 2 vectors per
// row narrower than nv (narrow512).
func generated512(n, mr, nv int) variant {
	s := gen512(gen512s, mr, nv, 16, vec.Transpose8, 8, narrow512(gen512s, nv, 16, vec.Transpose8, 8))
	d := gen512(gen512d, mr, nv, 8, transposeD4, 4, narrow512(gen512d, nv, 8, transposeD4, 4))
	// The packing twins, where the tile has them (nn's products use them:
	// packingFirst).
	s.packFirst, d.packFirst = pack512s[[2]int{mr, nv}], pack512d[[2]int{mr, nv}]
	// The stair kernels, where the tile has them (Workspace.GemmChainStair).
	s.stair, d.stair = stair512s[[2]int{mr, nv}], stair512d[[2]int{mr, nv}]
	// float32's 6×64 tile runs nn's weight gradients of 96 columns (or
	// any multiple of 48 that 64 does not divide) on variant 17's 8×48
	// tile (kernel.forGradient); float64's 6×32 divides 96.
	if mr == 6 && nv == 4 {
		s.exact = []*kernel[float32]{tile8x48()}
	}
	return variant{n, fmt.Sprintf("avx512v%d_%dx%d", n, mr, nv*16), s, d}
}

// tile8x48 is variant 17's float32 kernel: the 8×48 tile (its family
// prefetches A's next line: gen_micro.go) in BLIS's order where a strip of
// B fits in L1 (bPanel).
func tile8x48() *kernel[float32] {
	k := gen512(gen512s, 8, 3, 16, vec.Transpose8, 8, narrow512(gen512s, 3, 16, vec.Transpose8, 8))
	k.bPanel = bPanelBytes
	return k
}

// gen512 is the kernel of the generated family fam of mr rows and nv
// vectors (of lanes elements) per row, with the kernels of the same rows
// and one or two vectors per row, fewer than nv, for the last columns.
func gen512[T Float](fam map[int][]microKernel[T], mr, nv, lanes int, tr transposer[T], tblock int, narrow []*kernel[T]) *kernel[T] {
	k := fam[nv]
	var cols []*kernel[T]
	for _, w := range []int{1, 2} {
		if w < nv {
			cols = append(cols, gen512(fam, mr, w, lanes, tr, tblock, nil))
		}
	}
	return &kernel[T]{level: isa.AVX512, mr: mr, nr: nv * lanes, micro: k[mr-1], edge: k[:mr-1], trans: tr, tblock: tblock, rows: copyRows, pieces: copyPieces, chunk: chunkSingle, narrow: narrow, cols: cols}
}

// tuning is what a variant changes in its generated kernels' packing:
// packAT packs a transposed A (Aᵀ read in place otherwise); panel sets
// bPanel to bPanelBytes (B packed in panels of that size); packFirst packs
// a transposed A in the first column strip's tiles (kernel.firstPacks) in
// all products, not only in nn's (packingFirst).
type tuning struct{ packAT, panel, packFirst bool }

// tuned returns v with copies of its kernels changed as t says, named for
// it.
func tuned(v variant, t tuning) variant {
	s, d := *v.s, *v.d
	if t.packAT {
		s.packAT, d.packAT = true, true
		v.name += "packAT"
	}
	if t.panel {
		s.bPanel, d.bPanel = bPanelBytes, bPanelBytes
		v.name += "panel"
	}
	if t.packFirst {
		s.firstPacks, d.firstPacks = true, true
		if s.packFirst == nil || d.packFirst == nil {
			panic("gemm: no packing twin of " + v.name)
		}
		v.name += "packFirst"
	}
	v.s, v.d = &s, &d
	return v
}

// narrowRows is the row count of the narrow kernels: 12 accumulators of one
// vector (or 24 of two) keep the FMA ports' latency covered where a row
// holds one or two vectors.
const narrowRows = 12

// narrow512 returns the 12-row kernels of 1 and 2 vectors per row that are
// narrower than nv, narrowest first: the kernels of products with few
// columns (kernel.forColumns).
func narrow512[T Float](fam map[int][]microKernel[T], nv, lanes int, tr transposer[T], tblock int) []*kernel[T] {
	var ks []*kernel[T]
	for _, w := range []int{1, 2} {
		if w < nv {
			ks = append(ks, gen512(fam, narrowRows, w, lanes, tr, tblock, nil))
		}
	}
	return ks
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
