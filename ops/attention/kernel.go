package attention

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/internal/attnspec"
	"github.com/flashgorgon/flashgorgon/internal/kernels/gemm"
	"github.com/flashgorgon/flashgorgon/internal/kernels/vec"
	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// Float is the set of element types the kernels compute in.
type Float = graph.Float

// Tile sizes: a query block holds blockQ rows, a key/value block blockK
// rows; they are chosen here only. Every tile a worker touches (Q, K, V,
// O, dO, dK, dV blocks of blockQ or blockK rows of d values, the score
// tiles blockQ×blockK: 64 KiB each in float32) stays in the core's L2
// cache for d ≤ 128. Larger blocks make deeper tile products (the forward's
// O += P·V and the backward's dV, dK sums run over blockK and blockQ
// terms) and fewer passes over K, V (forward) and Q, dO (backward) per
// flop; smaller ones more units of parallel work and less work wasted on
// the diagonal tiles of a causal mask. On the development machine (Zen 5,
// AVX-512, GFLOP per CPU-second of the kernels on the five benchmark
// shapes) 128×128 was 0–8% ahead of 128×64 and 64×64, and 256×64 slower
// in the causal backward; 128 keys per block also halve the backward's
// traffic over Q and dO per flop, which matters with 16 cores sharing an
// L3 cache. B = 1, H = 8, N = 1024 still gives 64 forward units.
const (
	blockQ = 128
	blockK = 128
)

// params describes one attention problem over flat row-major slices; it is
// the seam between the Gorgonia ops and the compute, and the same
// description the cuda launchers get (attnspec.Problem: layouts, Scale
// resolved, the visibility rule as KeyLimit, KeyEnd and FirstQuery).
type params = attnspec.Problem

// runUnits calls work(w, u) for every unit u in [0, n) exactly once,
// spread over the cores. parallel.For decides how many goroutines run; each
// takes a scratch w from pool (made by newScratch when the pool is empty),
// takes the next unit from a shared counter until none is left, so units
// of unequal cost (causal attention) keep every core busy, and gives w
// back. Units must be independent: which goroutine runs a unit never
// changes its result.
func runUnits[S any](n int, pool *sync.Pool, newScratch func() *S, work func(w *S, u int)) {
	var next atomic.Int64
	parallel.For(n, 1, func(lo, hi int) {
		w, ok := pool.Get().(*S)
		if !ok {
			w = newScratch()
		}
		defer pool.Put(w)
		for {
			u := int(next.Add(1) - 1)
			if u >= n {
				return
			}
			work(w, u)
		}
	})
}

const log2e = math.Log2E

// The tiles the kernels visit. Both masks keep a prefix of the keys that
// grows with the row (attnspec), so the (query block, key block) tiles that
// hold a visible pair are, for query rows [i0, i1), the key blocks below
// fwdKeyEnd, and for the key block at j0, the query blocks from
// bwdQueryStart on. The loops take their bounds from these two functions
// and visit nothing else; TestMaskedBlocksSkipped checks them against the
// definition of the masks.

// fwdKeyEnd returns the end of the keys that query rows [i0, i1) of batch
// b see: the last row's KeyLimit.
func fwdKeyEnd(p *params, b, i1 int) int { return p.KeyLimit(b, i1-1) }

// bwdQueryStart returns the first row of the first query block that sees
// the key block at j0 of batch b: the block of the key's first query, or
// Nq when the key is padding. Later keys are seen by later rows only.
func bwdQueryStart(p *params, b, j0 int) int {
	if j0 >= p.KeyEnd(b) {
		return p.Nq
	}
	return p.FirstQuery(b, j0) / blockQ * blockQ
}

// flashForward computes, for every batch b, head h and query row i,
//
//	s_ij = Scale·Σ_c q[b,h,i,c]·k[b,h/G,j,c]   over the visible keys j < keyLimit(b,i)
//	L[b,h,i] = log Σ_j exp(s_ij)
//	o[b,h,i,c] = Σ_j exp(s_ij − L)·v[b,h/G,j,c]
//
// (G = H/Hkv) in the FlashAttention-2 order: for each query block (the unit
// of parallel work), an inner loop over key/value blocks keeps a running
// shift m and running sum ℓ per row (online softmax, in base 2 with log₂e
// folded into the scale), rescales the output accumulator when m moves and
// divides by ℓ once at the end. m is the running maximum of the row's
// scores, or where the tile's exponentials are taken in the score
// product (scoreExpTile) up to gemm.ScoreExpTau below it: it moves only
// when a score passes it by more than that, so the probabilities are at
// most 2^τ and rarely need rescaling. Key blocks that no row of the query block
// sees are never visited. Rows with no visible key get o = 0 and L = −Inf.
// o and lse are fully written; nothing of size Nq×Nk is allocated.
//
// lres receives the rounding residual of L, L − float64(lse) rounded to T
// (0 in float64): the backward recomputes P = exp(s − L) from
// lse + lres, which keeps float32's P as accurate as the forward's, where a
// float32 L alone (|L| up to ~10, so an error up to ~5 ulp of 1) would
// show in every recomputed probability.
func flashForward[T Float](p *params, q, k, v, o, lse, lres []T) {
	nQB := (p.Nq + blockQ - 1) / blockQ
	bh := p.B * p.H
	gq := forwardGroup(bh, nQB, parallel.Workers())
	nG := (nQB + gq - 1) / gq
	// K in transposed blocks, so that S = Q·Kᵀ is an A·B product with the
	// block of Kᵀ as stored; O += P·V reads V as it is. Each unit copies
	// the blocks it walks (forwardBlocks), or all of K is copied once here
	// (see sharedKT).
	var kt []T
	if sharedKT(p, gq, nQB) {
		kt = getBuf[T](len(k))
		defer putBuf(kt)
		transposeBlocks(kt, k, p.B*p.Hkv, p.Nk, p.D, blockK)
	}
	runUnits(bh*nG, &fwdPools[poolIndex[T]()], newFwdScratch[T], func(w *fwdScratch[T], u int) {
		// The most expensive groups of query blocks (last, under a causal
		// mask) first.
		head, gi := u%bh, nG-1-u/bh
		b, h := head/p.H, head%p.H
		qb0 := gi * gq
		forwardBlocks(p, w, q, k, kt, v, o, lse, lres, b, h, qb0, min(qb0+gq, nQB))
	})
}

