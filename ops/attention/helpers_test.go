package attention

import (
	"fmt"
	"math"
	"math/rand"

	"gorgonia.org/gorgonia"

	"github.com/flashgorgon/flashgorgon/graph"
)

// problem is one test configuration.
type problem struct {
	B, H, Hkv, Nq, Nk, D int
	Opts                 Options
}

func (pr problem) String() string {
	return fmt.Sprintf("B%d_H%d_Hkv%d_Nq%d_Nk%d_d%d_causal%t_kl%v_scale%g",
		pr.B, pr.H, pr.Hkv, pr.Nq, pr.Nk, pr.D, pr.Opts.Causal, pr.Opts.KeyLengths, pr.Opts.Scale)
}

func (pr problem) qLen() int { return pr.B * pr.H * pr.Nq * pr.D }
func (pr problem) kLen() int { return pr.B * pr.Hkv * pr.Nk * pr.D }
func (pr problem) lLen() int { return pr.B * pr.H * pr.Nq }

// scale resolves Opts.Scale as the documentation says (0 → 1/√d).
func (pr problem) scale() float64 {
	if pr.Opts.Scale == 0 {
		return 1 / math.Sqrt(float64(pr.D))
	}
	return pr.Opts.Scale
}

// inputs draws q, k, v with standard normal entries.
func (pr problem) inputs(rng *rand.Rand) (q, k, v []float64) {
	return randn(rng, pr.qLen()), randn(rng, pr.kLen()), randn(rng, pr.kLen())
}

// naive returns the float64 oracle for inputs q, k, v.
func (pr problem) naive(q, k, v []float64) *naiveProblem {
	return &naiveProblem{B: pr.B, H: pr.H, Hkv: pr.Hkv, Nq: pr.Nq, Nk: pr.Nk, D: pr.D,
		Scale: pr.scale(), Causal: pr.Opts.Causal, KeyLengths: pr.Opts.KeyLengths, Q: q, K: k, V: v}
}

func randn(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	return x
}

// convert copies x into a slice of element type T.
func convert[T, S Float](x []S) []T {
	y := make([]T, len(x))
	for i, v := range x {
		y[i] = T(v)
	}
	return y
}

// impl selects the fused op or its decomposed twin.
type impl int

const (
	fused impl = iota
	decomposed
)

func (m impl) String() string { return [...]string{"fused", "decomposed"}[m] }

// buildGraph adds to g inputs q, k, v of pr's shapes, bound to the given data,
// and the attention of the chosen implementation; it returns the input
// nodes, o and lse.
func buildGraph[T Float](g *gorgonia.ExprGraph, pr problem, m impl, q, k, v []T) (in [3]*gorgonia.Node, o, lse *gorgonia.Node, err error) {
	in[0] = graph.Input(g, "q", graph.NewTensor([]int{pr.B, pr.H, pr.Nq, pr.D}, q))
	in[1] = graph.Input(g, "k", graph.NewTensor([]int{pr.B, pr.Hkv, pr.Nk, pr.D}, k))
	in[2] = graph.Input(g, "v", graph.NewTensor([]int{pr.B, pr.Hkv, pr.Nk, pr.D}, v))
	switch m {
	case fused:
		o, lse, err = AttentionLSE(in[0], in[1], in[2], pr.Opts)
	default:
		o, lse, err = ReferenceLSE(in[0], in[1], in[2], pr.Opts)
	}
	return in, o, lse, err
}

// forward runs implementation m forward on q, k, v and returns o and lse.
func forward[T Float](pr problem, m impl, q, k, v []T) (o, lse []T, err error) {
	g := gorgonia.NewGraph()
	_, on, ln, err := buildGraph(g, pr, m, q, k, v)
	if err != nil {
		return nil, nil, err
	}
	if err := graph.Forward(g); err != nil {
		return nil, nil, err
	}
	if o, err = graph.Values[T](on); err != nil {
		return nil, nil, err
	}
	lse, err = graph.Values[T](ln)
	return o, lse, err
}

