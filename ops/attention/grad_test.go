package attention

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
)

// TestGradientCheck compares the fused op's gradients of q, k and v with
// central differences (graph.CheckGradient, float64), for every option.
// The small shapes are compared entry by entry (full Jacobian); the larger
// ones, which span several query and key blocks, by random projections.
func TestGradientCheck(t *testing.T) {
	cases := []struct {
		name string
		pr   problem
		lse  bool // check lse instead of o
	}{
		{"mha", problem{B: 1, H: 2, Hkv: 2, Nq: 3, Nk: 4, D: 2}, false},
		{"causal square", problem{B: 1, H: 1, Hkv: 1, Nq: 4, Nk: 4, D: 3, Opts: Options{Causal: true}}, false},
		{"causal Nq<Nk", problem{B: 1, H: 1, Hkv: 1, Nq: 3, Nk: 5, D: 2, Opts: Options{Causal: true}}, false},
		{"causal Nq>Nk (empty rows)", problem{B: 1, H: 1, Hkv: 1, Nq: 5, Nk: 3, D: 2, Opts: Options{Causal: true}}, false},
		{"gqa 2", problem{B: 1, H: 4, Hkv: 2, Nq: 2, Nk: 3, D: 2}, false},
		{"mqa 4 causal", problem{B: 1, H: 4, Hkv: 1, Nq: 3, Nk: 3, D: 2, Opts: Options{Causal: true}}, false},
		{"key lengths 0 and full", problem{B: 2, H: 1, Hkv: 1, Nq: 3, Nk: 4, D: 2, Opts: Options{KeyLengths: []int{0, 4}}}, false},
		{"key lengths partial causal", problem{B: 2, H: 2, Hkv: 1, Nq: 3, Nk: 4, D: 2, Opts: Options{Causal: true, KeyLengths: []int{2, 3}}}, false},
		{"scale", problem{B: 1, H: 1, Hkv: 1, Nq: 3, Nk: 4, D: 3, Opts: Options{Scale: 0.7}}, false},
		{"lse", problem{B: 1, H: 2, Hkv: 1, Nq: 3, Nk: 4, D: 2, Opts: Options{Causal: true}}, true},
		{"lse key lengths", problem{B: 2, H: 1, Hkv: 1, Nq: 3, Nk: 5, D: 2, Opts: Options{KeyLengths: []int{1, 5}}}, true},
		// Several blocks in both directions (projections).
		{"blocks causal gqa", problem{B: 1, H: 2, Hkv: 1, Nq: 130, Nk: 150, D: 3, Opts: Options{Causal: true}}, false},
		{"blocks padding", problem{B: 2, H: 1, Hkv: 1, Nq: 70, Nk: 140, D: 5, Opts: Options{KeyLengths: []int{0, 100}}}, false},
		{"blocks causal Nq>Nk", problem{B: 1, H: 2, Hkv: 2, Nq: 140, Nk: 70, D: 4, Opts: Options{Causal: true}}, false},
		{"blocks lse", problem{B: 1, H: 2, Hkv: 1, Nq: 70, Nk: 130, D: 3, Opts: Options{Causal: true}}, true},
	}
	rng := rand.New(rand.NewSource(5))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pr := c.pr
			q, k, v := pr.inputs(rng)
			inputs := []*tensor.Dense{
				graph.NewTensor([]int{pr.B, pr.H, pr.Nq, pr.D}, q),
				graph.NewTensor([]int{pr.B, pr.Hkv, pr.Nk, pr.D}, k),
				graph.NewTensor([]int{pr.B, pr.Hkv, pr.Nk, pr.D}, v),
			}
			build := func(g *gorgonia.ExprGraph, in []*gorgonia.Node) (*gorgonia.Node, error) {
				o, lse, err := AttentionLSE(in[0], in[1], in[2], pr.Opts)
				if c.lse {
					return lse, err
				}
				return o, err
			}
			rep, err := graph.CheckGradient(build, inputs, graph.CheckOptions{Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK {
				t.Fatalf("%v: %v", pr, rep)
			}
			t.Log(rep)
		})
	}
}

// gradProblems is the part of the forward grid on which the gradients are
// compared with the float64 oracle: every d, pair and head layout, with the
// options cycling; the long pairs for one d. Under -short: every other
// problem of shortGridProblems but the long one.
func gradProblems() []problem {
	var out []problem
	if testing.Short() {
		for i, pr := range shortGridProblems() {
			if i%2 == 0 && pr.Nq < 1000 {
				out = append(out, pr)
			}
		}
		return out
	}
	for i, pr := range gridProblems() {
		if pr.Nq > 1000 {
			if pr.D == 128 {
				out = append(out, pr)
			}
			continue
		}
		if i%3 == 0 {
			out = append(out, pr)
		}
	}
	return out
}