// sharedKT reports whether flashForward copies all of K in transposed
// blocks (transposeBlocks) once, before the units, rather than each unit
// the key blocks it walks, as it reaches them (forwardBlocks): where the
// walks of the units, groups of gq of a head's nQB query blocks, visit more
// than twice as many key blocks as K holds. A unit's own copy is read from
// K and written into the core's caches just before its tiles read it; the
// shared copy is written out to the shared cache and read back from there
// by the units. On one core of the development Xeon the shared copy was
// 2.4% of the causal N = 1024 forward (groups of 4 query blocks: the units
// copy 1.5 times K's blocks), which the units' own copies made 1–4% faster,
// and examples/gpt's shapes 1–7%; units of one query block each (16
// cores) or long non-causal walks would copy each block many times.
func sharedKT(p *params, gq, nQB int) bool {
	walked := 0
	for b := range p.B {
		for qb0 := 0; qb0 < nQB; qb0 += gq {
			i1 := min((qb0+gq)*blockQ, p.Nq)
			walked += (fwdKeyEnd(p, b, i1) + blockK - 1) / blockK
		}
	}
	nKB := (p.Nk + blockK - 1) / blockK
	return p.H*walked > 2*p.B*p.Hkv*nKB
}

// maxGroup is the largest number of query blocks a forward unit holds.
const maxGroup = 4

// forwardGroup returns how many consecutive query blocks of one head a
// forward unit takes (1…maxGroup) for bh heads of nQB query blocks on the
// given number of workers: the most that still leaves at least
// 4 units per worker. A unit walks the key/value blocks once for all its
// query blocks, so each K and V block is read from memory or the shared
// L3 cache once per group and reused from the core's L2 cache by the
// group's other blocks: with K, V of 1 MiB per head (N = 4096, d = 64)
// one query block per unit streamed 2 MiB through the core's cache per
// 128 query rows. The grouping never changes a result (every row's
// arithmetic is the same in any group), only the order of the work.
func forwardGroup(bh, nQB, workers int) int {
	g := maxGroup
	for g > 1 && bh*((nQB+g-1)/g) < 4*workers {
		g /= 2
	}
	return min(g, max(nQB, 1))
}

// fwdScratch holds one worker's buffers for the forward: the score tile
// and, per query block of a group (maxGroup × blockQ rows), the row state.
type fwdScratch[T Float] struct {
	ws     gemm.Workspace[T] // the tile products' buffers
	pb     prefixBuf[T]      // gemmPrefix's staircase coefficients
	kt     []T               // the current key block's Kᵀ, d×blockK (forwardBlocks)
	s      []T               // score / probability tile, blockQ×blockK
	m      []T               // running shift per row (log₂ units; see flashForward)
	mOld   []T               // m before the current key block
	l      []float64         // running sum per row
	lv     []float64         // more of it, 8 lanes per row (gemm.ScoreExp's)
	sum    []float64         // the current key block's sum per row
	rowLim []int             // keyLimit per row
	nv     []int             // visible keys of the current key block per row

	// The tile scoreExpTile is on, for grow: its output rows and first
	// row of state.
	tileO  []T
	tileRS int
	d      int
	grow   func(i int, old, new float32) float32 // w.growRow
}

func newFwdScratch[T Float]() *fwdScratch[T] {
	const rows = maxGroup * blockQ
	w := &fwdScratch[T]{
		s:      make([]T, blockQ*blockK),
		m:      make([]T, rows),
		mOld:   make([]T, blockQ),
		l:      make([]float64, rows),
		lv:     make([]float64, 8*rows),
		sum:    make([]float64, blockQ),
		rowLim: make([]int, rows),
		nv:     make([]int, blockQ),
	}
	w.grow = w.growRow
	return w
}

// rescale multiplies row r's running sum (l and lv) by a: its shift moved
// and its sum so far is in units of the old one.
func (w *fwdScratch[T]) rescale(r int, a float64) {
	w.l[r] *= a
	for x := range w.lv[8*r : 8*r+8] {
		w.lv[8*r+x] *= a
	}
}

// rowSum returns row r's running sum ℓ: l and lv's lanes, added in a fixed
// order.
func (w *fwdScratch[T]) rowSum(r int) float64 {
	v := w.lv[8*r : 8*r+8]
	return w.l[r] + (((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])))
}

// growRow is gemm.ScoreExp's grow for the tile of scoreExpTile: row i of
// the tile moved its shift from old to new, so its output row and l are
// rescaled by a = 2^(old − new), which it returns (ScoreExp rescales the
// row's lanes lv and its probabilities of the tile so far). A row's first
// shift (old = −Inf, a = 0) finds l zero and leaves the output row alone:
// it is in the row's first tile, whose P·V overwrites it (forwardTile; a
// row whose scores there were all NaN holds NaN, which 0 kept).
func (w *fwdScratch[T]) growRow(i int, old, new float32) float32 {
	a := exp2f32(old - new)
	if !math.IsInf(float64(old), -1) {
		scaleRow(w.tileO[i*w.d:(i+1)*w.d], T(a))
	}
	w.l[w.tileRS+i] *= float64(a)
	return a
}

