package attention

import (
	"math"
	"math/rand"
	"runtime"
	"testing"
)

// TestGroupedBlocks checks the kernels where a forward unit holds several
// query blocks (forwardGroup) and a backward unit walks the query blocks
// once for several key blocks (backwardGroup), against the float64 oracle:
// causal with Nq = Nk and Nq < Nk, key lengths that end inside a chunk's
// group, grouped-query heads. With 1 and 2 goroutines allowed the forward
// groups 4 and 2 query blocks; with 64, one. Every run must give the same
// bits: the grouping only reorders independent work. dq, dk and dv start
// as NaN (the kernels overwrite dq's rows instead of clearing them first).
func TestGroupedBlocks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, pr := range []problem{
		{B: 2, H: 16, Hkv: 8, Nq: 520, Nk: 520, D: 4, Opts: Options{Causal: true}},
		{B: 2, H: 16, Hkv: 8, Nq: 400, Nk: 520, D: 5, Opts: Options{KeyLengths: []int{300, 520}}},
		{B: 1, H: 16, Hkv: 16, Nq: 300, Nk: 700, D: 3, Opts: Options{Causal: true}},
		// Rows no key reaches (causal Nq > Nk, key length 0): dq = 0.
		{B: 4, H: 16, Hkv: 16, Nq: 700, Nk: 300, D: 3, Opts: Options{Causal: true, KeyLengths: []int{300, 0, 200, 130}}},
	} {
		t.Run(pr.String(), func(t *testing.T) {
			p := &params{B: pr.B, H: pr.H, Hkv: pr.Hkv, Nq: pr.Nq, Nk: pr.Nk, D: pr.D,
				Scale: pr.scale(), Causal: pr.Opts.Causal, KeyLengths: pr.Opts.KeyLengths}
			// The problem must exercise the grouping: a chunk holding
			// two or more key blocks, several query blocks per head.
			chunks, nKB := backwardChunks(p, 8), (pr.Nk+blockK-1)/blockK
			if nKB <= chunks || backwardGroup(pr.D, 8) < 2 {
				t.Fatalf("%d key blocks in %d chunks, groups of %d: no chunk groups key blocks", nKB, chunks, backwardGroup(pr.D, 8))
			}
			nQB := (pr.Nq + blockQ - 1) / blockQ
			if g := forwardGroup(pr.B*pr.H, nQB, 1); g < 2 {
				t.Fatalf("forwardGroup gives %d on one worker", g)
			}
			rng := rand.New(rand.NewSource(21))
			q, k, v := pr.inputs(rng)
			do := randn(rng, pr.qLen())
			wantO, wantL := pr.naive(q, k, v).forward()
			wdq, wdk, wdv := pr.naive(q, k, v).backward(do, nil)
			var first [][]float64
			for _, procs := range []int{1, 2, 64} {
				runtime.GOMAXPROCS(procs)
				o, l, lr := make([]float64, pr.qLen()), make([]float64, pr.lLen()), make([]float64, pr.lLen())
				flashForward(p, q, k, v, o, l, lr)
				// The outputs start as NaN: every entry must be written.
				dq, dk, dv := nans(pr.qLen()), nans(pr.kLen()), nans(pr.kLen())
				flashBackward(p, q, k, v, o, l, lr, do, nil, dq, dk, dv)
				got := [][]float64{o, l, dq, dk, dv}
				if first == nil {
					first = got
					if e := relErr(o, wantO); e > 1e-12 {
						t.Errorf("o: error %.3g", e)
					}
					if e := relErr(l, wantL); e > 1e-12 {
						t.Errorf("L: error %.3g", e)
					}
					den := math.Max(norm(wdq), math.Max(norm(wdk), norm(wdv)))
					for i, w := range [][]float64{wdq, wdk, wdv} {
						if e := absNormErr(got[2+i], w) / den; e > 1e-12 {
							t.Errorf("%s: error %.3g", []string{"dq", "dk", "dv"}[i], e)
						}
					}
					continue
				}
				for i := range got {
					for j := range got[i] {
						if math.Float64bits(got[i][j]) != math.Float64bits(first[i][j]) {
							t.Fatalf("GOMAXPROCS %d: output %d differs at %d: %v vs %v", procs, i, j, got[i][j], first[i][j])
						}
					}
				}
			}
		})
	}
}

func nans(n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = math.NaN()
	}
	return x
}
