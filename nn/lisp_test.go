package nn

import (
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/flashgorgon/flashgorgon/graph"
)

// TestLispMachine runs nn's ops on Gorgonia's LispMachine, which
// differentiates through DoDiff instead of SymDiff, and compares the
// gradients with the TapeMachine's (which the gradient checks verify).
func TestLispMachine(t *testing.T) {
	rng := rand.New(rand.NewSource(60))
	x := randSlice(rng, 4*6, 1, 0)
	w := randSlice(rng, 6*5, 1, 0)
	b := randSlice(rng, 5, 1, 0)
	gam := randSlice(rng, 5, 0.3, 1)
	bet := randSlice(rng, 5, 0.3, 0)
	tab := randSlice(rng, 7*6, 1, 0)
	proj := randSlice(rng, 4*5, 1, 0)
	build := func(g *gorgonia.ExprGraph) (*gorgonia.Node, []*gorgonia.Node) {
		in := []*gorgonia.Node{
			graph.Input(g, "x", graph.NewTensor([]int{4, 6}, append([]float64(nil), x...))),
			graph.Input(g, "w", graph.NewTensor([]int{6, 5}, append([]float64(nil), w...))),
			graph.Input(g, "b", graph.NewTensor([]int{5}, append([]float64(nil), b...))),
			graph.Input(g, "gamma", graph.NewTensor([]int{5}, append([]float64(nil), gam...))),
			graph.Input(g, "beta", graph.NewTensor([]int{5}, append([]float64(nil), bet...))),
			graph.Input(g, "table", graph.NewTensor([]int{7, 6}, append([]float64(nil), tab...))),
		}
		must := func(n *gorgonia.Node, err error) *gorgonia.Node {
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		idx := must(IndexInput(g, "idx", 4))
		SetIndices(idx, []int{6, 0, 6, 2})
		e := must(EmbedNode(in[5], idx))
		h := must(gorgonia.Add(in[0], e))
		y := must(LinearNode(h, in[1], in[2]))
		y = must(LayerNormNode(y, in[3], in[4], 1e-5))
		y = must(GELU(y))
		p := graph.Input(g, "proj", graph.NewTensor([]int{4, 5}, proj))
		loss := must(gorgonia.Sum(must(gorgonia.HadamardProd(y, p))))
		return loss, in
	}

	g1 := gorgonia.NewGraph()
	loss1, in1 := build(g1)
	if err := graph.ForwardBackward(loss1, in1...); err != nil {
		t.Fatal(err)
	}
	g2 := gorgonia.NewGraph()
	_, in2 := build(g2)
	m := gorgonia.NewLispMachine(g2)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	for i := range in1 {
		want, err := graph.Grads[float64](in1[i])
		if err != nil {
			t.Fatal(err)
		}
		got, err := graph.Grads[float64](in2[i])
		if err != nil {
			t.Fatal(err)
		}
		assertClose(t, "gradient of "+in1[i].Name(), got, want, 1e-12)
	}
}