// forwardBlocks computes the query blocks [qb0, qb1) of head (b, h): see
// flashForward. The key/value blocks are walked once, each applied to
// every query block of the group that sees it while it is in the cache.
// kt holds K in transposed blocks (transposeBlocks), or is nil: then each
// key block is first copied transposed into w.kt (vec.Transpose: a d×rows
// matrix, key j's values in column j) as the walk reaches it (see
// sharedKT).
func forwardBlocks[T Float](p *params, w *fwdScratch[T], q, k, kt, v, o, lse, lres []T, b, h, qb0, qb1 int) {
	d := p.D
	kvh := h / (p.H / p.Hkv)
	kvOff := (b*p.Hkv + kvh) * p.Nk * d
	ninf := T(math.Inf(-1))
	i0 := qb0 * blockQ
	i1 := min(qb1*blockQ, p.Nq)
	qOff := ((b*p.H+h)*p.Nq + i0) * d
	// o is not cleared first: each row's first tile (the key block at 0)
	// overwrites its output row (forwardTile), and the rows no key reaches
	// are cleared at the end.
	for r := 0; r < i1-i0; r++ {
		w.m[r], w.l[r] = ninf, 0
		clear(w.lv[8*r : 8*r+8])
		w.rowLim[r] = p.KeyLimit(b, i0+r)
	}
	// keyLimit grows with the row: the group's last row bounds the keys
	// to visit, each block's last row the keys of that block.
	lim := fwdKeyEnd(p, b, i1)
	if kt == nil && len(w.kt) < blockK*d {
		w.kt = make([]T, blockK*d)
	}
	for j0 := 0; j0 < lim; j0 += blockK {
		// Kᵀ of the block's full keys (the last block of a head may be
		// shorter; those past lim are never read).
		full := min(blockK, p.Nk-j0)
		var ktB []T
		if kt != nil {
			ktB = kt[kvOff+j0*d : kvOff+(j0+full)*d]
		} else {
			ktB = w.kt[:full*d]
			vec.Transpose(ktB, k[kvOff+j0*d:kvOff+(j0+full)*d], full, d)
		}
		for qb := qb0; qb < qb1; qb++ {
			r0 := (qb - qb0) * blockQ
			r1 := min(r0+blockQ, i1-i0)
			if w.rowLim[r1-1] <= j0 {
				continue // no row of this query block sees these keys
			}
			forwardBlockTile(p, w, q, ktB, v, o, b, h, i0, r0, r1, j0, min(blockK, lim-j0), kvOff)
		}
	}

	lOff := (b*p.H+h)*p.Nq + i0
	for r := 0; r < i1-i0; r++ {
		oR := o[qOff+r*d : qOff+(r+1)*d]
		l := w.rowSum(r)
		if l == 0 { // no visible key: o is 0
			zeroRow(oR)
			lse[lOff+r], lres[lOff+r] = ninf, 0
			continue
		}
		scaleRow(oR, T(1/l))
		// L = ln Σ exp(s) = m·ln 2 + ln ℓ, m in log₂ units (one math.Log:
		// math.Log2 is a Frexp and a Log, which at d = 16 and 64 keys cost
		// 14% of the forward).
		L := float64(w.m[r])*math.Ln2 + math.Log(l)
		lse[lOff+r] = T(L)
		lres[lOff+r] = T(L - float64(T(L)))
	}
}

// forwardBlockTile applies keys [j0, j0+bc) of the key block at j0 to the
// query block of rows [i0+r0, i0+r1) (row state from w's row r0). A tile
// that a causal mask's diagonal crosses (its rows see different numbers of
// its keys) goes as sub-tiles of 64 rows and 64 keys instead, each row's
// keys still in increasing order: a half of the rows sees the first
// keysSplit keys it all sees on its own (the one-pass gemm.ScoreExp), and
// the rest of the keys it sees (the two passes of scoreSoftmaxTile, which
// computes 3/4 of a 64×64 diagonal sub-tile, against 3/4 of the whole
// 128×128 tile, half of it in the slower two passes, before: 1–3% off the
// causal N = 1024 forward on one core of the development Xeon). Every other
// tile, and every tile where ScoreExp does not run (float64, AVX2), is one
// forwardTile.
func forwardBlockTile[T Float](p *params, w *fwdScratch[T], q, ktB, v, o []T, b, h, i0, r0, r1, j0, bc, kvOff int) {
	rowLim := w.rowLim
	seen := func(r int) int { return min(max(rowLim[r]-j0, 0), bc) } // keys of the tile row r sees
	if r1-r0 <= keysSplit || seen(r0) == seen(r1-1) || !scoreExpRuns[T](p.D, T(p.Scale*log2e)) {
		forwardTile(p, w, q, ktB, v, o, b, h, i0+r0, i0+r1, r0, j0, 0, bc, kvOff)
		return
	}
	for h0 := r0; h0 < r1; h0 += keysSplit {
		h1 := min(h0+keysSplit, r1)
		first, last := seen(h0), seen(h1-1) // (the limits grow with the row)
		c0 := 0
		if first >= keysSplit && last > keysSplit { // every row sees the first keysSplit keys
			forwardTile(p, w, q, ktB, v, o, b, h, i0+h0, i0+h1, h0, j0, 0, keysSplit, kvOff)
			c0 = keysSplit
		}
		if last > c0 {
			// The keys from c0 the half's rows see, in whole strips of 64.
			n := min((last-c0+keysSplit-1)/keysSplit*keysSplit, bc-c0)
			forwardTile(p, w, q, ktB, v, o, b, h, i0+h0, i0+h1, h0, j0, c0, n, kvOff)
		}
	}
}

// keysSplit is forwardBlockTile's sub-tile: rows and keys (the AVX-512
// score kernel's strip of 64 keys).
const keysSplit = 64

