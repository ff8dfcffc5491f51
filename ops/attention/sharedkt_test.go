package attention

import (
	"math"
	"math/rand"
	"testing"
)

// TestSharedKT checks flashForward's choice between one shared copy of K
// in transposed blocks and each unit's own copies (sharedKT) on the shapes
// its comment names, and that forwardBlocks gives the same bits either
// way, in float32 (the AVX-512 score kernels where the machine has them)
// and float64, on a problem whose last key block is short (Nk = 300) with
// grouped-query heads, causal and with key lengths.
func TestSharedKT(t *testing.T) {
	for _, c := range []struct {
		pr     problem
		gq     int
		shared bool
		why    string
	}{
		{problem{B: 1, H: 8, Hkv: 8, Nq: 1024, Nk: 1024, Opts: Options{Causal: true}}, 4, false, "causal N = 1024 at 1–2 cores: 12 blocks walked for 8"},
		{problem{B: 1, H: 8, Hkv: 8, Nq: 1024, Nk: 1024, Opts: Options{Causal: true}}, 1, true, "causal N = 1024 at 16 cores: 36 for 8"},
		{problem{B: 1, H: 8, Hkv: 8, Nq: 4096, Nk: 4096}, 4, true, "N = 4096: 256 for 32"},
		{problem{B: 1, H: 8, Hkv: 8, Nq: 1024, Nk: 1024}, 4, false, "N = 1024: 16 for 8, twice"},
		{problem{B: 1, H: 8, Hkv: 8, Nq: 1536, Nk: 1536}, 4, true, "N = 1536: 36 for 12, three times"},
		{problem{B: 16, H: 8, Hkv: 8, Nq: 256, Nk: 256, Opts: Options{Causal: true}}, 2, false, "examples/gpt's N = 256: 2 for 2"},
	} {
		pr := c.pr
		p := &params{B: pr.B, H: pr.H, Hkv: pr.Hkv, Nq: pr.Nq, Nk: pr.Nk, D: 64, Causal: pr.Opts.Causal}
		if got := sharedKT(p, c.gq, (pr.Nq+blockQ-1)/blockQ); got != c.shared {
			t.Errorf("%s, groups of %d: sharedKT = %v, want %v (%s)", pr, c.gq, got, c.shared, c.why)
		}
	}

	for _, pr := range []problem{
		{B: 2, H: 4, Hkv: 2, Nq: 300, Nk: 300, D: 64, Opts: Options{Causal: true}},
		{B: 2, H: 4, Hkv: 2, Nq: 260, Nk: 300, D: 48, Opts: Options{KeyLengths: []int{300, 170}}},
	} {
		t.Run(pr.String(), func(t *testing.T) {
			rng := rand.New(rand.NewSource(5))
			q, k, v := pr.inputs(rng)
			sharedKTSame(t, pr, q, k, v)
			sharedKTSame(t, pr, convert[float32](q), convert[float32](k), convert[float32](v))
		})
	}
}

// sharedKTSame runs forwardBlocks over every query block of pr, once with
// K in shared transposed blocks and once with the units' own copies, and
// fails where o, lse or lres differ in any bit.
func sharedKTSame[T Float](t *testing.T, pr problem, q, k, v []T) {
	t.Helper()
	p := &params{B: pr.B, H: pr.H, Hkv: pr.Hkv, Nq: pr.Nq, Nk: pr.Nk, D: pr.D,
		Scale: pr.scale(), Causal: pr.Opts.Causal, KeyLengths: pr.Opts.KeyLengths}
	kt := make([]T, len(k))
	transposeBlocks(kt, k, p.B*p.Hkv, p.Nk, p.D, blockK)
	nQB := (p.Nq + blockQ - 1) / blockQ
	var outs [2][3][]T
	for i, shared := range [][]T{kt, nil} {
		o, l, lr := make([]T, pr.qLen()), make([]T, pr.lLen()), make([]T, pr.lLen())
		w := newFwdScratch[T]()
		for b := range p.B {
			for h := range p.H {
				for qb := 0; qb < nQB; qb += maxGroup {
					forwardBlocks(p, w, q, k, shared, v, o, l, lr, b, h, qb, min(qb+maxGroup, nQB))
				}
			}
		}
		outs[i] = [3][]T{o, l, lr}
	}
	for x, name := range []string{"o", "lse", "lres"} {
		for j := range outs[0][x] {
			a, b := float64(outs[0][x][j]), float64(outs[1][x][j])
			if math.Float64bits(a) != math.Float64bits(b) && !(math.IsNaN(a) && math.IsNaN(b)) {
				t.Fatalf("%T: %s[%d] = %v with the shared copy, %v with the units' own", outs[0][x][j], name, j, a, b)
			}
		}
	}
}
