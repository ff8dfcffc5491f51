package attention

import "testing"

// TestMaskedBlocksSkipped checks the bounds the forward and the backward
// take their tiles from (fwdKeyEnd, bwdQueryStart): a (query block, key
// block) tile is visited if and only if it holds at least one visible
// (query, key) pair, counted here from the oracle's definition of the masks.
// Fully masked tiles (causal, padding, rows with no key) must be skipped,
// not computed and discarded; tiles with a visible pair must not be.
func TestMaskedBlocksSkipped(t *testing.T) {
	for _, pr := range []problem{
		{B: 1, H: 2, Hkv: 1, Nq: 256, Nk: 256, D: 8},
		{B: 1, H: 2, Hkv: 1, Nq: 256, Nk: 256, D: 8, Opts: Options{Causal: true}},
		{B: 1, H: 1, Hkv: 1, Nq: 100, Nk: 300, D: 8, Opts: Options{Causal: true}},
		{B: 1, H: 1, Hkv: 1, Nq: 300, Nk: 100, D: 8, Opts: Options{Causal: true}},
		{B: 1, H: 1, Hkv: 1, Nq: 700, Nk: 500, D: 8, Opts: Options{Causal: true}},
		{B: 3, H: 2, Hkv: 2, Nq: 130, Nk: 200, D: 8, Opts: Options{KeyLengths: []int{0, 65, 200}}},
		{B: 2, H: 1, Hkv: 1, Nq: 200, Nk: 200, D: 8, Opts: Options{Causal: true, KeyLengths: []int{64, 0}}},
		{B: 2, H: 1, Hkv: 1, Nq: 129, Nk: 400, D: 8, Opts: Options{Causal: true, KeyLengths: []int{300, 129}}},
	} {
		np := pr.naive(nil, nil, nil)
		p := &params{B: pr.B, H: pr.H, Hkv: pr.Hkv, Nq: pr.Nq, Nk: pr.Nk, D: pr.D, Scale: pr.scale(),
			Causal: pr.Opts.Causal, KeyLengths: pr.Opts.KeyLengths}
		visited, total := 0, 0
		for b := 0; b < pr.B; b++ {
			for i0 := 0; i0 < pr.Nq; i0 += blockQ {
				i1 := min(i0+blockQ, pr.Nq)
				for j0 := 0; j0 < pr.Nk; j0 += blockK {
					seen := false
					for i := i0; i < i1 && !seen; i++ {
						for j := j0; j < min(j0+blockK, pr.Nk) && !seen; j++ {
							seen = np.visible(b, i, j)
						}
					}
					fwd := j0 < fwdKeyEnd(p, b, i1)
					// The backward visits key blocks below KeyEnd, and
					// there the query blocks from bwdQueryStart on.
					bwd := j0 < p.KeyEnd(b) && i0 >= bwdQueryStart(p, b, j0)
					if fwd != seen || bwd != seen {
						t.Errorf("%v: batch %d, query block %d, key block %d: holds a visible pair %t, forward visits it %t, backward %t",
							pr, b, i0/blockQ, j0/blockK, seen, fwd, bwd)
					}
					if seen {
						visited++
					}
					total++
				}
			}
		}
		t.Logf("%v: %d of %d tiles (per head) hold a visible pair and are visited", pr, visited, total)
	}
}
