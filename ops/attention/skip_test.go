package attention

import (
	"math/rand"
	"testing"
)

// TestMaskedBlocksSkipped counts the score tiles the forward and the
// backward compute and compares with the number of (query block, key
// block) pairs that hold at least one visible (query, key) pair, counted
// here from the definition of the masks: fully masked blocks (causal,
// padding, rows with no key) must be skipped, not computed and discarded.
func TestMaskedBlocksSkipped(t *testing.T) {
	// The counters are the CPU kernels': keep a gpu build's device out.
	defer func(was bool) { cpuOnly = was }(cpuOnly)
	cpuOnly = true
	rng := rand.New(rand.NewSource(14))
	for _, pr := range []problem{
		{B: 1, H: 2, Hkv: 1, Nq: 256, Nk: 256, D: 8},
		{B: 1, H: 2, Hkv: 1, Nq: 256, Nk: 256, D: 8, Opts: Options{Causal: true}},
		{B: 1, H: 1, Hkv: 1, Nq: 100, Nk: 300, D: 8, Opts: Options{Causal: true}},
		{B: 1, H: 1, Hkv: 1, Nq: 300, Nk: 100, D: 8, Opts: Options{Causal: true}},
		{B: 3, H: 2, Hkv: 2, Nq: 130, Nk: 200, D: 8, Opts: Options{KeyLengths: []int{0, 65, 200}}},
		{B: 2, H: 1, Hkv: 1, Nq: 200, Nk: 200, D: 8, Opts: Options{Causal: true, KeyLengths: []int{64, 0}}},
	} {
		np := pr.naive(nil, nil, nil)
		want := 0
		for b := 0; b < pr.B; b++ {
			for i0 := 0; i0 < pr.Nq; i0 += blockQ {
				for j0 := 0; j0 < pr.Nk; j0 += blockK {
					seen := false
					for i := i0; i < min(i0+blockQ, pr.Nq) && !seen; i++ {
						for j := j0; j < min(j0+blockK, pr.Nk) && !seen; j++ {
							seen = np.visible(b, i, j)
						}
					}
					if seen {
						want += pr.H
					}
				}
			}
		}
		q, k, v := pr.inputs(rng)
		do := randn(rng, pr.qLen())
		fwd0, bwd0 := tilesComputed.fwd.Load(), tilesComputed.bwd.Load()
		if _, _, _, err := gradients(pr, fused, q, k, v, do, nil); err != nil {
			t.Fatal(err)
		}
		fwd, bwd := tilesComputed.fwd.Load()-fwd0, tilesComputed.bwd.Load()-bwd0
		total := pr.B * pr.H * ((pr.Nq + blockQ - 1) / blockQ) * ((pr.Nk + blockK - 1) / blockK)
		t.Logf("%v: %d of %d tiles hold a visible pair; forward computed %d, backward %d", pr, want, total, fwd, bwd)
		if fwd != int64(want) || bwd != int64(want) {
			t.Errorf("%v: computed %d tiles forward and %d backward, want %d", pr, fwd, bwd, want)
		}
	}
}