// forwardTile applies keys [j0+c0, j0+c0+bc) (of the key block at j0, or its
// part below the group's key limit) to query rows [i0, i1) of head (b, h),
// whose row state starts at w's row rs: the online-softmax step of
// flashForward. ktB is the key block's Kᵀ (d rows of its full =
// min(blockK, Nk − j0) keys: forwardBlocks); the block's values are at
// v[kvOff + j0·d:].
func forwardTile[T Float](p *params, w *fwdScratch[T], q, ktB, v, o []T, b, h, i0, i1, rs, j0, c0, bc, kvOff int) {
	d, br := p.D, i1-i0
	qOff := ((b*p.H+h)*p.Nq + i0) * d
	qT := q[qOff : qOff+br*d]
	oT := o[qOff : qOff+br*d]
	m, l, rowLim := w.m[rs:rs+br], w.l[rs:rs+br], w.rowLim[rs:rs+br]
	nv := w.nv[:br]
	for r := range nv {
		nv[r] = min(max(rowLim[r]-j0-c0, 0), bc)
	}
	// Kᵀ's block: d rows of the block's `full` keys, from column c0.
	full := len(ktB) / d
	ktC := ktB[c0:]
	alpha := T(p.Scale * log2e)
	// P in w.s, ld apart.
	ld, ok := scoreExpTile(w, qT, ktC, full, full-c0, br, bc, d, alpha, nv, rs, oT)
	if !ok {
		ld = bc
		scoreSoftmaxTile(w, qT, ktC, full, w.s[:br*bc], br, bc, d, alpha, nv, rs, m, l, oT)
	}
	// O += P·V, each row of P over its visible keys only (see gemmPrefix:
	// a NaN in a key that the causal mask hides from the row must not
	// reach it as 0·NaN). The rows' first tile (keys from 0) sets O = P·V
	// instead: O is not cleared before (forwardBlocks), and a row that sees
	// none of the tile's keys gets zeros.
	k0 := j0 + c0
	gemmPrefix(&w.ws, &w.pb, false, br, d, nv, 1, w.s, ld, v[kvOff+k0*d:kvOff+(k0+bc)*d], d, k0 == 0, oT, d)
}

// scoreExpTile computes P = 2^(S − m) with S = alpha·Q·Kᵀ (qT's br rows
// of d values; ktB Kᵀ's block from the tile's first key: d rows `full`
// apart, of which avail keys are the block's) into w.s, ld
// apart, in one pass on gemm.ScoreExp, where the exponentials are taken
// while the scores are in the micro-kernel's registers: the
// online-softmax step of forwardTile for the tile of rows from w's row
// rs, whose output rows are oT. A row's shift m (w.m) moves only where
// the tile's scores pass it by more than gemm.ScoreExpTau (w.grow then
// rescales the row's output and sum): the probabilities are at most 2^τ.
//
// Row r sees the tile's first nv[r] ≤ bc keys. Where every row sees all
// of them and bc is whole 64-key strips, the tile is one ScoreExp (ld =
// bc); where every row sees the same bc keys but bc is not whole strips
// (the last keys before padding), one gemm.ScoreExpMasked over the strips
// that hold them (ld = bc rounded up to a strip): the scores of the keys
// past bc (any value, NaN included) never reach m, ℓ or P, whose entries
// there are 0. It returns false, computing nothing, where ScoreExp does
// not serve the tile: float32 on AVX-512 with d ≤ 128, alpha > 0, the
// strips within the block (full keys; the last block of a head of Nk keys
// not a multiple of 64 takes scoreSoftmaxTile), and every row seeing the
// same keys. The diagonal tile of a causal mask, where nv grows row by
// row, takes scoreSoftmaxTile too: on one core of the development machine
// (Xeon, AVX-512) ScoreExpMasked there was 4–6% slower per diagonal tile
// than the two passes (it takes exponentials of 3/4 of the tile, where
// OnlineExp2Rows takes those of the visible half), and 6–8% faster on a
// tile whose rows all see 100 of its 128 keys (alternating in one
// process, d = 64 and 128).
func scoreExpTile[T Float](w *fwdScratch[T], qT, ktB []T, full, avail, br, bc, d int, alpha T, nv []int, rs int, oT []T) (ld int, ok bool) {
	ld = (bc + gemm.ScoreExpStrip - 1) / gemm.ScoreExpStrip * gemm.ScoreExpStrip
	if ld > avail || nv[0] != nv[br-1] || !scoreExpRuns[T](d, alpha) {
		return 0, false
	}
	s32 := any(w.s[:br*ld]).([]float32)
	w.tileO, w.tileRS, w.d = oT, rs, d
	q32, kt32, m32, lv := any(qT).([]float32), any(ktB).([]float32), any(w.m[rs:rs+br]).([]float32), w.lv[8*rs:8*(rs+br)]
	var err error
	if nv[0] == ld { // every row sees every key
		err = gemm.ScoreExp(br, ld, d, float32(alpha), q32, d, kt32, full, s32, ld, m32, lv, w.grow)
	} else {
		err = gemm.ScoreExpMasked(br, ld, d, float32(alpha), q32, d, kt32, full, s32, ld, nv, m32, lv, w.grow)
	}
	if err != nil {
		panic("attention: score tile: " + err.Error())
	}
	return ld, true
}

// scoreExpRuns reports whether gemm.ScoreExp serves the scores of
// element type T at head dimension d with alpha = scale·log₂e: float32 on
// AVX-512 with d ≤ 128 and alpha > 0 (scoreExpTile's kernel, and the
// condition under which forwardBlockTile splits a diagonal tile for it).
func scoreExpRuns[T Float](d int, alpha T) bool {
	_, f32 := any(alpha).(float32)
	return f32 && alpha > 0 && gemm.HasScoreExp(d)
}

