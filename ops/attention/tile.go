package attention

import (
	"github.com/flashgorgon/flashgorgon/internal/kernels/gemm"
	"github.com/flashgorgon/flashgorgon/internal/kernels/vec"
	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// This file holds the leaf kernels of the fused attention: the tile matrix
// products and the exp / rescale steps. The algorithm (kernel.go) only calls
// these functions, each on one tile or one row, so that the loop structure
// does not depend on how they are computed.
//
// The tile products run on internal/kernels/gemm (register-blocked
// AVX-512 / AVX2+FMA micro-kernels with split accumulators, float32 error at
// most gonum's), one gemm.Workspace per worker goroutine, allocation-free;
// the forward's exp step, on the tiles no mask crosses (float32, AVX-512,
// d ≤ 128), inside the score product's micro-kernel while the scores are
// in its registers (gemm.ScoreExp: scoreExpTile), elsewhere on
// internal/kernels/vec's tile kernels, one call per score tile
// (OnlineExp2Rows in the forward: running maximum, exponentials, row
// sums; Exp2MulDiffRows in the
// backward: P = exp(S − L) and dS = P∘(dP − D) in one pass; AVX-512
// assembly, elsewhere loops over the row kernels, the float32 argument of
// every exponential taken exactly). Both pick their instruction set from
// internal/isa. On the development machine's Zen 5 core a 64×64×64 float32
// tile product runs at 190–210 GFLOP/s (A·B a little faster than A·Bᵀ,
// whose B the kernel transposes while packing), against 14–20 for gonum's
// Sgemm that the tiles used before.

// Summation order. The float32 error rule (fused error within 2× of the
// decomposed path's, TestForwardGrid, TestGradientOracle, TestLargeLogits)
// binds the products whose results feed a cancellation or an exponential:
// the scores S = Q·Kᵀ (and Sᵀ = K·Qᵀ), where an error of the score is an
// error of the exponent, large with large logits, and dPᵀ = V·dOᵀ, from
// which dS = P∘(dP − D) subtracts D = rowsum(dO∘O), equal to dP where a row
// sees one key. They run on tileGemm: chunks of 4–16 depth steps summed
// into four totals (internal/kernels/gemm's Accumulation), whose flushes
// cost the Intel cores' FMA ports 10–15% of the product. The products that
// accumulate the outputs, O += P·V, dV += Pᵀ·dO, dK += scale·dSᵀ·Q and
// dQ += scale·dS·K, run on tileGemmChain, one FMA chain per entry along
// the tile's depth (at most blockQ or blockK steps; the decomposed path's
// O = P·V, a gonum A·B product, is one axpy chain along all Nk keys). On
// one core of the Xeon development machine the 6×64 register tile ran a
// 128-deep block at 95–96% of the FMA peak loop in one chain, 85% in
// chunks of 8 (64-deep: 90–93%, 75%; internal/kernels/gemm's
// BenchmarkChunks), and the tile products 1.15–1.17× faster
// (BenchmarkChainSplit); the kernels 1.09× (forward) and 1.10–1.12×
// (backward) per CPU-second (BenchmarkKernelSums of commit 34f4388, which switched
// the products by a package variable and was removed for it). Measured on
// the development machine (Intel Xeon, AVX-512), worst fused/decomposed
// ratios, before → after: forward grid 1.08 → 1.12, gradient grid
// 0.83 → 1.06, large logits o 1.22 → 1.22, gradients 1.31 → 1.31; with the
// score and dP products chained too (an experiment of the sixth session)
// they were 2.16, 70× (dq, dk where a row sees one key) and 2.73 / 2.94.

// tileGemm computes, on the calling goroutine with w's buffers,
//
//	c = alpha·op(a)·op(b) + beta·c      op(a) [m, k], op(b) [k, n], c [m, n]
//
// (gemm.Workspace.Gemm: op(x) = xᵀ when the flag is set, row strides lda,
// ldb, ldc). The kernels only pass shapes that fit their slices; an error
// here is a bug in them, and panics with the sizes.
func tileGemm[T Float](w *gemm.Workspace[T], tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if err := w.Gemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); err != nil {
		panic("attention: tile product: " + err.Error())
	}
}

