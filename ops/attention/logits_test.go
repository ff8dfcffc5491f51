package attention

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestLargeLogits holds the float32 error rule (fused within 2× the
// decomposed path's 2-norm error, o and the three gradients) where the
// scores spread far beyond the unit-variance inputs of the grids: q is
// multiplied by `spread`, so the scores have a standard deviation of about
// spread and a row's softmax goes from flat (1) to nearly one-hot (64). The
// exponentials' arguments s − m then reach hundreds (in log₂ units), where
// rounding s − m to float32 (the AVX-512 forward kernel does) costs the
// small probabilities a few ulp; this test shows what that does to o and
// the gradients next to the decomposed path.
func TestLargeLogits(t *testing.T) {
	rng := rand.New(rand.NewSource(31))
	var worstO, worstG float64
	for _, pr := range []problem{
		{B: 1, H: 2, Hkv: 1, Nq: 130, Nk: 260, D: 32, Opts: Options{Causal: true}},
		{B: 1, H: 2, Hkv: 2, Nq: 200, Nk: 200, D: 64},
	} {
		for _, spread := range []float64{1, 4, 16, 64} {
			t.Run(fmt.Sprintf("%v/spread%g", pr, spread), func(t *testing.T) {
				q, k, v := pr.inputs(rng)
				for i := range q {
					q[i] *= spread
				}
				do := randn(rng, pr.qLen())
				q32, k32, v32, do32 := convert[float32](q), convert[float32](k), convert[float32](v), convert[float32](do)
				oracle := pr.naive(convert[float64](q32), convert[float64](k32), convert[float64](v32))
				wantO, _ := oracle.forward()
				var w [3][]float64
				w[0], w[1], w[2] = oracle.backward(convert[float64](do32), nil)

				of, _, err := forward(pr, fused, q32, k32, v32)
				if err != nil {
					t.Fatal(err)
				}
				od, _, err := forward(pr, decomposed, q32, k32, v32)
				if err != nil {
					t.Fatal(err)
				}
				ef, ed := rmsErr(of, wantO), rmsErr(od, wantO)
				if ef > 2*ed+floor32 {
					t.Errorf("o: 2-norm error fused %.3g > 2× decomposed %.3g", ef, ed)
				}
				worstO = math.Max(worstO, ef/math.Max(ed, floor32))

				var gf, gd [3][]float32
				if gf[0], gf[1], gf[2], err = gradients(pr, fused, q32, k32, v32, do32, nil); err != nil {
					t.Fatal(err)
				}
				if gd[0], gd[1], gd[2], err = gradients(pr, decomposed, q32, k32, v32, do32, nil); err != nil {
					t.Fatal(err)
				}
				den := math.Max(norm(w[0]), math.Max(norm(w[1]), norm(w[2])))
				for i, name := range []string{"dq", "dk", "dv"} {
					ef, ed := absNormErr(gf[i], w[i])/den, absNormErr(gd[i], w[i])/den
					if ef > 2*ed+floor32 {
						t.Errorf("%s: 2-norm error fused %.3g > 2× decomposed %.3g", name, ef, ed)
					}
					worstG = math.Max(worstG, ef/math.Max(ed, floor32))
				}
			})
		}
	}
	t.Logf("worst float32 fused/decomposed 2-norm error ratio: o %.3g, gradients %.3g", worstO, worstG)
}
