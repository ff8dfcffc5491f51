package gemm

import (
	"sync"
	"unsafe"

	"github.com/flashgorgon/flashgorgon/internal/kernels/vec"
	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// Depth-split products. A weight gradient of a network, C = op(A)ᵀ·op(B)
// with C [In, Out] over a depth of batch·context rows (C 256×256 over a
// depth of 4096 in examples/gpt's large model), has a small C and a long
// depth. Cut by strips of rows or columns of C, as Gemm cuts it, every
// worker's chunk reads all of the depth of the operand it does not cut: the
// packed op(B) (4 MiB at 4096×256) once per chunk of row strips, or all of
// op(A) once per chunk of column strips (packing it, on a variant that
// packs Aᵀ); and at 16 cores each worker gets a strip or two of 6 rows, too
// little C to pay for reading op(B) (2 FLOP a byte). GemmDepth cuts such a
// product along the depth instead, into P parts of which each reads only
// its rows of both operands:
//
//	C = Σ_p op(A)[:, K_p]·op(B)[K_p, :]      K_p = [p·k/P, (p+1)·k/P), p < P = DepthParts(m, n, k)
//
// and, where the cores outnumber the parts, C into a grid of blocks of
// whole strips of the kernel's tile (rows of mr, columns of nr; depthGrid).
// Each (part, block) is a product of its own, part 0 into C and the others
// into scratch; then the parts are added into C in the order of p. P
// depends on the sizes and the element type only (not GOMAXPROCS, nor the
// machine's load), and the blocks of C are whole strips that run on the
// kernels they run on in one product, so the result has the same bits at
// any GOMAXPROCS (though not those of Gemm, which chains all the depth's
// blocks through C).

// Depth-split thresholds: a depth of at least depthMinK, parts of at least
// depthMinPart steps, at most depthMaxParts of them, and their scratch
// ((P−1)·m·n elements) at most depthScratch bytes: it is written by the
// parts and read by the sum, which costs about (P−1)/k of the product
// where it stays in the cache. examples/gpt's weight gradients over 4096
// tokens in float32: C of 768 KiB and 1 MiB in two parts, 256×256 in four,
// 256×96 in eight (at 16 cores, 16 to 32 units of work: TestDepthGrid).
// Blocks of C hold at least depthBlockMin entries: a block of r×c entries
// reads r+c values a depth step for r·c FMAs (64×64: 16 FLOP a byte of
// operands, which the shared L3 still serves at 16 cores; smaller blocks
// would wait on it).
const (
	depthMinK     = 1024
	depthMinPart  = 512
	depthMaxParts = 8
	depthScratch  = 1 << 20
	depthBlockMin = 1 << 12
	addSpan       = 4096
)

// depthParts returns the number of depth parts P that GemmDepth cuts a
// product of C [m, n] over depth k into (1: it runs Gemm), for elements of
// size bytes: the largest power of two within the thresholds.
func depthParts(m, n, k, size int) int {
	if k < depthMinK || m*n == 0 {
		return 1
	}
	p := max(1, min(depthMaxParts, k/depthMinPart, 1+depthScratch/(m*n*size)))
	// A power of two: with the grid's doubling cuts, the units then
	// divide evenly among 2, 4, 8 or 16 cores (five parts on two cores
	// would leave one core a part with nothing to do).
	for p&(p-1) != 0 {
		p &= p - 1
	}
	return p
}

// DepthParts returns how many depth parts GemmDepth cuts a product of C
// [m, n] over depth k into (1: it runs Gemm).
func DepthParts[T Float](m, n, k int) int {
	var z T
	return depthParts(m, n, k, int(unsafe.Sizeof(z)))
}

// depthGrid returns the blocks of C that each depth part is cut into: br
// blocks of rows (whole strips of mr, the last one holding the edge) and bc
// of columns (strips of nr). It aims at two units (part, block) per worker,
// so that a late core holds up half a share, halving the longer side of
// the blocks (in entries) while they keep at least depthBlockMin entries
// and two strips (the last block of a side then holds a full strip beside
// the edge, so every entry runs on the kernel it runs on in one product:
// the grid changes which core computes an entry, never its sum).
func depthGrid(mr, nr, m, n, parts, workers int) (br, bc int) {
	rs, cs := (m+mr-1)/mr, (n+nr-1)/nr
	br, bc = 1, 1
	for br*bc*parts < depthUnits*workers {
		rows, cols := (m+br-1)/br, (n+bc-1)/bc
		if rows*cols < 2*depthBlockMin {
			break
		}
		switch {
		case (rows >= cols || 4*bc > cs) && 4*br <= rs:
			br *= 2
		case 4*bc <= cs:
			bc *= 2
		default:
			return br, bc
		}
	}
	return br, bc
}

// GemmDepth computes C = op(A)·op(B) (Gemm with alpha 1 and beta 0, each
// depth block summed in one chain: see the package comment), cut along
// the depth too when DepthParts(m, n, k) > 1. Arguments and errors are
// Gemm's. nn's matrix products run on it.
//
// A depth-split weight gradient C = Aᵀ·B (tA, not tB) with fewer columns
// than rows (n < m) is computed as its transpose, Cᵀ = Bᵀ·A [n, m], whose
// parts are transposed as they are summed into C (swapsDepth).
func GemmDepth[T Float](tA, tB bool, m, n, k int, a []T, lda int, b []T, ldb int, c []T, ldc int) error {
	if err := check(tA, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc); err != nil {
		return err
	}
	kn := nnFor[T]()
	parts := DepthParts[T](m, n, k)
	if parts <= 1 {
		product(kn, tA, tB, m, n, k, 1, a, lda, b, ldb, 0, c, ldc)
		return nil
	}
	size := int(unsafe.Sizeof(c[0]))
	swap := swapsDepth(tA, tB, m, n)
	// The product the parts compute: C', [pm, pn], op(A') and op(B') at
	// a', b'; C itself, or Cᵀ = Bᵀ·A (both operands stored [k, ·]: A'
	// transposed, B' not).
	pm, pn, pa, plda, pb, pldb := m, n, a, lda, b, ldb
	if swap {
		pm, pn, pa, plda, pb, pldb = n, m, b, ldb, a, lda
	}
	kn = kn.forColumns(pn)
	mr, nr := kn.mr, kn.nr
	br, bc := depthGrid(mr, nr, pm, pn, parts, parallel.Workers())
	rs, cs := (pm+mr-1)/mr, (pn+nr-1)/nr
	blocks := br * bc
	// Part p goes into scratch p−1 (part 0 into C), or, transposed, into
	// scratch p.
	first := 1
	if swap {
		first = 0
	}
	sp := getScratch[T]((parts - first) * m * n)
	defer putScratch(sp)
	scratch := *sp
	// Unit u is block u mod blocks of part u / blocks: a chunk of
	// consecutive units shares a part, whose rows of the operands its
	// blocks read. Part p's depth range [k0, k1) starts at row k0 of a
	// stored [k, ·] operand (A when tA, B when not tB) and at column k0 of
	// a stored [·, k] one; block (i, j) holds row strips [i·rs/br,
	// (i+1)·rs/br) and column strips [j·cs/bc, (j+1)·cs/bc).
	parallel.ForDynamic(parts*blocks, 1, func(lo, hi int) {
		w := getWorkspace[T]()
		defer putWorkspace(w)
		defer func() { w.kc = 0 }()
		for u := lo; u < hi; u++ {
			p, blk := u/blocks, u%blocks
			k0, k1 := p*k/parts, (p+1)*k/parts
			// The part's depth blocks are the product's own (productBlock
			// of A), in either orientation: the transpose then sums each
			// entry's FMAs in the same order (a·b = b·a exactly), and C
			// gets the same bits.
			w.kc = productBlock(k1-k0, tA, lda, size)
			if depthKc > 0 {
				w.kc = depthBlockOf(k1-k0, depthKc)
			}
			i, j := blk/bc, blk%bc
			r0, r1 := i*rs/br*mr, min((i+1)*rs/br*mr, pm)
			c0, c1 := j*cs/bc*nr, min((j+1)*cs/bc*nr, pn)
			aOff, bOff := k0+r0*plda, k0*pldb+c0
			if tA {
				aOff = k0*plda + r0
			}
			if tB {
				bOff = c0*pldb + k0
			}
			dst, ld := c, ldc
			if p >= first {
				dst, ld = scratch[(p-first)*m*n:(p-first+1)*m*n], pn
			}
			w.gemm(kn, tA, tB, r1-r0, c1-c0, k1-k0, 1, pa[aOff:], plda, pb[bOff:], pldb, 0, dst[r0*ld+c0:], ld)
		}
	})
	if swap {
		sumTransposed(kn, m, n, parts, scratch, c, ldc)
		return nil
	}
	// C += part p, p = 1, …, P−1, rows of C over the cores, in spans of
	// rows of at most addSpan entries (contiguous when ldc = n, else one
	// row) that stay in L1 while the parts are added to them: P−1 calls of
	// vec.Add a span, where a call a row cost the 96-wide head gradient's
	// 256 rows 1792 calls. Each entry is still C + S₁ + … + S_{P−1} in
	// that order.
	rows := 1
	if ldc == n {
		rows = max(1, addSpan/max(n, 1))
	}
	parallel.For(m, max(1, 8192/max(n, 1)), func(lo, hi int) {
		for i := lo; i < hi; i += rows {
			span := c[i*ldc : (min(i+rows, hi)-1)*ldc+n]
			for p := 1; p < parts; p++ {
				part := scratch[(p-1)*m*n+i*n:]
				vec.Add(span, span, part[:len(span)])
			}
		}
	})
	return nil
}

// depthUnits is how many units (part, block) a worker depthGrid aims at,
// and depthKc, when not 0, the longest depth block of GemmDepth's parts in
// place of productBlock's (benchmarks compare them).
var depthUnits, depthKc = 2, 0

// swapDepth enables swapsDepth (tests and benchmarks compare the two
// orientations).
var swapDepth = false

// swapsDepth reports whether GemmDepth computes a depth-split product of
// C [m, n] as its transpose Cᵀ = op(B)ᵀ·op(A)ᵀ: for a weight gradient
// C = Aᵀ·B (A [k, m], B [k, n], both read along their rows) when n < m.
// The micro-kernel's tiles are mr×nr = 6×64: the columns are the wide
// side. Each row strip of Aᵀ is packed by its first column strip's tile,
// on the packing twin, which reads six values a depth step lda apart and
// ran about 1.4× slower than a tile reading the copy (the development
// machine's Xeon, xᵀ·g 256×256); the strip's other ⌈n/64⌉ − 1 tiles read
// the copy. In the orientation with more columns the twin computes fewer
// of the tiles: examples/gpt's 96-wide head gradient (256×96) becomes
// 96×256, 16 strips of four full 6×64 tiles, of which one packs, where
// it was 43 strips of a packing 6×64 tile and a 6×32 one (the twin
// computing two thirds of the product), with an edge strip of four rows;
// the 1024×256 MLP gradient reads g's 1 KiB rows on the twin instead of
// x's 4 KiB ones (a new page every depth step). The sum of the parts
// transposes them (sumTransposed), a pass over the parts that they make
// anyway.
func swapsDepth(tA, tB bool, m, n int) bool { return swapDepth && tA && !tB && n < m }

// sumTransposed sets C = S₀ᵀ + S₁ᵀ + … + S_{P−1}ᵀ, in that order (the
// order and bits of GemmDepth's sum in the other orientation), where part
// p, Sₚ [n, m], is at scratch[p·m·n] with rows m apart: C's rows over the
// cores, in spans of 8 (or fewer at the end) whose transposed parts, at
// most addSpan entries each, stay in L1; S₀ is transposed into C, the
// others into a buffer added to C (vec.Add).
func sumTransposed[T Float](kn *kernel[T], m, n, parts int, scratch, c []T, ldc int) {
	rows := max(8, addSpan/max(n, 1)/8*8)
	parallel.For((m+rows-1)/rows, max(1, 16384/max(n*rows, 1)), func(lo, hi int) {
		buf := getScratch[T](rows * n)
		defer putScratch(buf)
		t := *buf
		for i0 := lo * rows; i0 < min(hi*rows, m); i0 += rows {
			h := min(rows, m-i0)
			transposeTo(kn, c[i0*ldc:], ldc, scratch[i0:], m, h, n)
			for p := 1; p < parts; p++ {
				transposeTo(kn, t, n, scratch[p*m*n+i0:], m, h, n)
				for r := range h {
					row := c[(i0+r)*ldc : (i0+r)*ldc+n]
					vec.Add(row, row, t[r*n:(r+1)*n])
				}
			}
		}
	})
}

// transposeTo writes dst[i·ldd + j] = src[j·lds + i] for i < h, j < n: on
// the kernel's transposer where it has one, for its whole blocks.
func transposeTo[T Float](kn *kernel[T], dst []T, ldd int, src []T, lds, h, n int) {
	hb, nb := 0, 0
	if kn.trans != nil {
		hb, nb = h/kn.tblock*kn.tblock, n/kn.tblock*kn.tblock
		if hb > 0 && nb > 0 {
			s := src[:(nb-1)*lds+hb] // bounds of what it reads
			d := dst[:(hb-1)*ldd+nb] // and writes
			kn.trans(&d[0], ldd, &s[0], lds, nb, hb)
		}
	}
	for i := range h {
		j0 := nb
		if i >= hb {
			j0 = 0
		}
		row := dst[i*ldd : i*ldd+n]
		for j := j0; j < n; j++ {
			row[j] = src[j*lds+i]
		}
	}
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
