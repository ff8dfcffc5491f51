package nn

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
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
		for _, fused := range []bool{false, true} {
			newLoss := NewCrossEntropy
			if fused {
				newLoss = NewFusedCrossEntropy
			}
			t.Run(fmt.Sprintf("%s/fused=%t", tc.name, fused), func(t *testing.T) {
				testCrossEntropy(t, rng, newLoss, tc.targets, tc.scale, ignore)
			})
		}
	}
}

// testCrossEntropy checks one loss (decomposed or fused) over logits of
// len(targets) rows of 5 drawn at scale against refCrossEntropy, and its
// gradient by central differences at scale 1.
func testCrossEntropy(t *testing.T, rng *rand.Rand, newLoss func(*gorgonia.Node, int) (*CrossEntropy, error), targets []int, scale float64, ignore int) {
	m, v := len(targets), 5
	x := randSlice(rng, m*v, scale, 0)
	g := gorgonia.NewGraph()
	logits := graph.Input(g, "logits", graph.NewTensor([]int{m, v}, x))
	ce, err := newLoss(logits, ignore)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ce.SetTargets(targets); err != nil {
		t.Fatal(err)
	}
	if err := graph.ForwardBackward(ce.Loss, logits); err != nil {
		t.Fatal(err)
	}
	loss, _ := graph.Values[float64](ce.Loss)
	grad, _ := graph.Grads[float64](logits)
	wantLoss, wantGrad := refCrossEntropy(x, targets, v, ignore)
	assertClose(t, "loss", loss, []float64{wantLoss}, 1e-12)
	assertClose(t, "gradient", grad, wantGrad, 1e-12)
	if scale == 1 {
		build := func(g *gorgonia.ExprGraph, in []*gorgonia.Node) (*gorgonia.Node, error) {
			ce, err := newLoss(in[0], ignore)
			if err != nil {
				return nil, err
			}
			_, err = ce.SetTargets(targets)
			return ce.Loss, err
		}
		checkGrad(t, build, []*tensor.Dense{graph.NewTensor([]int{m, v}, x)}, graph.CheckOptions{})
	}
}

// TestFusedCrossEntropyKernels runs the fused loss and its gradient on
// more rows than a block (xentRows), with ignored rows, against the float64
// reference: float64 within 1e-12, float32 within 2e-6 relative (the
// logits' rounding is the reference's input; the exponentials are within 2
// ulp), and the same bits at any GOMAXPROCS.
func TestFusedCrossEntropyKernels(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewSource(21))
	const m, v, ignore = 301, 96, -1
	targets := make([]int, m)
	for i := range targets {
		targets[i] = rng.Intn(v)
		if i%7 == 3 {
			targets[i] = ignore
		}
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			x := newDense(dt, m, v)
			fromF64(x, randSlice(rng, m*v, 3, 0))
			xs := toF64(x) // the rounded logits
			tt := tensor.New(tensor.WithShape(m), tensor.WithBacking(targets))
			g := newDense(dt, 1)
			fromF64(g, []float64{0.75})
			wantLoss, wantGrad := refCrossEntropy(xs, targets, v, ignore)
			tol := 1e-12
			if dt == tensor.Float32 {
				tol = 2e-6
			}
			var first []float64
			for i, procs := range []int{1, 2, 5} {
				runtime.GOMAXPROCS(procs)
				loss, err := run(xentOp{ignore: ignore}, x, tt)
				if err != nil {
					t.Fatal(err)
				}
				dx, err := run(xentGradOp{ignore: ignore}, x, tt, g)
				if err != nil {
					t.Fatal(err)
				}
				got := append(toF64(loss), toF64(dx)...)
				assertClose(t, "loss", got[:1], []float64{wantLoss}, tol)
				for j := range wantGrad {
					wantGrad[j] *= 0.75
				}
				assertClose(t, "gradient", got[1:], wantGrad, tol)
				for j := range wantGrad {
					wantGrad[j] /= 0.75
				}
				if i == 0 {
					first = got
				} else {
					for j := range got {
						if got[j] != first[j] {
							t.Fatalf("GOMAXPROCS=%d: entry %d is %v, with 1 core %v", procs, j, got[j], first[j])
						}
					}
				}
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