// gradients runs implementation m forward and backward on the loss
// Σ o∘do (+ Σ lse∘dl when dl is not nil) and returns ∂loss/∂q, k, v.
func gradients[T Float](pr problem, m impl, q, k, v, do, dl []T) (dq, dk, dv []T, err error) {
	g := gorgonia.NewGraph()
	in, o, lse, err := buildGraph(g, pr, m, q, k, v)
	if err != nil {
		return nil, nil, nil, err
	}
	loss, err := weightedSum(o, graph.Input(g, "do", graph.NewTensor([]int{pr.B, pr.H, pr.Nq, pr.D}, do)))
	if err != nil {
		return nil, nil, nil, err
	}
	if dl != nil {
		ll, err := weightedSum(lse, graph.Input(g, "dl", graph.NewTensor([]int{pr.B, pr.H, pr.Nq}, dl)))
		if err != nil {
			return nil, nil, nil, err
		}
		if loss, err = gorgonia.Add(loss, ll); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := graph.ForwardBackward(loss, in[:]...); err != nil {
		return nil, nil, nil, err
	}
	if dq, err = graph.Grads[T](in[0]); err != nil {
		return nil, nil, nil, err
	}
	if dk, err = graph.Grads[T](in[1]); err != nil {
		return nil, nil, nil, err
	}
	dv, err = graph.Grads[T](in[2])
	return dq, dk, dv, err
}

// weightedSum returns Σ x∘w.
func weightedSum(x, w *gorgonia.Node) (*gorgonia.Node, error) {
	p, err := gorgonia.HadamardProd(x, w)
	if err != nil {
		return nil, err
	}
	return gorgonia.Sum(p)
}

// eachDiff calls f(w, d) for every pair (got_i, want_i) with d = got_i − want_i,
// skipping pairs where both are −Inf, and reports false (having stopped) at
// a non-finite d: a mismatch of NaN or infinities.
func eachDiff[T, S Float](got []T, want []S, f func(w, d float64)) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if math.IsInf(g, -1) && math.IsInf(w, -1) {
			continue
		}
		d := g - w
		if math.IsNaN(d) || math.IsInf(d, 0) {
			return false
		}
		f(w, d)
	}
	return true
}

// relErr returns max_i |got_i − want_i| / max_i |want_i| (normwise relative
// error), skipping entries where both are −Inf; any other non-finite
// mismatch gives +Inf.
func relErr[T, S Float](got []T, want []S) float64 {
	var num, den float64
	if !eachDiff(got, want, func(w, d float64) { num, den = math.Max(num, math.Abs(d)), math.Max(den, math.Abs(w)) }) {
		return math.Inf(1)
	}
	if num == 0 {
		return 0
	}
	return num / den
}

// rmsErr returns the normwise 2-norm relative error ‖got − want‖₂/‖want‖₂,
// skipping entries where both are −Inf; any other non-finite mismatch gives
// +Inf.
func rmsErr[T, S Float](got []T, want []S) float64 {
	var num, den float64
	if !eachDiff(got, want, func(w, d float64) { num, den = num+d*d, den+w*w }) {
		return math.Inf(1)
	}
	if num == 0 {
		return 0
	}
	return math.Sqrt(num / den)
}

// absNormErr returns ‖got − want‖₂; any non-finite difference gives +Inf.
func absNormErr[T, S Float](got []T, want []S) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var sum float64
	for i := range got {
		d := float64(got[i]) - float64(want[i])
		if math.IsNaN(d) || math.IsInf(d, 0) {
			return math.Inf(1)
		}
		sum += d * d
	}
	return math.Sqrt(sum)
}

// norm returns ‖x‖₂.
func norm[T Float](x []T) float64 {
	var sum float64
	for _, v := range x {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum)
}

// maxAbsErr returns max_i |got_i − want_i|, skipping entries where both are
// −Inf; any other non-finite mismatch gives +Inf.
func maxAbsErr[T, S Float](got []T, want []S) float64 {
	var m float64
	if !eachDiff(got, want, func(_, d float64) { m = math.Max(m, math.Abs(d)) }) {
		return math.Inf(1)
	}
	return m
}

// hasNaN reports whether x holds a NaN.
func hasNaN[T Float](x []T) bool {
	for _, v := range x {
		if v != v {
			return true
		}
	}
	return false
}