// tileGemmChain is tileGemm summing each entry in one FMA chain along the
// tile's depth (gemm.Workspace.GemmChain): the products that accumulate
// the outputs (see Summation order above).
func tileGemmChain[T Float](w *gemm.Workspace[T], tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if err := w.GemmChain(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); err != nil {
		panic("attention: tile product: " + err.Error())
	}
}

// gemmPrefix adds to c (over = false) or sets c to (over = true) the
// product op(a)·b where row r of op(a) uses only its first n[r] columns
// (summed on tileGemmChain: gemmPrefix computes the outputs O += P·V and dQ):
//
//	c[r*ldc+j] += alpha·Σ_{l<n[r]} op(a)[r,l]·b[l*ldb+j]    (r < m, j < nc)
//
// (with over, c's rows are first set to 0: a row with n[r] = 0 gets zeros);
// with op(a) = a (row r at a[r*lda:]) or, when tA is set, aᵀ (a stored
// [k, m], row r of op(a) is column r of a). n[r] is the number of keys row
// r sees in the tile (a causal mask and padding hide a suffix of the keys),
// nondecreasing in r. The columns l ≥ n[r] of op(a) hold zeros (masked
// probabilities), but b's rows there belong to keys the row must not read:
// in one product over all columns a NaN or ±Inf there would reach the row
// as 0·NaN.
//
// A run of at least prefixGroup consecutive rows with equal n is one tile
// product (a tile that no mask crosses is a single product). Elsewhere (the
// diagonal tile of a causal mask, where n grows by one a row) the rows go
// in groups of prefixGroup: one product over the group's common prefix of
// keys, then each row's remaining keys (fewer than prefixGroup on the
// causal diagonal) one at a time, c_r += alpha·op(a)[r,l]·b_l, for the
// whole group in one vec.SubScaledRows (one vec.SubScaled per row and key
// cost as much in calls as in arithmetic at d = 16 or 32: 15% of the
// forward at examples/gpt's shapes). A product of one row per row would
// run the micro-kernel on mostly empty register tiles (it computes mr rows
// at a time): the diagonal tile then cost about three ordinary tiles.
// A group whose rows each see one key more than the row before (the
// causal diagonal) runs instead, where the machine has the kernel, as one
// gemm.Workspace.GemmChainStair: each row one chain over its own keys,
// the staircase summed in the micro-kernel's registers (on one core of the
// Xeon development machine the diagonal tile's O += P·V took 10 µs
// instead of 14–17, the whole tile 31–32 µs instead of 38–40; d = 64,
// alternating in one process).
// Which path a row takes depends on the mask only, never on the values.
func gemmPrefix[T Float](w *gemm.Workspace[T], pb *prefixBuf[T], tA bool, m, nc int, n []int, alpha T, a []T, lda int, b []T, ldb int, over bool, c []T, ldc int) {
	beta := T(1)
	if over {
		beta = 0
	}
	stairs := gemm.HasStair[T](nc)
	for r0 := 0; r0 < m; {
		r1 := r0 + 1
		for r1 < m && n[r1] == n[r0] {
			r1++
		}
		if r1-r0 < prefixGroup {
			r1 = min(r0+prefixGroup, m)
		}
		k0 := n[r0] // the group's common prefix (n is nondecreasing)
		aOff := r0 * lda
		if tA {
			aOff = r0
		}
		if stairs && r1-r0 == gemm.StairRows && isStair(n[r0:r1]) {
			// The causal diagonal's staircase in one kernel call, where
			// the machine has the kernel: each row one chain over its
			// own keys.
			ok, err := w.GemmChainStair(tA, nc, k0, alpha, a[aOff:], lda, b, ldb, beta, c[r0*ldc:], ldc)
			if err != nil {
				panic("attention: staircase product: " + err.Error())
			}
			if ok {
				r0 = r1
				continue
			}
		}
		switch {
		case k0 > 0:
			tileGemmChain(w, tA, false, r1-r0, nc, k0, alpha, a[aOff:], lda, b, ldb, beta, c[r0*ldc:], ldc)
		case over:
			for r := r0; r < r1; r++ {
				clear(c[r*ldc : r*ldc+nc])
			}
		}
		// Each row's keys past the common prefix, in chunks of up to
		// prefixChunk keys: c_r −= (−alpha·a[r,l])·b_l, l in order.
		for j0 := k0; j0 < n[r1-1]; j0 += prefixChunk {
			coef, cnt := pb.coef[:], pb.cnt[:]
			for r := r0; r < r1; r++ {
				k := min(max(n[r]-j0, 0), prefixChunk)
				cnt[r-r0] = k
				for j := 0; j < k; j++ {
					at := r*lda + j0 + j
					if tA {
						at = (j0+j)*lda + r
					}
					coef[(r-r0)*prefixChunk+j] = -alpha * a[at]
				}
			}
			vec.SubScaledRows(c[r0*ldc:], ldc, r1-r0, nc, coef, prefixChunk, cnt[:r1-r0], b[j0*ldb:], ldb)
		}
		r0 = r1
	}
}

