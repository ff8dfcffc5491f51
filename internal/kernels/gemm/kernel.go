package gemm

import (
	"math"
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

// A packingKernel is a microKernel that also writes the strip of op(A) it
// reads, packed, to pa: pa[p·mr + i] = a[i·rs + p·ps] for p < k, i < mr,
// with rs = 1 (A stored transposed: the mr values of a depth step are
// contiguous). It computes the tile exactly as its microKernel twin does:
// the same FMAs in the same order, so C gets the same bits.
type packingKernel[T Float] func(k, kb int, a *T, rs, ps int, b *T, bs int, c *T, ldc int, alpha, beta T, loadC bool, pa *T)

// A transposer writes dst[p·ldd + j] = src[j·lds + p] for j < rows,
// p < cols, both multiples of its block size: packing op(B) when B is
// stored transposed.
type transposer[T Float] func(dst *T, ldd int, src *T, lds int, rows, cols int)

// A rowCopier copies rows rows of width bytes (a multiple of 8, at most
// 128) from src at a stride of lds bytes to dst at a stride of ldd bytes.
type rowCopier func(dst unsafe.Pointer, ldd int, src unsafe.Pointer, lds, rows, width int)

// A pieceCopier cuts each of rows rows of src (lds bytes apart) into
// pieces pieces of width bytes (a multiple of 8) and copies piece s of row
// p to dst + s·ldd + p·width.
type pieceCopier func(dst unsafe.Pointer, ldd int, src unsafe.Pointer, lds, rows, pieces, width int)

// A kernel is a micro-kernel with its tile, and the SIMD routines that
// pack for it (nil: plain loops do).
type kernel[T Float] struct {
	level  isa.Level
	mr, nr int
	micro  microKernel[T]
	// edge[h−1], when not nil, computes a tile of h < mr rows and nr
	// columns (the last rows of C); without it the last rows recompute a
	// full strip and keep the new rows.
	edge   []microKernel[T]
	trans  transposer[T]
	tblock int // the transposer's block size
	rows   rowCopier
	pieces pieceCopier
	chunk  func(depth int) int // the chunk length for a depth block
	// narrow lists kernels of fewer columns, nr ascending, each with its
	// own edges and packing: a product of n < nr columns runs on the
	// first whose nr ≥ n (see forColumns).
	narrow []*kernel[T]
	// exact lists kernels of other tiles for nn's weight gradients (a
	// transposed A) whose width nr does not divide and theirs does: the
	// first that divides n runs such a product (forGradient).
	exact []*kernel[T]
	// cols lists kernels of the same rows and fewer columns, nr
	// ascending, with their edges: the last column strip of a product,
	// of w < nr columns, runs on the first whose nr ≥ w (colKernel)
	// instead of a full strip computed into a scratch tile.
	cols []*kernel[T]
	// packAT: a transposed A is packed, a group of strips at a time
	// (packABlock), in products wider than two column strips; else the
	// micro-kernel reads its mr values a depth step in place, lda apart.
	packAT bool
	// packFirst, when not nil, is micro's packing twin; with firstPacks
	// set, a full strip of a transposed A read in place is packed by the
	// first column strip's tile as the micro-kernel reads it
	// (Workspace.pa), and the strip's other tiles read that copy ([kcb][mr],
	// 6 KiB at kc = 256 in float32, which stays in L1) instead of mr values
	// a depth step lda apart, each on a cache line (and often a page) of
	// its own: BLIS's packing in the first pass, where a separate packing
	// pass (packAT) waited on fetching A and cost what it gained. nn's
	// products (GemmDepth, GemmBias: nnFor) pack so on every variant whose
	// kernel has a twin; the other products only on variant 16.
	packFirst  packingKernel[T]
	firstPacks bool
	// stair, when not nil, is micro whose row i sums i more depth steps
	// (Workspace.GemmChainStair).
	stair microKernel[T]
	// bPanel: a group of row strips runs column strip after column strip
	// when a strip of the packed op(B) block is at most bPanel bytes
	// (block; 0: row strip after row strip).
	bPanel int
}

// colKernel returns the kernel of kn.mr rows for a column strip of w < nr
// columns: the narrowest of kn.cols that holds them, or kn.
func (kn *kernel[T]) colKernel(w int) *kernel[T] {
	for _, x := range kn.cols {
		if w <= x.nr {
			return x
		}
	}
	return kn
}

// forColumns returns the kernel for a product of n columns: kn, or, when
// n < kn.nr, the narrowest of kn.narrow that holds n columns in one strip.
// A 6×64 tile on a product of 16 columns would compute four times the
// products it keeps (ops/attention's O += P·V and dQ, dK, dV products have
// n = d: 16 and 32 in examples/gpt), into a scratch tile copied out after.
// The narrow kernels sum in the same scheme (chunks, four totals), so the
// choice changes the speed only, not the error bounds.
func (kn *kernel[T]) forColumns(n int) *kernel[T] {
	if n < kn.nr {
		for _, x := range kn.narrow {
			if n <= x.nr {
				return x
			}
		}
	}
	return kn
}

// forGradient returns the kernel for nn's product (GemmDepth) of n
// columns reading A transposed when tA: kn.forColumns(n), or, for a
// transposed A, n ≥ nr and n not a multiple of nr, the first of kn.exact
// whose nr divides n. The 96-wide head's gradient xᵀ·g [256, 96] on the
// 6×64 tile runs 64 columns on it and 32 on a 6×32 tile of 12
// accumulators, and packs each strip of xᵀ (the packing twin) for that one
// narrow tile; on the 8×48 tile (variant 17's) it is two full strips
// reading xᵀ in place, column strip after column strip over groups of row
// strips, the 24 KiB strip of g staying in L1 (kernel.bPanel). Development
// machine's Xeon: see variant 17 in micro_amd64.go; a 96-wide product with
// A not transposed (the head's x·W: 4096×256 by a packed 256×96 W) ran
// as fast on 8×48 as on 6×64 and stays there. The exact kernels sum as
// kn does (chained copies them: one chain per depth block in nn's
// products), so the error bounds are those of kn's products.
func (kn *kernel[T]) forGradient(tA bool, n int) *kernel[T] {
	if tA && n >= kn.nr && n%kn.nr != 0 {
		for _, x := range kn.exact {
			if n%x.nr == 0 {
				return x
			}
		}
	}
	return kn.forColumns(n)
}

// edgeKernel returns the kernel of h < mr rows, or nil.
func (kn *kernel[T]) edgeKernel(h int) microKernel[T] {
	if h < 1 || h > len(kn.edge) {
		return nil
	}
	return kn.edge[h-1]
}

// A variant is a pair of float32 and float64 kernels of one level and one
// register tile shape, numbered within its level (llm.c's dev/cuda style:
// a variant stays while it teaches something). Every variant is tested;
// the package runs one per level (selected in micro_amd64.go).
type variant struct {
	num  int // its number within the level
	name string
	s    *kernel[float32]
	d    *kernel[float64]
}

// The kernels in use, picked from isa.Get() at start-up: kern32 and
// kern64 sum in chunks (Gemm, Workspace.Gemm), chain32 and chain64 are the
// same kernels summing each depth block in one chain (Workspace.GemmChain:
// see the package comment), nn32 and nn64 those chained kernels packing a
// transposed A in the first column strip's tiles where they have a twin
// (GemmDepth, GemmBias: nn's products).
var (
	kern32  *kernel[float32]
	kern64  *kernel[float64]
	chain32 *kernel[float32]
	chain64 *kernel[float64]
	nn32    *kernel[float32]
	nn64    *kernel[float64]
)

func init() { useLevel(isa.Get()) }

// use switches the package to the kernels s and d and returns the
// function that switches back.
func use(s *kernel[float32], d *kernel[float64]) (restore func()) {
	old32, old64, oldc32, oldc64, oldn32, oldn64 := kern32, kern64, chain32, chain64, nn32, nn64
	kern32, kern64, chain32, chain64 = s, d, chained(s), chained(d)
	nn32, nn64 = packingFirst(chain32), packingFirst(chain64)
	return func() {
		kern32, kern64, chain32, chain64, nn32, nn64 = old32, old64, oldc32, oldc64, oldn32, oldn64
	}
}

// useLevel switches the package to the kernels of level l (which this
// build and machine must support) and returns the function that switches
// back. Tests use it, before running products, to cover every level.
func useLevel(l isa.Level) (restore func()) { return use(kernels32(l), kernels64(l)) }

// useVariant switches the package to variant v's kernels and returns the
// function that switches back (tests and benchmarks).
func useVariant(v variant) (restore func()) { return use(v.s, v.d) }

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

// chainFor is kernelFor's kernel summing each depth block in one chain.
func chainFor[T Float]() *kernel[T] {
	var z T
	if unsafe.Sizeof(z) == 4 {
		return (*kernel[T])(unsafe.Pointer(chain32))
	}
	return (*kernel[T])(unsafe.Pointer(chain64))
}

// nnFor is chainFor's kernel packing a transposed A in the first column
// strip's tiles where it has a packing twin: the kernel of nn's products.
func nnFor[T Float]() *kernel[T] {
	var z T
	if unsafe.Sizeof(z) == 4 {
		return (*kernel[T])(unsafe.Pointer(nn32))
	}
	return (*kernel[T])(unsafe.Pointer(nn64))
}

// packingFirst returns kn packing a transposed A with its twin
// (kernel.firstPacks) where it has one, else kn.
//
// nn's weight gradients xᵀ·g (GemmDepth over 4096 tokens) on the GPU
// machine's Xeon, two cores: 1.02–1.13× faster with it than reading Aᵀ in
// place in every tile (BenchmarkPackFirstAB, variant 16 against variant 6,
// alternating in one process; cmd/cpubench/results/xeon-2026-11-24-s10);
// on the development machine's Xeon 1.00–1.04× at one core when it was
// quiet (eleventh session). Attention's tile products keep reading it in
// place (variant 6's Gemm and GemmChain): their strips of Aᵀ are a few
// KiB already in L1, and their column strips mostly one (n = d ≤ 64).
func packingFirst[T Float](kn *kernel[T]) *kernel[T] {
	if kn.packFirst == nil || kn.firstPacks {
		return kn
	}
	c := *kn
	c.firstPacks = true
	return &c
}

// chained returns kn (and its narrow kernels) summing each depth block in
// one chunk: one FMA chain per accumulator along the block, no chunk
// totals to flush.
func chained[T Float](kn *kernel[T]) *kernel[T] {
	c := *kn
	c.chunk = wholeBlock
	c.narrow, c.exact = nil, nil
	for _, x := range kn.narrow {
		c.narrow = append(c.narrow, chained(x))
	}
	for _, x := range kn.exact {
		c.exact = append(c.exact, chained(x))
	}
	return &c
}

// wholeBlock is the chunk rule of one chain per depth block.
func wholeBlock(depth int) int { return depth }

// Generic is the tile of the portable kernel.
const genMR, genNR = 4, 4

var (
	generic32 = &kernel[float32]{level: isa.Generic, mr: genMR, nr: genNR, micro: microGo[float32], chunk: chunkSingle}
	generic64 = &kernel[float64]{level: isa.Generic, mr: genMR, nr: genNR, micro: microGo[float64], chunk: chunkSingle}
	genericV  = variant{1, "genericv1_4x4", generic32, generic64}
)

// microGo is the portable micro-kernel (genMR×genNR), in the same
// accumulation scheme as the assembly ones: chunk c of kb steps is summed
// alone, then added to total c mod 4; the totals are combined as a tree.
func microGo[T float32 | float64](k, kb int, a *T, rs, ps int, b *T, bs int, c *T, ldc int, alpha, beta T, loadC bool) {
	as := unsafe.Slice(a, (genMR-1)*rs+(k-1)*ps+1)
	bsl := unsafe.Slice(b, (k-1)*bs+genNR)
	var tot [4][genMR][genNR]T
	chunks := 0
	for p0 := 0; p0 < k; p0 += kb {
		var acc [genMR][genNR]T
		for p := p0; p < min(p0+kb, k); p++ {
			bp := bsl[p*bs : p*bs+genNR]
			for i := range genMR {
				ai := float64(as[i*rs+p*ps])
				for j := range genNR {
					// Fused like the assembly kernels' FMAs: a float32
					// product is exact in float64.
					acc[i][j] = T(math.FMA(ai, float64(bp[j]), float64(acc[i][j])))
				}
			}
		}
		t := &tot[chunks%4]
		for i := range genMR {
			for j := range genNR {
				t[i][j] += acc[i][j]
			}
		}
		chunks++
	}
	cs := unsafe.Slice(c, (genMR-1)*ldc+genNR)
	for i := range genMR {
		row := cs[i*ldc : i*ldc+genNR]
		for j := range row {
			v := alpha * ((tot[0][i][j] + tot[1][i][j]) + (tot[2][i][j] + tot[3][i][j]))
			if loadC {
				v += beta * row[j]
			}
			row[j] = v
		}
	}
}
