package nn

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
)

// refCrossEntropy is the loss and its gradient by a float64 loop: for each
// kept row, −(x[t] − max − log Σ exp(x − max)), averaged; the gradient of a
// kept row is (softmax(x) − onehot(t))/n.
func refCrossEntropy(x []float64, targets []int, v, ignore int) (float64, []float64) {
	n := 0
	for _, t := range targets {
		if t != ignore {
			n++
		}
	}
	grad := make([]float64, len(x))
	if n == 0 {
		return 0, grad
	}
	loss := 0.0
	for m, t := range targets {
		if t == ignore {
			continue
		}
		row := x[m*v : (m+1)*v]
		mx := math.Inf(-1)
		for _, e := range row {
			mx = math.Max(mx, e)
		}
		s := 0.0
		for _, e := range row {
			s += math.Exp(e - mx)
		}
		loss -= row[t] - mx - math.Log(s)
		for j, e := range row {
			p := math.Exp(e-mx) / s
			if j == t {
				p--
			}
			grad[m*v+j] = p / float64(n)
		}
	}
	return loss / float64(n), grad
}

func TestCrossEntropy(t *testing.T) {
	rng := rand.New(rand.NewSource(20))
	const ignore = -100
	for _, tc := range []struct {
		name    string
		targets []int
		scale   float64
	}{
		{"plain", []int{0, 3, 2, 1, 4}, 1},
		{"ignored rows", []int{ignore, 3, ignore, 1, 4}, 1},
		{"all ignored", []int{ignore, ignore, ignore, ignore, ignore}, 1},
		{"large logits", []int{1, 3, 2, 0, 4}, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, v := len(tc.targets), 5
			x := randSlice(rng, m*v, tc.scale, 0)
			g := gorgonia.NewGraph()
			logits := graph.Input(g, "logits", graph.NewTensor([]int{m, v}, x))
			ce, err := NewCrossEntropy(logits, ignore)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ce.SetTargets(tc.targets); err != nil {
				t.Fatal(err)
			}
			if err := graph.ForwardBackward(ce.Loss, logits); err != nil {
				t.Fatal(err)
			}
			loss, _ := graph.Values[float64](ce.Loss)
			grad, _ := graph.Grads[float64](logits)
			wantLoss, wantGrad := refCrossEntropy(x, tc.targets, v, ignore)
			assertClose(t, "loss", loss, []float64{wantLoss}, 1e-12)
			assertClose(t, "gradient", grad, wantGrad, 1e-12)

			if tc.scale == 1 {
				build := func(g *gorgonia.ExprGraph, in []*gorgonia.Node) (*gorgonia.Node, error) {
					ce, err := NewCrossEntropy(in[0], ignore)
					if err != nil {
						return nil, err
					}
					_, err = ce.SetTargets(tc.targets)
					return ce.Loss, err
				}
				checkGrad(t, build, []*tensor.Dense{graph.NewTensor([]int{m, v}, x)}, graph.CheckOptions{})
			}
		})
	}
}

func TestCrossEntropyErrors(t *testing.T) {
	g := gorgonia.NewGraph()
	logits := graph.Input(g, "logits", graph.NewTensor([]int{2, 3}, make([]float64, 6)))
	ce, err := NewCrossEntropy(logits, -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, targets := range [][]int{{0}, {0, 3}, {-2, 0}} {
		if _, err := ce.SetTargets(targets); err == nil {
			t.Errorf("targets %v accepted", targets)
		} else {
			t.Log(err)
		}
	}
	vec := graph.Input(g, "vec", graph.NewTensor([]int{3}, make([]float64, 3)))
	if _, err := NewCrossEntropy(vec, -1); err == nil {
		t.Error("rank-1 logits accepted")
	}
}
