package main

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/internal/attnspec"
	"github.com/flashgorgon/flashgorgon/ops/attention"
)

// TestChecker runs the benchmark's row checker (no GPU needed) on the outputs and gradients
// of ops/attention's CPU op in float64, an independent implementation: they must check to
// rounding error, and a perturbed entry of each output must show.
func TestChecker(t *testing.T) {
	for _, causal := range []bool{false, true} {
		p := &attnspec.Problem{B: 2, H: 2, Hkv: 2, Nq: 37, Nk: 37, D: 8, Scale: 1 / math.Sqrt(8), Causal: causal}
		rng := rand.New(rand.NewSource(3))
		randn := func(n int) []float64 {
			x := make([]float64, n)
			for i := range x {
				x[i] = rng.NormFloat64()
			}
			return x
		}
		q, k, v, do := randn(p.QLen()), randn(p.KLen()), randn(p.KLen()), randn(p.QLen())

		g := gorgonia.NewGraph()
		qs, ks := []int{p.B, p.H, p.Nq, p.D}, []int{p.B, p.Hkv, p.Nk, p.D}
		qn, kn, vn := graph.Input(g, "q", graph.NewTensor(qs, q)), graph.Input(g, "k", graph.NewTensor(ks, k)), graph.Input(g, "v", graph.NewTensor(ks, v))
		o, lse, err := attention.AttentionLSE(qn, kn, vn, attention.Options{Causal: causal, Scale: p.Scale})
		if err != nil {
			t.Fatal(err)
		}
		prod, err := gorgonia.HadamardProd(o, graph.Input(g, "do", graph.NewTensor(qs, do)))
		if err != nil {
			t.Fatal(err)
		}
		loss, err := gorgonia.Sum(prod)
		if err != nil {
			t.Fatal(err)
		}
		if err := graph.ForwardBackward(loss, qn, kn, vn); err != nil {
			t.Fatal(err)
		}
		values := func(n *gorgonia.Node, grad bool) []float64 {
			get := graph.Values[float64]
			if grad {
				get = graph.Grads[float64]
			}
			x, err := get(n)
			if err != nil {
				t.Fatal(err)
			}
			return x
		}
		ch := checker{p: p, q: q, k: k, v: v, do: do, o: values(o, false), l: values(lse, false)}
		dq, dk, dv := values(qn, true), values(kn, true), values(vn, true)
		rows := []int{0, 1, p.Nq - 1, p.LLen() - 1, 40}
		check := func() float64 {
			return max(ch.forwardRows(rows), ch.dqRows(rows, dq), ch.dkdvRows([]int{0, 5, 17, 36, 40, p.KLen()/p.D - 1}, dk, dv))
		}
		if e := check(); e > 1e-12 {
			t.Fatalf("causal=%t: checker error %g on the CPU op's float64 results", causal, e)
		}
		for _, x := range []struct {
			name string
			s    []float64
			at   int
		}{{"O", ch.o, (p.Nq - 1) * p.D}, {"L", ch.l, 1}, {"dQ", dq, 40*p.D + 3}, {"dK", dk, 5}} {
			x.s[x.at] += 1e-6
			if e := check(); e < 1e-7 {
				t.Errorf("causal=%t: %s[%d] off by 1e-6, checker error %g", causal, x.name, x.at, e)
			}
			x.s[x.at] -= 1e-6
		}
	}
}