// isStair reports whether each row of n sees one key more than the row
// before: the causal staircase of gemm.Workspace.GemmChainStair.
func isStair(n []int) bool {
	for i, x := range n {
		if x != n[0]+i {
			return false
		}
	}
	return true
}

// prefixChunk is the number of keys past a group's common prefix that
// gemmPrefix hands vec.SubScaledRows at once: the causal staircase's at
// most prefixGroup−1 in one call.
const prefixChunk = 8

// prefixBuf holds gemmPrefix's coefficients and counts for one call of
// vec.SubScaledRows (a worker's, in its scratch: on the stack they would
// escape through the kernel's function value).
type prefixBuf[T Float] struct {
	coef [prefixGroup * prefixChunk]T
	cnt  [prefixGroup]int
}

// prefixGroup is the number of rows gemmPrefix groups on a staircase of
// row lengths: the micro-kernel's row count mr on AVX2 and AVX-512, so
// that a group's product is one full register tile high.
const prefixGroup = 6

// scaleRow multiplies x by a in place: the rescale step (O·2^(m_old − m_new)
// when the running maximum grows, O/ℓ at the end).
func scaleRow[T Float](x []T, a T) {
	vec.Scale(x, a)
}

// addRows adds x into dst: dst[i] += x[i] (one rounding each).
func addRows[T Float](dst, x []T) {
	vec.SubScaled(dst, dst, x, -1)
}

// transposeBlocks copies src, viewed as heads×n rows of d values, into dst
// of the same size, each block of `block` rows (the last one of a head
// possibly shorter, rows = min(block, n − r0)) transposed in place of the
// block: row r0+r, column c of a head goes to
//
//	dst[(head·n + r0)·d + c·rows + r]
//
// so that a block of Xᵀ is a contiguous d×rows matrix: the B operand of an
// A·B tile product with B = Xᵀ (faster than A·Bᵀ with X, which transposes
// X's block again in every product that reads it). Blocks go to the
// workers in pieces of at least 4 (B = 1, H = 8, N = 1024: 16 pieces, one
// per core of a 16-core machine).
func transposeBlocks[T Float](dst, src []T, heads, n, d, block int) {
	nb := (n + block - 1) / block
	parallel.For(heads*nb, 4, func(lo, hi int) {
		for u := lo; u < hi; u++ {
			head, r0 := u/nb, (u%nb)*block
			rows := min(block, n-r0)
			off := (head*n + r0) * d
			vec.Transpose(dst[off:off+rows*d], src[off:off+rows*d], rows, d)
		}
	})
}

// zeroRow sets x to zero.
func zeroRow[T Float](x []T) {
	clear(x)
}
