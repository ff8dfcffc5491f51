//go:build !purego

package gemm

import (
	"math"

	"github.com/flashgorgon/flashgorgon/internal/isa"
	"github.com/flashgorgon/flashgorgon/internal/kernels/vec"
)

// The exp kernels (gen_micro.go's expEpilogue), run by exp512 and
// expm512 (generated: a switch on mr), are the 6×64 kernel's product of
// mr ≤ 6 rows and 64 columns, t = Σ_{p<k} a·b in chunks of kb as
// microKernel sums it, and then, instead of C = alpha·t, ScoreExp's step on
// the strip: per row i, with m[i] moved to the row's largest alpha·t where
// that passes m[i] + τ (then lv[8i…8i+7] is copied to stash[8i…] and
// zeroed, and the result is true),
//
//	c[i·ldc + j] = 2^(fl(fl(alpha·t_ij) − m[i]))    0 where the argument < −125
//	lv[8i … 8i+7] += the 64 results, summed 4 a lane in float32, then as float64
//
// The masked kernels (expm512) keep, of row r's 64 entries, those whose
// lane bit is set in mask[4r + v] (vector v: columns 16v…16v+15): the
// others are left out of the row's maximum and written as 0, whatever the
// product gave them (NaN, ±Inf).

// expTable holds the exp kernels' constants at the offsets gen_micro.go's
// et* name: vec.Exp2Table16's (the same exponential as
// vec.OnlineExp2Rows's AVX-512 kernel), τ and −Inf.
type expTable struct {
	pow                             [16]float32
	s, c3, c2, c1, least, tau, ninf float32
}

var expTab = func() (t expTable) {
	t.pow, t.s, t.c3, t.c2, t.c1, t.least = vec.Exp2Table16()
	t.tau = ScoreExpTau
	t.ninf = float32(math.Inf(-1))
	return t
}()

// HasScoreExp reports whether ScoreExp runs for depth k: on the AVX-512
// level (isa; FLASHGORGON_SIMD caps it) for 1 ≤ k ≤ 128, one depth block.
func HasScoreExp(k int) bool { return kern32.level == isa.AVX512 && k >= 1 && k <= 128 }

// scoreExp is ScoreExp (lim nil) and ScoreExpMasked on checked arguments:
// row strips of up to 6 rows, each over the column strips (the strip of a
// stays in L1). With lim, a row strip runs the strips up to its rows'
// largest lim only (clearing its columns beyond), each on the unmasked
// kernel where every row of the strip sees all of its columns, else on the
// masked twin with the lanes below each row's lim.
func scoreExp(m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, lim []int, ref []float32, lv []float64, grow func(int, float32, float32) float32) {
	kb := chunkSingle(k)
	var stash [8 * expRows]float64
	var old [expRows]float32
	var mask [4 * expRows]uint16
	for i0 := 0; i0 < m; i0 += expRows {
		h := min(expRows, m-i0)
		end := n
		if lim != nil {
			end = 0
			for _, l := range lim[i0 : i0+h] {
				end = max(end, l)
			}
			end = (end + ScoreExpStrip - 1) / ScoreExpStrip * ScoreExpStrip
			for i := i0; i < i0+h; i++ {
				clear(c[i*ldc+end : i*ldc+n])
			}
		}
		for j0 := 0; j0 < end; j0 += ScoreExpStrip {
			for r := range h { // (copy calls memmove for these few values)
				old[r] = ref[i0+r]
			}
			whole := true
			if lim != nil {
				whole = stripMasks(mask[:4*h], lim[i0:i0+h], j0)
			}
			var grew bool
			if whole {
				grew = exp512(h, k, kb, &a[i0*lda], lda, 1, &b[j0], ldb, &c[i0*ldc+j0], ldc, alpha, &ref[i0], &lv[8*i0], &stash[0], &expTab)
			} else {
				grew = expm512(h, k, kb, &a[i0*lda], lda, 1, &b[j0], ldb, &c[i0*ldc+j0], ldc, alpha, &ref[i0], &lv[8*i0], &stash[0], &expTab, &mask[0])
			}
			if !grew {
				continue
			}
			for r := 0; r < h; r++ {
				o, nw := old[r], ref[i0+r]
				if math.Float32bits(o) == math.Float32bits(nw) {
					continue
				}
				i := i0 + r
				f := grow(i, o, nw)
				if j0 > 0 {
					rescaleRow(c[i*ldc:i*ldc+j0], f)
				}
				lvi, st := lv[8*i:8*i+8], stash[8*r:8*r+8]
				if f == 0 && finite(st) {
					// 0·st is ±0, which leaves each lane as it is (the
					// kernel summed the strip into lanes from +0, never
					// −0): a row's first shift (old = −Inf, f = 0), on
					// every row of a row block's first tile, where
					// reading back the lanes the kernel had just stored
					// cost 0.6 µs a 128×128 tile (2.5% of it).
					continue
				}
				for l := range lvi {
					lvi[l] += float64(f) * st[l]
				}
			}
		}
	}
}

// finite reports whether every x is finite.
func finite(x []float64) bool {
	ok := true
	for _, v := range x {
		ok = ok && v-v == 0 // NaN for ±Inf and NaN
	}
	return ok
}

// expRows is the rows of the widest exp kernel.
const expRows = 6

// stripMasks sets mask[4r + v] to the lanes of vector v (columns
// j0+16v…j0+16v+15) that row r, seeing the columns below lim[r], keeps, and
// reports whether every row keeps every lane of the strip.
func stripMasks(mask []uint16, lim []int, j0 int) (whole bool) {
	whole = true
	for r, l := range lim {
		cnt := min(max(l-j0, 0), ScoreExpStrip)
		whole = whole && cnt == ScoreExpStrip
		lanes := uint64(1)<<cnt - 1 // cnt = 64: all (Go's shift gives 0)
		mask[4*r], mask[4*r+1], mask[4*r+2], mask[4*r+3] = uint16(lanes), uint16(lanes>>16), uint16(lanes>>32), uint16(lanes>>48)
	}
	return whole
}