// scoreSoftmaxTile is forwardTile's online-softmax step in two passes: S =
// alpha·Q·Kᵀ (as scoreExpTile), then P = 2^(S − m) with each row's
// running maximum m, and the rescale of the rows whose maximum grew.
func scoreSoftmaxTile[T Float](w *fwdScratch[T], qT, ktB []T, full int, s []T, br, bc, d int, alpha T, nv []int, rs int, m []T, l []float64, oT []T) {
	// S = alpha·Q·Kᵀ with Kᵀ's block: d rows of the block's length
	// `full`, of which the first bc columns (keys below the limit) are
	// read. Each band of rows computes only the key columns its rows see
	// (see scoreBands): on the diagonal of a causal mask the first rows
	// see few keys.
	for r0 := 0; r0 < br; {
		r1, cols := scoreBand(nv, r0, bc)
		if cols > 0 {
			tileGemm(&w.ws, false, false, r1-r0, cols, d, alpha, qT[r0*d:], d, ktB, full, 0, s[r0*bc:], bc)
		}
		r0 = r1
	}
	// P = 2^(S − m) with the running maximum m updated, one pass per tile
	// (vec.OnlineExp2Rows; it reads no entry beyond a row's nv and sets
	// those to 0); then the rows whose maximum grew rescale their output
	// and sum by 2^(m_old − m_new).
	mOld := w.mOld[:br]
	copy(mOld, m)
	vec.OnlineExp2Rows(s, bc, br, bc, nv, m, w.sum[:br])
	for r := 0; r < br; r++ {
		if nv[r] == 0 { // this row sees none of these keys
			continue
		}
		// A row's first visible block (mo = −Inf) finds ℓ = 0 and its
		// output row about to be overwritten by the tile's P·V (the key
		// block at 0: see forwardTile): nothing to rescale.
		if mo, mn := mOld[r], m[r]; mn != mo && !math.IsInf(float64(mo), -1) {
			if a := exp2(mo - mn); a != 1 {
				scaleRow(oT[r*d:(r+1)*d], a)
				w.rescale(rs+r, float64(a))
			}
		}
		l[r] += w.sum[r]
	}
}

// scoreBand returns the end r1 of the band of score rows starting at r0 and
// the number of key columns cols that its product computes: the band's
// rows see at most nv[r1−1] ≤ cols of the tile's bc keys (nv is
// nondecreasing). With g = bandGrain(bc), cols is a multiple of g below bc
// or bc; rows go in bands of g, and consecutive bands of the same cols are
// one product. A tile no mask crosses is one band; on the diagonal tile of
// a causal mask the first half of the rows computes half of the columns
// (3/4 of a 128×128 tile; 3/4 of a 64×64 one in bands of 32). cols = 0: no
// row of the band sees a key (its scores are never read).
func scoreBand(nv []int, r0, bc int) (r1, cols int) {
	g := bandGrain(bc)
	colsOf := func(r1 int) int {
		return min(bc, (nv[r1-1]+g-1)/g*g)
	}
	r1 = min(r0+g, len(nv))
	cols = colsOf(r1)
	for r1 < len(nv) {
		next := min(r1+g, len(nv))
		if colsOf(next) != cols {
			break
		}
		r1 = next
	}
	return r1, cols
}

// keyBand returns the end r1 of the band of key rows of a transposed
// backward tile starting at r0 and the first query column c0 its products
// compute: key row r is seen by the columns c ≥ first[r] (first is
// nondecreasing, at most br), so the band's rows need the columns from
// first[r0] on; with g = bandGrain(br), c0 is first[r0] rounded down to a
// multiple of g, or br when no column sees the band. Rows go in bands of
// g; consecutive bands of the same c0 are one product. A tile no mask
// crosses is one band with c0 = 0.
func keyBand(first []int, r0, br int) (r1, c0 int) {
	g := bandGrain(br)
	startOf := func(r int) int {
		if first[r] >= br {
			return br
		}
		return first[r] / g * g
	}
	c0 = startOf(r0)
	r1 = min(r0+g, len(first))
	for r1 < len(first) && startOf(r1) == c0 {
		r1 = min(r1+g, len(first))
	}
	return r1, c0
}

// bandGrain is the granularity of scoreBand and keyBand on a tile of width
// columns: the AVX-512 micro-kernel's column strip (64 float32 values) on
// tiles wider than 64, half of it on narrower ones (the tiles of heads of
// at most 64 rows, as in examples/gpt: a 64×64 causal diagonal tile then
// computes 3/4 of its scores instead of all, its 32-column band on the
// 12×32 kernel; +2–8% at those shapes on one core). On 128-wide tiles 32
// measured 1–2% slower (more, smaller products).
func bandGrain(width int) int {
	if width > 64 {
		return 64
	}
	return 32
}

// Backward parallelism. A unit of work is (b, kv head, chunk): it owns the
// dK and dV rows of the key/value blocks of its chunk (chunkOf) of that kv
// head, loops over the query heads sharing it (grouped-query attention
// sums their contributions here, without races) and over the query blocks
// that see each block. dQ receives contributions from every key block;
// chunk 0 adds them into dq itself, chunk c ≥ 1 into a partial buffer of
// its own, and the partials are added to dq afterwards in chunk order. The
// split depends only on the problem's sizes, never on the number of cores
// or on scheduling, so the result is bit-identical from run to run.
const (
	// backwardUnits is the number of units the backward aims for, so that
	// small batches and few kv heads still spread over the cores: 4 per
	// core on 16 cores with B·Hkv = 8, so that a slow core or the last
	// unit to finish costs a quarter of a unit of idle time on the others.
	backwardUnits = 64
	// maxPartialBytes bounds the memory of the dQ partial buffers.
	maxPartialBytes = 32 << 20
)

