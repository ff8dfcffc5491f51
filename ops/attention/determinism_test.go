package attention

import (
	"math"
	"math/rand"
	"runtime"
	"testing"
)

// TestDeterministic runs forward and backward of the same inputs with 1, 2,
// 3 and 8 goroutines allowed, twice each, and requires bit-identical o,
// lse, dq, dk and dv: the split of the work depends on the sizes only.
// The problems cover one kv head (the key blocks split into chunks with dQ
// partials) and many (one chunk per kv head).
func TestDeterministic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, pr := range []problem{
		{B: 1, H: 4, Hkv: 1, Nq: 300, Nk: 520, D: 24, Opts: Options{Causal: true}},
		{B: 2, H: 8, Hkv: 8, Nq: 130, Nk: 130, D: 16, Opts: Options{KeyLengths: []int{100, 130}}},
	} {
		p := &params{B: pr.B, H: pr.H, Hkv: pr.Hkv, Nq: pr.Nq, Nk: pr.Nk, D: pr.D,
			Scale: pr.scale(), Causal: pr.Opts.Causal, KeyLengths: pr.Opts.KeyLengths}
		t.Logf("%v: %d key-block chunks", pr, backwardChunks(p, 4))
		rng := rand.New(rand.NewSource(12))
		q64, k64, v64 := pr.inputs(rng)
		q, k, v := convert[float32](q64), convert[float32](k64), convert[float32](v64)
		do := convert[float32](randn(rng, pr.qLen()))
		var first [][]float32
		for _, procs := range []int{1, 2, 3, 8} {
			runtime.GOMAXPROCS(procs)
			for rep := 0; rep < 2; rep++ {
				o, l, lr := make([]float32, pr.qLen()), make([]float32, pr.lLen()), make([]float32, pr.lLen())
				flashForward(p, q, k, v, o, l, lr)
				dq, dk, dv := make([]float32, pr.qLen()), make([]float32, pr.kLen()), make([]float32, pr.kLen())
				flashBackward(p, q, k, v, o, l, lr, do, nil, dq, dk, dv)
				got := [][]float32{o, l, lr, dq, dk, dv}
				if first == nil {
					first = got
					continue
				}
				for i := range got {
					for j := range got[i] {
						if math.Float32bits(got[i][j]) != math.Float32bits(first[i][j]) {
							t.Fatalf("%v: GOMAXPROCS %d run %d: output %d differs at %d: %v vs %v",
								pr, procs, rep, i, j, got[i][j], first[i][j])
						}
					}
				}
			}
		}
	}
}
