package gemm

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// Float is the element type: float32 or float64, or a type defined on them.
type Float interface{ ~float32 | ~float64 }

// Blocking parameters (see the package comment).
const (
	// kcMax is the deepest depth block: one pass of the micro-kernel over
	// it sums into registers, then the block's total goes into C.
	kcMax = 256
	// bBlockBytes bounds a packed kc×nc block of op(B) (it should sit in
	// the L2 cache while the row strips stream past it).
	bBlockBytes = 512 << 10
	// B (not transposed) is read in place when it is at most
	// directBBytes, or when its rows are at most directStride bytes apart
	// (longer strides step onto a new page each row, which the
	// prefetchers do not follow) and either there are fewer than packRows
	// rows of C (each strip of B then serves too few row strips to pay for
	// its copy) or A is transposed (packsB).
	directBBytes = 64 << 10
	packRows     = 96
	directStride = 2048
	// cBlockBytes bounds the block of rows of C that stays in the cache
	// across the depth blocks when op(B) is packed whole (gemmPacked).
	cBlockBytes = 256 << 10
	// parallelFlops is the size of product (2·m·n·k) below which Gemm
	// stays on the calling goroutine.
	parallelFlops = 1 << 21
)

// chunkSingle and chunkPaired return kb, the number of depth steps the
// micro-kernel sums in fresh registers before adding them to one of its
// four totals, for a depth block of depth steps: chunkSingle for kernels
// that sum a chunk in one chain, chunkPaired for those that sum its even
// and odd steps in two (AVX-512 variant 1). Short chunks cost a flush each;
// long ones make the chains long. The lengths are those that kept the float32 error
// at or below gonum's at every depth of TestAccuracy.
func chunkSingle(depth int) int {
	switch {
	case depth < 64:
		return 4
	case depth <= 128:
		return 8
	}
	return 16
}

func chunkPaired(depth int) int {
	switch {
	case depth < 32:
		return 4
	case depth < 64:
		return 8
	case depth <= 128:
		return 16
	}
	return 32
}

// depthBlock returns the depth of the blocks a depth k is cut into: at most
// 128 up to k = 512 and at most kcMax beyond (the chain of block totals
// through C is then long enough that longer blocks pay), or at most 128 at
// any depth when paged (see pagedA), as even as possible, so that no block
// is much shorter than the others (a short last block would be a wasted
// pass over C).
func depthBlock(k int, paged bool) int {
	kc := kcMax
	if k <= 4*128 || paged {
		kc = 128
	}
	blocks := (k + kc - 1) / kc
	return (k + blocks - 1) / blocks
}

// pagedA reports whether a product reads op(A) = Aᵀ with A's rows (one a
// depth step) at least a page apart: lda elements of size bytes, lda·size
// ≥ pageBytes. The micro-kernel then reads a page a depth step from A
// alone, 256 of them in a 256-deep block, more than the L1 TLB holds
// (64–96 entries of 4 KiB); depth blocks of 128 halve that. On the Xeon
// development machine nn's weight gradient xᵀ·g with x [4096, 1024]
// (C 1024×256) ran 4–9% faster with this rule than without, at one and
// two cores alike (12 readings, each way first in turn, alternating in one
// process); with x [4096, 256] (rows 1 KiB apart) blocks of 128 were
// faster at one core but slower at two in 5 of 6 readings, so the rule is
// the page.
func pagedA(tA bool, lda, size int) bool { return tA && lda*size >= pageBytes }

// pageBytes is the size of a memory page as pagedA counts it.
const pageBytes = 4096

// productBlock is the depth block of a product that reads A (tA, lda, elements of size
// bytes) to depth k: the one rule for gemmPacked's loop and the op(B) that rowsParallel
// packs for it.
func productBlock(k int, tA bool, lda, size int) int { return depthBlock(k, pagedA(tA, lda, size)) }

// A Workspace holds the buffers of single-threaded products. Its zero value
// is ready to use; it grows to the largest product it has run and then
// allocates nothing. A Workspace must not be used by two goroutines at once.
type Workspace[T Float] struct {
	b    []T // packed op(B) block: strips of nr columns, each [kc][nr]
	a    []T // a packed strip of op(A) (m < mr, or A stored transposed): [kc][mr]
	tile []T // scratch C tile for edge strips: [mr][nr]
	pa   []T // a strip of Aᵀ packed by the first column strip (kernel.packFirst): [kc][mr]
	// the strips of op(A) of a group of rows (block)
	strips []aStrip[T]
}