// chunkOf returns the chunk that owns key block j: the blocks are dealt to
// the chunks in rounds, forward in even rounds and backward in odd ones
// (0, 1, …, c−1, c−1, …, 1, 0, 0, 1, …), so that under a causal mask, where
// the cost of a block falls with j, each chunk pairs expensive blocks with
// cheap ones and the chunks cost about the same.
func chunkOf(j, chunks int) int {
	round, c := j/chunks, j%chunks
	if round%2 == 1 {
		c = chunks - 1 - c
	}
	return c
}

// backwardChunks returns how many key-block chunks each (b, kv head) is split
// into for the backward: enough for backwardUnits units, at most one per
// key block, within maxPartialBytes of dQ partials, and then, where the
// units reach unitMultiple, rounded down so that their number is a
// multiple of it: equal units then give equal shares to 2, 4, 8 or 16
// workers (40 units on 16 workers would leave half of them idle for the
// last third of the time).
func backwardChunks(p *params, elemSize int) int {
	nKB := (p.Nk + blockK - 1) / blockK
	kv := p.B * p.Hkv
	c := (backwardUnits + kv - 1) / kv
	c = min(c, nKB)
	dqBytes := p.B * p.H * p.Nq * p.D * elemSize
	if dqBytes > 0 {
		c = min(c, 1+maxPartialBytes/dqBytes)
	}
	if step := unitMultiple / gcd(kv, unitMultiple); c >= step {
		c -= c % step
	}
	return max(c, 1)
}

// unitMultiple is the number the backward's units are made a multiple of
// where there are enough (see backwardChunks).
const unitMultiple = 16

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// flashBackward computes the gradients of flashForward's o and lse given
// their upstream gradients do and dlse (dlse may be nil: no gradient
// reaches L). With P_ij = exp(s_ij − L_i) recomputed from the saved L and
// the visible keys only,
//
//	D_i   = Σ_c do_ic·o_ic − dlse_i
//	dV_j += Σ_i P_ij·do_i            dP_ij = do_i·v_j
//	dS_ij = P_ij·(dP_ij − D_i)
//	dQ_i += Scale·Σ_j dS_ij·k_j      dK_j += Scale·Σ_i dS_ij·q_i
//
// tile by tile (S and P for one key block × query block at a time, no
// Nq×Nk buffer). dq, dk and dv are fully written. Rows with L = −Inf (no
// visible key) contribute nothing and get dq = 0. lres is the residual of L
// that flashForward wrote next to lse.
//
// The tiles are held transposed (key rows, query columns: Sᵀ = K·Qᵀ), so
// that the per-query shifts L and D run along the rows
// (vec.Exp2MulDiffRows). Q and dO are copied once in transposed blocks so that
// Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ are A·B products; dV += Pᵀ·dO and
// dK += dSᵀ·Q read dO and Q as stored, and dQ += dS·K reads dSᵀ
// transposed (an Aᵀ·B product).
func flashBackward[T Float](p *params, q, k, v, o, lse, lres, do, dlse, dq, dk, dv []T) {
	d, g := p.D, p.H/p.Hkv
	bh := p.B * p.H

	var elem T
	chunks := backwardChunks(p, int(sizeOf(elem)))
	nKB := (p.Nk + blockK - 1) / blockK

	// One buffer, kept between calls (getBuf), for the temporaries: D and L·log₂e
	// (hi, lo) per query row, Q and dO in transposed blocks, and the dQ
	// partials of chunks 1, 2, …
	nr := bh * p.Nq
	buf := getBuf[T](3*nr + (1+chunks)*len(q))
	defer putBuf(buf)
	delta, buf := buf[:nr], buf[nr:]
	lse2 := shifts[T]{hi: buf[:nr], lo: buf[nr : 2*nr]}
	buf = buf[2*nr:]
	tr := transposed[T]{q: buf[:len(q)], do: buf[len(q) : 2*len(q)]}
	buf = buf[2*len(q):]
	partials := make([][]T, chunks)
	partials[0] = dq
	for c := 1; c < chunks; c++ {
		partials[c], buf = buf[:len(dq)], buf[len(dq):]
	}

	// Pre-pass: D and L·log₂e per query row, the latter computed in
	// float64 from L and its residual and split into hi + lo parts of T.
	parallel.For(nr, 256, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			acc := vec.Dot(o[r*d:(r+1)*d], do[r*d:(r+1)*d])
			if dlse != nil && !math.IsInf(float64(lse[r]), -1) {
				acc -= float64(dlse[r])
			}
			delta[r] = T(acc)
			l2 := (float64(lse[r]) + float64(lres[r])) * log2e
			lse2.hi[r] = T(l2)
			lse2.lo[r] = T(l2 - float64(lse2.hi[r]))
			if math.IsInf(l2, -1) {
				lse2.lo[r] = 0
			}
		}
	})
	transposeBlocks(tr.q, q, bh, p.Nq, d, blockQ)
	transposeBlocks(tr.do, do, bh, p.Nq, d, blockQ)

	nUnits := p.B * p.Hkv * chunks
	headMajor := nUnits >= 8*parallel.Workers()
	gk := backwardGroup(d, int(sizeOf(elem)))
	runUnits(nUnits, &bwdPools[poolIndex[T]()], newBwdScratch[T], func(w *bwdScratch[T], u int) {
		// Chunk-major order where the units are few per worker: under a
		// causal mask with one block per chunk the most expensive units
		// (the first key blocks, seen by the most queries) are taken
		// first, and the cheap ones fill the gaps at the end. Where each
		// worker has many units (8 or more), head-major order instead:
		// a worker's consecutive units then mostly share a head, whose Q,
		// dO and their transposed copies stay in its L2 cache (a quarter
		// of the units' traffic to L3 at N = 1024 on 2 workers). The
		// order never changes a result: each unit writes its own rows.
		var c, bk int
		if headMajor {
			bk, c = u/chunks, u%chunks
		} else {
			c, bk = u/(p.B*p.Hkv), u%(p.B*p.Hkv)
		}
		b, kvh := bk/p.Hkv, bk%p.Hkv
		// The unit is the only writer of its heads' rows of partials[c]
		// and of its key blocks' rows of dk and dv, on its own core. The
		// rows of partials[c] from partialStart on are written first by
		// the tiles of the chunk's first key block (c: see chunkOf), which
		// overwrite instead of adding (backwardBlocks); of dq (chunk 0)
		// the rows before, which no key reaches, are cleared here.
		if c == 0 {
			i0 := partialStart(p, b, 0)
			for h := kvh * g; h < (kvh+1)*g; h++ {
				off := (b*p.H + h) * p.Nq * d
				clear(partials[0][off : off+i0*d])
			}
		}
		// The chunk's key blocks in increasing order, their dk, dv rows
		// cleared. Keys from keyEnd on are padding: no tile holds them,
		// so whatever they hold is never read (0·NaN would be NaN).
		keyEnd := p.KeyEnd(b)
		js := w.blocks[:0]
		for j := 0; j < nKB; j++ {
			if chunkOf(j, chunks) != c {
				continue
			}
			j0 := j * blockK
			kOff := ((b*p.Hkv+kvh)*p.Nk + j0) * d
			kEnd := ((b*p.Hkv+kvh)*p.Nk + min(j0+blockK, p.Nk)) * d
			clear(dk[kOff:kEnd])
			clear(dv[kOff:kEnd])
			if j0 < keyEnd { // else nobody sees key j0
				js = append(js, j)
			}
		}
		// Groups of up to gk key blocks walk the query blocks once.
		for firstGroup := true; len(js) > 0; firstGroup = false {
			grp := js[:min(gk, len(js))]
			js = js[len(grp):]
			for h := kvh * g; h < (kvh+1)*g; h++ {
				backwardBlocks(p, w, q, k, v, do, &tr, &lse2, delta, partials[c], dk, dv, b, h, kvh, grp, keyEnd, firstGroup)
			}
		}
	})

	if chunks > 1 {
		// dq += partials[1] + partials[2] + …, each over the rows its
		// chunk wrote, in pieces of reducePiece rows of one head.
		nPieces := (p.Nq + reducePiece - 1) / reducePiece
		parallel.For(bh*nPieces, 4, func(lo, hi int) {
			for u := lo; u < hi; u++ {
				head, r0 := u/nPieces, (u%nPieces)*reducePiece
				r1, off := min(r0+reducePiece, p.Nq), head*p.Nq*d
				for c := 1; c < chunks; c++ {
					if s := max(r0, partialStart(p, head/p.H, c)); s < r1 {
						addRows(dq[off+s*d:off+r1*d], partials[c][off+s*d:off+r1*d])
					}
				}
			}
		})
	}
}

