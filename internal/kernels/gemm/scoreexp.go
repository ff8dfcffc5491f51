package gemm

import "fmt"

// ScoreExpTau is τ of ScoreExp: how far, in log₂ units, a row's largest
// score may pass its shift before the shift moves.
const ScoreExpTau = 8

// ScoreExpStrip is the number of columns of ScoreExp's strips.
const ScoreExpStrip = 64

// ScoreExp is the forward step of ops/attention's online softmax with the
// exponentials taken in the score product's micro-kernel, while the
// scores are still in its registers (float32, AVX-512: HasScoreExp). For
// the rows i < m of a score tile and its columns j < n (n a multiple of
// ScoreExpStrip), column strip by column strip,
//
//	s_ij = alpha·Σ_{p<k} a[i·lda + p]·b[p·ldb + j]    summed as Workspace.Gemm sums it (k ≤ 128: one depth block)
//	c[i·ldc + j] = 2^(s_ij − m_i)                        0 where s_ij − m_i < −125
//	lv[8i … 8i+7] += Σ_j c[i·ldc + j]                     8 float64 lanes a row
//
// where m_i, row i's shift (ref[i] on entry, updated in place), moves to
// the largest s_ij of a strip when that passes m_i + ScoreExpTau (or m_i is
// −Inf), and stays otherwise: the probabilities of a row are then at most
// 2^τ, and a shift that moves once on a row's first keys and rarely after
// costs no rescaling (FlashAttention-4's lazy rescale). When a strip moves
// m_i from old to new, grow(i, old, new) is called after the strip, before
// the next one: the caller rescales its own state of row i (the output
// row, a sum outside lv) by 2^(old − new) and returns the factor a it
// used, and ScoreExp multiplies the row's columns before the strip and its
// lv before the strip by the same a (in float64, rounded once; results
// below 2⁻¹²⁵ become 0). The strip's own entries are in units of new.
//
// The scores are rounded as Gemm's C, s = fl(alpha·t), and the argument
// a = fl(s − m_i) as vec.OnlineExp2Rows takes it (exact where s ≥ m_i/2;
// a backward that recomputes s by the same sums then finds the same
// scores: with a = fl(alpha·t − m_i) in one FMA, unrounded, ops/attention's
// TestLargeLogits read a gradient error ratio of 2.39 instead of 1.31),
// and 2^a is vec.OnlineExp2Rows's AVX-512 exponential (within 1.1 ulp); a row's 64 results of a strip are summed 4 a lane in
// float32 before float64. alpha must be positive (the row's largest score
// is taken as alpha times the largest sum). A NaN score gives NaN for its
// entry and the row's sum. c must not overlap a, b, ref or lv.
func ScoreExp(m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, ref []float32, lv []float64, grow func(i int, old, new float32) float32) error {
	return scoreExpChecked(m, n, k, alpha, a, lda, b, ldb, c, ldc, nil, ref, lv, grow)
}

// ScoreExpMasked is ScoreExp where row i sees its first lim[i] columns
// only (0 ≤ lim[i] ≤ n), the attention masks' visible keys of a tile (a
// causal mask's diagonal, key padding):
//
//	c[i·ldc + j] = 2^(s_ij − m_i)   j < lim[i]
//	c[i·ldc + j] = 0                lim[i] ≤ j < n
//
// m_i, grow and lv as ScoreExp's over the columns below lim[i] alone: the
// other entries never reach the row's maximum, sum or probabilities,
// whatever values b holds there (NaN, ±Inf): they are selected away, never
// multiplied by 0. A row that sees no column keeps its shift and sum. The
// rows of a strip of 6 compute the 64-column strips up to the largest of
// their lim only: b's columns beyond are not read.
func ScoreExpMasked(m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, lim []int, ref []float32, lv []float64, grow func(i int, old, new float32) float32) error {
	if len(lim) < m {
		return fmt.Errorf("gemm: ScoreExpMasked of %d rows: lim holds %d", m, len(lim))
	}
	for i, l := range lim[:m] {
		if l < 0 || l > n {
			return fmt.Errorf("gemm: ScoreExpMasked: lim[%d] = %d is outside [0, %d]", i, l, n)
		}
	}
	return scoreExpChecked(m, n, k, alpha, a, lda, b, ldb, c, ldc, lim[:m], ref, lv, grow)
}

// scoreExpChecked checks ScoreExp's arguments and runs scoreExp.
func scoreExpChecked(m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, lim []int, ref []float32, lv []float64, grow func(i int, old, new float32) float32) error {
	switch {
	case !HasScoreExp(k):
		return fmt.Errorf("gemm: ScoreExp of depth %d does not run on this machine", k)
	case m < 1 || n < 0 || n%ScoreExpStrip != 0:
		return fmt.Errorf("gemm: ScoreExp of %d×%d: m ≥ 1 and n a multiple of %d", m, n, ScoreExpStrip)
	case !(alpha > 0):
		return fmt.Errorf("gemm: ScoreExp with alpha = %v: it must be positive", alpha)
	case len(ref) < m || len(lv) < 8*m:
		return fmt.Errorf("gemm: ScoreExp of %d rows: ref holds %d, lv %d (want %d, %d)", m, len(ref), len(lv), m, 8*m)
	}
	if n == 0 {
		return nil
	}
	if err := check(false, false, m, n, k, len(a), lda, len(b), ldb, len(c), ldc); err != nil {
		return err
	}
	scoreExp(m, n, k, alpha, a, lda, b, ldb, c, ldc, lim, ref, lv, grow)
	return nil
}

// rescaleRow multiplies the probabilities p by a (ScoreExp's rescale when a
// row's shift moves): in float64, rounded once, 0 below 2⁻¹²⁵ (as the
// kernels flush; a subnormal product would cost the product P·V that reads
// the row a microcode assist).
func rescaleRow(p []float32, a float32) {
	for j, x := range p {
		y := float64(x) * float64(a)
		if y < 0x1p-125 {
			y = 0
		}
		p[j] = float32(y)
	}
}
