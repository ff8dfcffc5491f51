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
	for br*bc*parts < 2*workers {
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
	kn = kn.forGradient(tA, n)
	mr, nr := kn.mr, kn.nr
	br, bc := depthGrid(mr, nr, m, n, parts, parallel.Workers())
	rs, cs := (m+mr-1)/mr, (n+nr-1)/nr
	blocks := br * bc
	sp := getScratch[T]((parts - 1) * m * n)
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
		for u := lo; u < hi; u++ {
			p, blk := u/blocks, u%blocks
			k0, k1 := p*k/parts, (p+1)*k/parts
			i, j := blk/bc, blk%bc
			r0, r1 := i*rs/br*mr, min((i+1)*rs/br*mr, m)
			c0, c1 := j*cs/bc*nr, min((j+1)*cs/bc*nr, n)
			aOff, bOff := k0+r0*lda, k0*ldb+c0
			if tA {
				aOff = k0*lda + r0
			}
			if tB {
				bOff = c0*ldb + k0
			}
			dst, ld := c, ldc
			if p > 0 {
				dst, ld = scratch[(p-1)*m*n:p*m*n], n
			}
			w.gemm(kn, tA, tB, r1-r0, c1-c0, k1-k0, 1, a[aOff:], lda, b[bOff:], ldb, 0, dst[r0*ld+c0:], ld)
		}
	})
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