// reducePiece is the number of query rows of one head in a unit of the
// dQ reduction.
const reducePiece = 64

// partialStart returns the first query row of batch b to which chunk c
// adds a dQ contribution: the first row of the first query block that
// sees the chunk's first key block (block c, the smallest of the chunk:
// see chunkOf), or Nq when the chunk holds no key of batch b. Under a
// causal mask the chunks of later key blocks skip the first query blocks,
// so their partial rows there are neither cleared nor added.
func partialStart(p *params, b, c int) int { return bwdQueryStart(p, b, c*blockK) }

// shifts holds L·log₂e per query row as hi + lo: the float64 value split
// into two values of T, so that the float32 probabilities recomputed from
// it are as accurate as the forward's (a float32 L·log₂e alone, up to ~15
// in magnitude, would carry an error of several ulp of 1 into every P).
type shifts[T Float] struct{ hi, lo []T }

// transposed holds copies of q and do in transposed blocks of blockQ rows
// (transposeBlocks).
type transposed[T Float] struct{ q, do []T }

// bwdScratch holds one worker's buffers for the backward.
type bwdScratch[T Float] struct {
	ws      gemm.Workspace[T] // the tile products' buffers
	pb      prefixBuf[T]      // gemmPrefix's staircase coefficients
	pt, dst []T               // Pᵀ, dPᵀ then dSᵀ (blockK×blockQ)
	first   []int             // per key of the tile: its first query column (blockK)
	nv      []int             // per query of the tile: its visible keys (blockQ)
	blocks  []int             // the unit's key blocks
	start   []int             // per key block of a group: its first query block's row
}

func newBwdScratch[T Float]() *bwdScratch[T] {
	return &bwdScratch[T]{
		pt:    make([]T, blockK*blockQ),
		dst:   make([]T, blockK*blockQ),
		first: make([]int, blockK),
		nv:    make([]int, blockQ),
		start: make([]int, 4),
	}
}

// backwardGroup returns how many key blocks of a chunk the backward walks
// the query blocks with at once (1…4): as many as keep their K, V, dK and
// dV blocks (4·blockK·d elements each) within 512 KiB, so that they stay
// in the core's L2 cache beside the query side's blocks, which are then
// read once per group instead of once per key block.
func backwardGroup(d, elemSize int) int {
	return min(4, max(1, (512<<10)/(4*blockK*d*elemSize)))
}