// TestGradientOracle compares the gradients of o (and lse) with the float64
// oracle's chain rule: float64 to 1e-12 (normwise), and in float32 within
// twice the decomposed path's 2-norm error.
func TestGradientOracle(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	var worst64, worstRatio float64
	probs := gradProblems()
	for n, pr := range probs {
		q, k, v := pr.inputs(rng)
		do := randn(rng, pr.qLen())
		var dl []float64
		if n%2 == 1 {
			// A gradient on lse too, zero on the rows without a visible
			// key (their lse is −Inf and has no gradient).
			_, l := pr.naive(q, k, v).forward()
			dl = randn(rng, pr.lLen())
			for i := range dl {
				if math.IsInf(l[i], -1) {
					dl[i] = 0
				}
			}
		}
		want := [3][]float64{}
		want[0], want[1], want[2] = pr.naive(q, k, v).backward(do, dl)
		var got [3][]float64
		var err error
		got[0], got[1], got[2], err = gradients(pr, fused, q, k, v, do, dl)
		if err != nil {
			t.Fatalf("%v: %v", pr, err)
		}
		// Errors are relative to the problem's gradient scale, the
		// largest 2-norm of the three exact gradients: dq and dk can be
		// exactly 0 (one visible key: dS = P·(dP − D) = 0), where a
		// relative error means nothing.
		den := math.Max(norm(want[0]), math.Max(norm(want[1]), norm(want[2])))
		for i, name := range []string{"dq", "dk", "dv"} {
			if e := absNormErr(got[i], want[i]) / den; e > 1e-12 {
				t.Errorf("%v float64 %s: error %.3g", pr, name, e)
			} else {
				worst64 = math.Max(worst64, e)
			}
		}

		q32, k32, v32 := convert[float32](q), convert[float32](k), convert[float32](v)
		do32, dl32 := convert[float32](do), []float32(nil)
		if dl != nil {
			dl32 = convert[float32](dl)
		}
		var f32, d32 [3][]float32
		if f32[0], f32[1], f32[2], err = gradients(pr, fused, q32, k32, v32, do32, dl32); err != nil {
			t.Fatalf("%v: fused float32: %v", pr, err)
		}
		if d32[0], d32[1], d32[2], err = gradients(pr, decomposed, q32, k32, v32, do32, dl32); err != nil {
			t.Fatalf("%v: decomposed float32: %v", pr, err)
		}
		var dl64 []float64
		if dl32 != nil {
			dl64 = convert[float64](dl32)
		}
		var w32 [3][]float64
		w32[0], w32[1], w32[2] = pr.naive(convert[float64](q32), convert[float64](k32), convert[float64](v32)).
			backward(convert[float64](do32), dl64)
		// floor32 matters only where the decomposed path is exact: with
		// one visible key the true dq and dk are 0, the decomposed
		// softmax backward gives y∘(dy − dy·y) = 0 exactly with y = 1,
		// and FlashAttention's D = rowsum(dO∘O) leaves the rounding
		// difference of two float32 dot products (~1e-7 of the scale).
		den32 := math.Max(norm(w32[0]), math.Max(norm(w32[1]), norm(w32[2])))
		for i, name := range []string{"dq", "dk", "dv"} {
			ef, ed := absNormErr(f32[i], w32[i])/den32, absNormErr(d32[i], w32[i])/den32
			if ef > 2*ed+floor32 {
				t.Errorf("%v float32 %s: 2-norm error fused %.3g > 2× decomposed %.3g", pr, name, ef, ed)
			}
			if ed > floor32 {
				worstRatio = math.Max(worstRatio, ef/ed)
			}
		}
	}
	t.Logf("%d problems: worst float64 gradient error %.3g; worst float32 fused/decomposed 2-norm error ratio %.3g (where the decomposed error exceeds floor32)",
		len(probs), worst64, worstRatio)
}

// TestGradientEmptyRows checks that rows without a visible key get zero
// gradients (dq of the row; dk, dv of keys nobody sees), never NaN.
func TestGradientEmptyRows(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	pr := problem{B: 2, H: 2, Hkv: 1, Nq: 90, Nk: 70, D: 4, Opts: Options{Causal: true, KeyLengths: []int{0, 50}}}
	q, k, v := pr.inputs(rng)
	do := randn(rng, pr.qLen())
	for _, m := range []impl{fused, decomposed} {
		dq, dk, dv, err := gradients(pr, m, q, k, v, do, nil)
		if err != nil {
			t.Fatal(err)
		}
		if hasNaN(dq) || hasNaN(dk) || hasNaN(dv) {
			t.Fatalf("%v: NaN in the gradients", m)
		}
		np := pr.naive(q, k, v)
		for b := 0; b < pr.B; b++ {
			for h := 0; h < pr.H; h++ {
				for i := 0; i < pr.Nq; i++ {
					if i+pr.Nk-pr.Nq >= 0 && b == 1 {
						continue // this row sees keys
					}
					row := ((b*pr.H+h)*pr.Nq + i) * pr.D
					for c := 0; c < pr.D; c++ {
						if dq[row+c] != 0 {
							t.Fatalf("%v: dq of empty row (b %d, h %d, i %d) = %v", m, b, h, i, dq[row:row+pr.D])
						}
					}
				}
			}
			for j := 0; j < pr.Nk; j++ {
				seen := false
				for i := 0; i < pr.Nq; i++ {
					seen = seen || np.visible(b, i, j)
				}
				if seen {
					continue
				}
				at := (b*pr.Nk + j) * pr.D
				for c := 0; c < pr.D; c++ {
					if dk[at+c] != 0 || dv[at+c] != 0 {
						t.Fatalf("%v: key (b %d, j %d) is never seen but dk = %v, dv = %v", m, b, j, dk[at:at+pr.D], dv[at:at+pr.D])
					}
				}
			}
		}
	}
}