// Gemm computes, on the calling goroutine,
//
//	C = alpha·op(A)·op(B) + beta·C      op(A) [m, k], op(B) [k, n], C [m, n]
//
// for row-major matrices, where op(X) is X, or Xᵀ when the transpose flag is
// set: A is stored [m, k] (tA false) or [k, m] (tA true), B [k, n] or
// [n, k], each row i of a stored matrix X starting at X[i·ldX]. With
// beta = 0, C is only written (NaNs in it do not propagate); entries of C
// outside [m, n] and of A, B outside their stored shapes are never touched.
// It returns an error naming the sizes when a slice is too short for its
// shape or a stride is smaller than its row.
func (w *Workspace[T]) Gemm(tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) error {
	if err := check(tA, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc); err != nil {
		return err
	}
	w.gemm(kernelFor[T](), tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	return nil
}

// GemmChain is Workspace.Gemm summing each depth block (at most 128 steps
// up to k = 512, 256 beyond or 128: depthBlock) in one FMA chain per entry, as
// GemmDepth and GemmBias do, instead of in chunks of 4–16 steps added to
// four totals (see Accumulation in the package comment): no chunk flushes
// (on the Xeon development machine the 6×64 kernel ran a 128-deep block at
// 95–96% of the FMA peak loop in one chain, 85% in chunks of 8:
// BenchmarkChunks), and a
// float32 error that grows as one chain's along the block. For products
// that accumulate ops/attention's outputs (O += P·V, dV, dK, dQ: its
// tile.go, Summation order), where that error stays within the caller's
// rule.
func (w *Workspace[T]) GemmChain(tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) error {
	if err := check(tA, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc); err != nil {
		return err
	}
	w.gemm(chainFor[T](), tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	return nil
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C as Workspace.Gemm does,
// split over the machine's cores (internal/parallel) when the product is
// large, with workspaces from a pool.
func Gemm[T Float](tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) error {
	if err := check(tA, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc); err != nil {
		return err
	}
	product(kernelFor[T](), tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	return nil
}

// product is Gemm on kernel kn, the arguments checked.
func product[T Float](kn *kernel[T], tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if 2*m*n*k < parallelFlops {
		w := getWorkspace[T]()
		w.gemm(kn, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		putWorkspace(w)
		return
	}
	// Split the larger of m and n into whole strips. Each part is a
	// product of its own; splitting the columns lets each worker pack only
	// its own part of B, splitting the rows keeps long rows of C together.
	if m >= n {
		rowsParallel(kn, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil)
		return
	}
	units := (n + kn.nr - 1) / kn.nr
	grain := max(1, parallelFlops/(2*kn.nr*m*k))
	parallel.ForDynamic(units, grain, func(lo, hi int) {
		c0, c1 := lo*kn.nr, min(hi*kn.nr, n)
		bOff := c0
		if tB {
			bOff = c0 * ldb
		}
		w := getWorkspace[T]()
		w.gemm(kn, tA, tB, m, c1-c0, k, alpha, a, lda, b[bOff:], ldb, beta, c[c0:], ldc)
		putWorkspace(w)
	})
}

// sharedBMax bounds op(B) packed once for all the workers of a product
// (rowsParallel); a larger op(B) is packed by each worker, block by block.
const sharedBMax = 8 << 20

// rowsParallel computes C = alpha·op(A)·op(B) + beta·C (checked arguments)
// over the cores by strips of mr rows, in ForDynamic's chunks (a late core
// holds up a small chunk, not a 1/cores share). op(B), when it is to be
// packed at all, is packed once, its strips over the cores, and every
// chunk reads that copy: the workers no longer each pack all of op(B) and
// hold their own copies of it in the shared caches. after, when not nil,
// runs on every row of C once, on rows [r0, r1) as soon as they are
// computed (a block of rows still in the core's cache: gemmPacked). The packed
// blocks and the micro-kernel calls are those of the serial product, so
// C has its bits.
func rowsParallel[T Float](kn *kernel[T], tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int, after func(r0, r1 int)) {
	kn = kn.forColumns(n)
	mr, nr := kn.mr, kn.nr
	var pb []T
	if k > 0 && alpha != 0 {
		size := int(unsafe.Sizeof(alpha))
		np := (n + nr - 1) / nr * nr
		if packsB(tA, tB, m, n, k, ldb, size, nr) && k*np*size <= sharedBMax {
			sp := getScratch[T](k * np)
			defer putScratch(sp)
			pb = *sp
			packShared(kn, pb, b, tB, ldb, n, k, productBlock(k, tA, lda, size))
		}
	}
	units := (m + mr - 1) / mr
	grain := max(1, parallelFlops/(2*mr*n*max(k, 1)))
	parallel.ForDynamic(units, grain, func(lo, hi int) {
		r0, r1 := lo*mr, min(hi*mr, m)
		aOff := r0 * lda
		if tA {
			aOff = r0
		}
		var done func(i0, i1 int)
		if after != nil {
			done = func(i0, i1 int) { after(r0+i0, r0+i1) }
		}
		w := getWorkspace[T]()
		w.gemmPacked(kn, tA, tB, r1-r0, n, k, alpha, a[aOff:], lda, b, ldb, beta, c[r0*ldc:], ldc, pb, done)
		putWorkspace(w)
	})
}

// packShared packs op(B) [k, n] whole into pb for gemmPacked: depth block
// after depth block (blocks of kc, gemmPacked's), each as packBlock lays
// out all n columns, [⌈n/nr⌉ strips][kcb][nr], the block at depth pc
// starting at pb[pc·np] (np = ⌈n/nr⌉·nr); the strips are packed over the
// cores, a strip (at most kcMax·nr values: 64 KiB) a unit: with four a
// unit, the 256×256 weight of a 4096-row product was packed on one core
// while the others waited.
func packShared[T Float](kn *kernel[T], pb, b []T, tB bool, ldb, n, k, kc int) {
	nr := kn.nr
	blocks, strips := (k+kc-1)/kc, (n+nr-1)/nr
	np := strips * nr
	parallel.For(blocks*strips, 1, func(lo, hi int) {
		for u := lo; u < hi; u++ {
			pc, s := u/strips*kc, u%strips
			kcb := min(kc, k-pc)
			packBlock(kn, pb[pc*np+s*kcb*nr:], b, tB, ldb, pc, s*nr, kcb, min(nr, n-s*nr))
		}
	})
}

// check validates the sizes, strides and lengths of a product.
func check(tA, tB bool, m, n, k, la, lda, lb, ldb, lc, ldc int) error {
	if m < 0 || n < 0 || k < 0 {
		return fmt.Errorf("gemm: negative size m=%d n=%d k=%d", m, n, k)
	}
	ar, ac, an := m, k, "A [m,k]"
	if tA {
		ar, ac, an = k, m, "A [k,m] (tA)"
	}
	br, bc, bn := k, n, "B [k,n]"
	if tB {
		br, bc, bn = n, k, "B [n,k] (tB)"
	}
	read := m > 0 && n > 0 && k > 0
	if err := checkOperand(an, ar, ac, lda, la, read); err != nil {
		return err
	}
	if err := checkOperand(bn, br, bc, ldb, lb, read); err != nil {
		return err
	}
	return checkOperand("C [m,n]", m, n, ldc, lc, m > 0 && n > 0)
}

// checkOperand checks one operand of check: a rows×cols matrix at row
// stride ld in a slice of length elements, which the product reads (or
// writes) where read is set. (check looped over a slice literal of the
// three operands instead: 0.85% of the causal N = 1024 attention
// forward's profile on one core, against 0.17% for the three calls.)
func checkOperand(name string, rows, cols, ld, length int, read bool) error {
	if ld < max(1, cols) {
		return fmt.Errorf("gemm: %s = [%d,%d] with row stride %d: the stride must be at least %d", name, rows, cols, ld, max(1, cols))
	}
	if read {
		if need := (rows-1)*ld + cols; length < need {
			return fmt.Errorf("gemm: %s = [%d,%d] at row stride %d needs %d elements, the slice holds %d", name, rows, cols, ld, need, length)
		}
	}
	return nil
}

// packsB reports whether a product of C [m, n] over depth k, of elements of
// size bytes on a kernel of nr columns, packs op(B) into strips (else the
// micro-kernel reads it in place, rows of nr values ldb apart). B stored
// transposed, or narrower than a strip, is always packed. A large B is
// packed when its rows are far apart or when many rows of C read it, except
// beside a transposed A: the product then reads A in place along strided
// rows too (kernel.packAT), and on the Xeon one core ran the weight
// gradients xᵀ·g with B = g [4096, 256] or [4096, 96] read in place 2–4%
// faster than packed (the copy is a pass over all of B for 2m FLOPs an
// element), and with g [4096, 1024] (4 KiB rows) 5% slower.
func packsB(tA, tB bool, m, n, k, ldb, size, nr int) bool {
	switch {
	case tB || n < nr:
		return true
	case k*n*size <= directBBytes:
		return false
	}
	return ldb*size > directStride || m >= packRows && !tA
}

// gemm is the single-threaded product; the arguments have been checked.
func (w *Workspace[T]) gemm(kn *kernel[T], tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	w.gemmPacked(kn, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil, nil)
}

// gemmPacked is gemm reading op(B) from pb, packed by packShared for the
// kernel kn.forColumns(n), when pb is not nil (b is then not read). after,
// when not nil, runs once on every row of C, on rows [i0, i1) as soon as
// all their columns are computed: block of rows by block of rows when one
// block of columns covers n, else on all rows at the end.
func (w *Workspace[T]) gemmPacked(kn *kernel[T], tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int, pb []T, after func(i0, i1 int)) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scale(m, n, beta, c, ldc)
		if after != nil {
			after(0, m)
		}
		return
	}
	kn = kn.forColumns(n)
	mr, nr := kn.mr, kn.nr
	size := int(unsafe.Sizeof(alpha))
	kc := productBlock(k, tA, lda, size)
	packB := pb != nil || packsB(tA, tB, m, n, k, ldb, size, nr)
	nc := n // unpacked B needs no column blocks
	np := (n + nr - 1) / nr * nr
	if packB {
		nc = max(nr, bBlockBytes/(kc*nr*size)*nr)
		nc = min(nc, np)
		if pb == nil {
			w.b = grow(w.b, kc*nc)
		}
	}
	packAT := tA && kn.packAT && n > 2*nr
	if m < mr || packAT {
		w.a = grow(w.a, kc*mr*(aStrips(kn, kc, size)+1))
	}
	w.tile = grow(w.tile, mr*nr)

	// With op(B) packed whole (pb) and several depth blocks, or an after
	// to run (and op(B) not packed block by block here), the rows go in
	// blocks of mc whose part of C (at most cBlockBytes) stays in the
	// core's cache from one depth block to the next and for after, instead
	// of a pass over all m rows of C per depth block; each entry of C
	// still sums the same micro-kernel calls in the same order.
	mc := m
	if pb != nil && k > kc || after != nil && (pb != nil || !packB) {
		mc = max(mr, cBlockBytes/(nc*size)/mr*mr)
	}
	for jc := 0; jc < n; jc += nc {
		ncb := min(nc, n-jc)
		for ic := 0; ic < m; ic += mc {
			w.block(kn, tA, tB, m, n, k, kc, ic, min(ic+mc, m), jc, ncb, np, packB, packAT, alpha, a, lda, b, ldb, beta, c, ldc, pb)
			if after != nil && nc >= n {
				after(ic, min(ic+mc, m))
			}
		}
	}
	if after != nil && nc < n {
		after(0, m)
	}
}

// block runs depth block after depth block of rows [r0, r1) and columns
// [jc, jc+ncb) of the product gemmPacked describes.
//
// Within a depth block the rows go in groups of at most aStrips strips
// (their part of op(A), at most aBlockBytes, stays in the L2 cache). When a
// strip of the packed op(B) block is at most kn.bPanel bytes, a
// group runs column strip after column strip, each over the group's row
// strips, so the B strip is read from L1 by all of them and only the A
// strips (mr values a depth step, not nr) stream from L2 (BLIS's order);
// else row strip after row strip, each over the columns. Either way each
// tile of C gets the same micro-kernel calls, depth block after depth
// block, so the order does not change a bit of C.
func (w *Workspace[T]) block(kn *kernel[T], tA, tB bool, m, n, k, kc, r0, r1, jc, ncb, np int, packB, packAT bool, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int, pb []T) {
	mr, nr := kn.mr, kn.nr
	size := int(unsafe.Sizeof(alpha))
	ga := aStrips(kn, kc, size) * mr
	// Aᵀ read in place is packed by the first column strip's tiles where
	// the kernel does (kernel.firstPacks) and more than one strip reads it.
	packFirst := kn.firstPacks && kn.packFirst != nil && tA && !packAT && m >= mr && ncb > nr
	if packFirst {
		w.pa = grow(w.pa, kc*mr)
	}
	for pc := 0; pc < k; pc += kc {
		kcb := min(kc, k-pc)
		kb := kn.chunk(kcb)
		// The first depth block applies beta; the later ones add.
		bet, load := T(1), true
		if pc == 0 {
			bet, load = beta, beta != 0
		}
		// The packed block: strip s of this block is at pk[s·kcb·nr].
		pk := w.b
		switch {
		case pb != nil:
			pk = pb[pc*np+jc*kcb:]
		case packB:
			packBlock(kn, w.b, b, tB, ldb, pc, jc, kcb, ncb)
		}
		// tile computes the tile of row strip st and the column strip at
		// jr of the block; when pa is not nil (a full tile of a strip of
		// Aᵀ read in place), on the packing twin, which copies the strip
		// to pa.
		tile := func(st *aStrip[T], jr int, pa *T) {
			ir, h := st.ir, st.h
			wd := min(nr, ncb-jr)
			micro, hk, ro, width := st.micro, st.hk, st.ro, nr
			if wd < nr {
				// The last columns: on a narrower kernel where one holds
				// them (its edge kernel of hk rows, or the full strip of
				// rows when the strip's rows are recomputed).
				if ck := kn.colKernel(wd); ck != kn {
					ek := ck.micro
					if hk < mr {
						ek = ck.edgeKernel(hk)
					}
					if ek != nil {
						micro, width = ek, ck.nr
					}
				}
			}
			co := 0
			var bp *T
			var bs int
			if packB {
				bp, bs = &pk[jr*kcb], nr
			} else {
				j0 := jc + jr
				if wd < width { // n ≥ width here: recompute the last full strip
					j0, co = n-width, width-wd
				}
				bp, bs = &b[pc*ldb+j0], ldb
			}
			if hk == h && wd == width {
				if pa != nil {
					kn.packFirst(kcb, kb, st.ap, st.rs, st.ps, bp, bs, &c[ir*ldc+jc+jr], ldc, alpha, bet, load, pa)
					return
				}
				micro(kcb, kb, st.ap, st.rs, st.ps, bp, bs, &c[ir*ldc+jc+jr], ldc, alpha, bet, load)
				return
			}
			micro(kcb, kb, st.ap, st.rs, st.ps, bp, bs, &w.tile[0], width, alpha, 0, false)
			addTile(c[ir*ldc+jc+jr:], ldc, w.tile[ro*width+co:], width, h, wd, bet, load)
		}
		for g0 := r0; g0 < r1; g0 += ga {
			g1 := min(g0+ga, r1)
			strips := w.aStrips(kn, tA, packAT, m, g0, g1, kcb, pc, a, lda, ga)
			if kcb*nr*size <= kn.bPanel {
				for jr := 0; jr < ncb; jr += nr {
					for i := range strips {
						tile(&strips[i], jr, nil)
					}
				}
				continue
			}
			for i := range strips {
				st, jr := &strips[i], 0
				if packFirst && st.h == mr && st.hk == mr {
					// ncb > nr: the first tile is a full one (the direct
					// call above), and reads the strip in place.
					tile(st, 0, &w.pa[0])
					packed := *st
					packed.ap, packed.rs, packed.ps = &w.pa[0], 1, mr
					st, jr = &packed, nr
				}
				for ; jr < ncb; jr += nr {
					tile(st, jr, nil)
				}
			}
		}
	}
}

// bPanelBytes bounds a strip of the packed op(B) block (kc×nr) that the
// rows of a group read from the L1 cache (block, kernels whose bPanel is
// set): the smaller L1 data caches of current x86 cores are 32–48 KiB.
const bPanelBytes = 32 << 10

// An aStrip is how the micro-kernel reads a strip of op(A): rows
// i0…i0+hk−1 of op(A) at ap (row stride rs, depth stride ps), of which
// rows ro… are the strip's rows ir…ir+h−1 of C, with micro, the kernel of
// hk rows.
type aStrip[T Float] struct {
	ir, h, hk, ro int
	micro         microKernel[T]
	ap            *T
	rs, ps        int
}

// aStrips returns the strips of rows [g0, g1) of op(A) over depth
// pc…pc+kcb−1, packing them into w.a where they are to be packed: a
// transposed A a group at a time (packABlock: the full strips at w.a[0],
// the last partial one after ga rows), and A of fewer than mr rows. The
// last rows run on the edge kernel of h rows where there is one, else
// recompute the last full strip.
func (w *Workspace[T]) aStrips(kn *kernel[T], tA, packAT bool, m, g0, g1, kcb, pc int, a []T, lda, ga int) []aStrip[T] {
	mr := kn.mr
	full := (min(g1, m) - g0) / mr
	if packAT && full > 0 {
		packABlock(kn, w.a, a, lda, g0, pc, kcb, full)
	}
	// The strips are written in place (appending each, a struct with
	// pointers, was 1.3% of the causal N = 1024 attention forward's
	// profile on one core, against 0.3%).
	n := (g1 - g0 + mr - 1) / mr
	if cap(w.strips) < n {
		w.strips = make([]aStrip[T], n)
	}
	w.strips = w.strips[:n]
	for ir := g0; ir < g1; ir += mr {
		st := &w.strips[(ir-g0)/mr]
		*st = aStrip[T]{ir: ir, h: min(mr, m-ir), hk: mr, micro: kn.micro}
		i0 := ir
		if st.h < mr {
			if e := kn.edgeKernel(st.h); e != nil {
				st.micro, st.hk = e, st.h
			} else if m >= mr {
				i0, st.ro = m-mr, mr-st.h
			}
		}
		switch {
		case m < mr && st.hk == mr:
			packStrip(kn, w.a, a, tA, lda, i0, pc, kcb, st.h)
			st.ap, st.rs, st.ps = &w.a[0], 1, mr
		case packAT && st.h == mr:
			st.ap, st.rs, st.ps = &w.a[(ir-g0)*kcb], 1, mr
		case packAT:
			p := w.a[ga*kcb:]
			packStrip(kn, p, a, tA, lda, i0, pc, kcb, st.hk)
			st.ap, st.rs, st.ps = &p[0], 1, mr
		case tA:
			st.ap, st.rs, st.ps = &a[pc*lda+i0], 1, lda
		default:
			st.ap, st.rs, st.ps = &a[i0*lda+pc], lda, 1
		}
	}
	return w.strips
}

// addTile sets the h×wd block of C to t + bet·C (t when !load).
func addTile[T Float](c []T, ldc int, t []T, ldt, h, wd int, bet T, load bool) {
	for r := 0; r < h; r++ {
		dst, src := c[r*ldc:r*ldc+wd], t[r*ldt:r*ldt+wd]
		switch {
		case !load:
			copy(dst, src)
		case bet == 1:
			for j, v := range src {
				dst[j] += v
			}
		default:
			for j, v := range src {
				dst[j] = bet*dst[j] + v
			}
		}
	}
}

// scale sets C = beta·C (zero when beta = 0, whatever C held).
func scale[T Float](m, n int, beta T, c []T, ldc int) {
	if beta == 1 {
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

func grow[T Float](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Workspaces of Gemm's workers, one pool per element size (a type defined on
// float32 shares float32's).
var pools [2]sync.Pool

func poolOf[T Float]() *sync.Pool {
	var z T
	if unsafe.Sizeof(z) == 4 {
		return &pools[0]
	}
	return &pools[1]
}

func getWorkspace[T Float]() *Workspace[T] {
	if p, ok := poolOf[T]().Get().(unsafe.Pointer); ok {
		return (*Workspace[T])(p)
	}
	return new(Workspace[T])
}

func putWorkspace[T Float](w *Workspace[T]) { poolOf[T]().Put(unsafe.Pointer(w)) }