// backwardBlocks adds the contributions of the key blocks js (increasing,
// none of them padding from its start) of kv head kvh and query head h
// (batch b) to dq (all query blocks that see the keys), dk and dv: see
// flashBackward. Keys from keyEnd on are never read. The query blocks are
// walked once for the whole group, each applied to every key block of the
// group that it sees while the query block is in the cache; for each
// output the contributions add in the order of a walk block by block
// (for a dq block the key blocks in increasing order, for a dk or dv
// block the query blocks in increasing order), so the grouping never
// changes a result. With firstGroup set, js[0] is the unit's first key block
// and its tiles overwrite dq's rows (from js[0]'s first query block on, the
// rows every later tile of the unit adds to) instead of adding to them.
func backwardBlocks[T Float](p *params, w *bwdScratch[T], q, k, v, do []T, tr *transposed[T], lse2 *shifts[T], delta, dq, dk, dv []T, b, h, kvh int, js []int, keyEnd int, firstGroup bool) {
	// The query blocks that see key j0 start at the block of its first
	// query; later keys are seen by later rows only.
	start := w.start[:len(js)]
	for x, j := range js {
		start[x] = bwdQueryStart(p, b, j*blockK)
	}
	for i0 := start[0]; i0 < p.Nq; i0 += blockQ {
		for x, j := range js {
			if i0 < start[x] {
				continue
			}
			j0 := j * blockK
			backwardTile(p, w, q, k, v, do, tr, lse2, delta, dq, dk, dv, b, h, kvh, j0, min(j0+blockK, keyEnd), i0, firstGroup && x == 0)
		}
	}
}

// backwardTile adds the contributions of keys [j0, j1) of kv head kvh and
// query rows [i0, i0+blockQ) of query head h (batch b) to dq, dk and dv:
// see flashBackward. The keys lie in one key block (j0 a multiple of
// blockK) and are all non-padding; keys of the block from j1 on are never
// read. With overDQ set the tile's rows of dq are overwritten (set to the
// tile's contribution) instead of added to.
func backwardTile[T Float](p *params, w *bwdScratch[T], q, k, v, do []T, tr *transposed[T], lse2 *shifts[T], delta, dq, dk, dv []T, b, h, kvh, j0, j1, i0 int, overDQ bool) {
	d, bc := p.D, j1-j0
	kvOff := ((b*p.Hkv+kvh)*p.Nk + j0) * d
	kB, vB := k[kvOff:kvOff+bc*d], v[kvOff:kvOff+bc*d]
	dkB, dvB := dk[kvOff:kvOff+bc*d], dv[kvOff:kvOff+bc*d]
	alpha := T(p.Scale * log2e)
	scale := T(p.Scale)
	rowBase := (b*p.H + h) * p.Nq
	ws := &w.ws

	i1 := min(i0+blockQ, p.Nq)
	br := i1 - i0
	qOff := (rowBase + i0) * d
	qB, doB, dqB := q[qOff:qOff+br*d], do[qOff:qOff+br*d], dq[qOff:qOff+br*d]
	qtB, dotB := tr.q[qOff:qOff+br*d], tr.do[qOff:qOff+br*d] // d×br
	pt, dst := w.pt[:bc*br], w.dst[:bc*br]
	hiB, loB := lse2.hi[rowBase+i0:rowBase+i1], lse2.lo[rowBase+i0:rowBase+i1]
	deltaB := delta[rowBase+i0 : rowBase+i1]

	// Pᵀ = exp(Sᵀ − L), recomputed. Row jj (key j0+jj) is seen by the
	// queries from FirstQuery on: the columns before are masked, 0.
	// Masked entries are selected, never computed from the tile
	// products: a NaN in a key hidden from a query by the causal mask
	// must not reach that query.
	first := w.first[:bc]
	for jj := range first {
		first[jj] = min(max(p.FirstQuery(b, j0+jj)-i0, 0), br)
	}
	// Sᵀ = alpha·K·Qᵀ and dPᵀ = V·dOᵀ, each band of key rows over the
	// query columns that see its keys only (see keyBand): on the diagonal
	// of a causal mask the last keys are seen by the last queries only.
	for r0 := 0; r0 < bc; {
		r1, c0 := keyBand(first, r0, br)
		if c0 < br {
			tileGemm(ws, false, false, r1-r0, br-c0, d, alpha, kB[r0*d:], d, qtB[c0:], br, 0, pt[r0*br+c0:], br)
			tileGemm(ws, false, false, r1-r0, br-c0, d, 1, vB[r0*d:], d, dotB[c0:], br, 0, dst[r0*br+c0:], br)
		}
		r0 = r1
	}
	// Pᵀ = 2^(Sᵀ − L·log₂e) and dSᵀ = Pᵀ∘(dPᵀ − D) in one pass; it sets
	// the masked entries (c < first[r]) to 0 without reading them.
	vec.Exp2MulDiffRows(pt, dst, br, bc, br, first, hiB, loB, deltaB)
	// dV += Pᵀ·dO and dK += scale·dSᵀ·Q, each band over the queries that
	// see its keys (the others' Pᵀ and dSᵀ entries are 0: leaving them
	// out drops exact zeros only).
	for r0 := 0; r0 < bc; {
		r1, c0 := keyBand(first, r0, br)
		if c0 < br {
			tileGemmChain(ws, false, false, r1-r0, d, br-c0, 1, pt[r0*br+c0:], br, doB[c0*d:], d, 1, dvB[r0*d:], d)
			tileGemmChain(ws, false, false, r1-r0, d, br-c0, scale, dst[r0*br+c0:], br, qB[c0*d:], d, 1, dkB[r0*d:], d)
		}
		r0 = r1
	}
	// dQ += scale·dS·K = scale·(dSᵀ)ᵀ·K, each query row over its visible
	// keys only.
	for r := 0; r < br; r++ {
		w.nv[r] = min(max(p.KeyLimit(b, i0+r)-j0, 0), bc)
	}
	gemmPrefix(ws, &w.pb, true, br, d, w.nv[:br], scale, dst, br, kB, d, overDQ, dqB, d)
}

// sizeOf returns the size in bytes of one element of type T.
func sizeOf[T Float](T) uintptr {
	var z T
	switch any(z).(type) {
	case float32:
		return 4
	default:
		return 8
	}
}
