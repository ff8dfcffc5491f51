package attention

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
)

// downstream is an op applied to the attention output before the loss,
// with the derivative the oracle needs: loss = Σ w∘f(o), so
// ∂loss/∂o = w∘f'(o).
type downstream struct {
	name  string
	apply func(g *gorgonia.ExprGraph, o *gorgonia.Node, pr problem) (*gorgonia.Node, error)
	deriv func(o float64) float64
}

var downstreams = []downstream{
	{"add", func(g *gorgonia.ExprGraph, o *gorgonia.Node, pr problem) (*gorgonia.Node, error) {
		c := graph.Input(g, "c", graph.RandTensor[float64](rand.New(rand.NewSource(1)), pr.B, pr.H, pr.Nq, pr.D))
		return gorgonia.Add(o, c)
	}, func(float64) float64 { return 1 }},
	{"reshape then add", func(g *gorgonia.ExprGraph, o *gorgonia.Node, pr problem) (*gorgonia.Node, error) {
		r, err := gorgonia.Reshape(o, tensor.Shape{pr.B * pr.H * pr.Nq, pr.D})
		if err != nil {
			return nil, err
		}
		c := graph.Input(g, "c", graph.RandTensor[float64](rand.New(rand.NewSource(1)), pr.B*pr.H*pr.Nq, pr.D))
		s, err := gorgonia.Add(r, c)
		if err != nil {
			return nil, err
		}
		return gorgonia.Reshape(s, tensor.Shape{pr.B, pr.H, pr.Nq, pr.D})
	}, func(float64) float64 { return 1 }},
	{"tanh", func(g *gorgonia.ExprGraph, o *gorgonia.Node, pr problem) (*gorgonia.Node, error) {
		return gorgonia.Tanh(o)
	}, func(o float64) float64 { t := math.Tanh(o); return 1 - t*t }},
	{"scale", func(g *gorgonia.ExprGraph, o *gorgonia.Node, pr problem) (*gorgonia.Node, error) {
		return gorgonia.Mul(o, gorgonia.NewConstant(3.0))
	}, func(float64) float64 { return 3 }},
}

// runDownstream builds loss = Σ w∘f(Attention(q,k,v)), runs forward and
// backward twice on one TapeMachine, and returns the gradients of both runs.
func runDownstream(t *testing.T, pr problem, f downstream, q, k, v, w []float64) (runs [2][3][]float64) {
	t.Helper()
	g := gorgonia.NewGraph()
	in, o, _, err := buildGraph(g, pr, fused, q, k, v)
	if err != nil {
		t.Fatal(err)
	}
	y, err := f.apply(g, o, pr)
	if err != nil {
		t.Fatal(err)
	}
	loss, err := weightedSum(y, graph.Input(g, "w", graph.NewTensor([]int{pr.B, pr.H, pr.Nq, pr.D}, w)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gorgonia.Grad(loss, in[:]...); err != nil {
		t.Fatal(err)
	}
	m := gorgonia.NewTapeMachine(g, gorgonia.BindDualValues(in[:]...))
	defer m.Close()
	for r := range runs {
		for _, n := range in {
			if d, err := n.Grad(); err == nil && d != nil {
				d.(tensor.Tensor).Zero()
			}
		}
		m.Reset()
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
		for i, n := range in {
			if runs[r][i], err = graph.Grads[float64](n); err != nil {
				t.Fatal(err)
			}
		}
	}
	return runs
}

// TestGraphInPlaceAfterAttention runs the fused op under ops that Gorgonia
// executes in place when their input dies with them (Add, Tanh, Mul, and
// Add behind a Reshape view), twice on one machine, and compares the
// gradients with the oracle.
func TestGraphInPlaceAfterAttention(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	pr := problem{B: 1, H: 2, Hkv: 1, Nq: 20, Nk: 30, D: 4, Opts: Options{Causal: true}}
	q, k, v := pr.inputs(rng)
	w := randn(rng, pr.qLen())
	np := pr.naive(q, k, v)
	o, _ := np.forward()
	for _, f := range downstreams {
		t.Run(f.name, func(t *testing.T) {
			do := make([]float64, len(w))
			for i := range do {
				do[i] = w[i] * f.deriv(o[i])
			}
			var want [3][]float64
			want[0], want[1], want[2] = np.backward(do, nil)
			runs := runDownstream(t, pr, f, q, k, v, w)
			for r, got := range runs {
				for i, name := range []string{"dq", "dk", "dv"} {
					if e := relErr(got[i], want[i]); e > 1e-12 {
						t.Errorf("run %d: %s error %.3g", r, name, e)
					}
				}
			}
		})
	}
}

// TestGraphViewHazard documents why o is copied out of the packed forward
// value: with a view sharing packed's array, Gorgonia runs the in-place
// Add of "reshape then add" on that array, and the backward reads a
// corrupted O. If this test ever fails, Gorgonia gained alias analysis and
// forwardViews could become true.
func TestGraphViewHazard(t *testing.T) {
	forwardViews = true
	defer func() { forwardViews = false }()
	rng := rand.New(rand.NewSource(9))
	pr := problem{B: 1, H: 2, Hkv: 1, Nq: 20, Nk: 30, D: 4, Opts: Options{Causal: true}}
	q, k, v := pr.inputs(rng)
	w := randn(rng, pr.qLen())
	np := pr.naive(q, k, v)
	var want [3][]float64
	want[0], want[1], want[2] = np.backward(w, nil)
	for _, f := range downstreams[:2] {
		runs := runDownstream(t, pr, f, q, k, v, w)
		e := relErr(runs[0][0], want[0])
		t.Logf("%s with a shared view: dq error %.3g", f.name, e)
		if e < 1e-3 {
			t.Errorf("%s: a shared view gave correct gradients (error %.3g): Gorgonia no longer overwrites it in place", f.name, e)
		}
	}
}

// layerStack builds a small transformer-like stack in g from x [B,H,N,d]:
// three attention layers with q = x·c1, k = x·c2, v = x + c3 (elementwise),
// a residual add and a tanh after each, the middle layer with grouped
// kv heads (k and v take the first Hkv heads), using impl m for every
// attention; it returns the loss Σ w∘out.
func layerStack(g *gorgonia.ExprGraph, m impl, x *gorgonia.Node, w *gorgonia.Node, B, H, N, D int) (*gorgonia.Node, error) {
	attn := Attention
	if m == decomposed {
		attn = Reference
	}
	h := x
	for layer := 0; layer < 3; layer++ {
		c1 := gorgonia.NewConstant(0.5 + 0.25*float64(layer))
		c2 := gorgonia.NewConstant(1.5 - 0.25*float64(layer))
		q, err := gorgonia.Mul(h, c1)
		if err != nil {
			return nil, err
		}
		k, err := gorgonia.Mul(h, c2)
		if err != nil {
			return nil, err
		}
		v, err := gorgonia.Tanh(h)
		if err != nil {
			return nil, err
		}
		opts := Options{Causal: layer != 1}
		if layer == 1 {
			// Grouped kv heads: k and v keep the first half of the heads.
			if k, err = gorgonia.Slice(k, nil, gorgonia.S(0, H/2)); err != nil {
				return nil, err
			}
			if v, err = gorgonia.Slice(v, nil, gorgonia.S(0, H/2)); err != nil {
				return nil, err
			}
			opts.KeyLengths = make([]int, B)
			for b := range opts.KeyLengths {
				opts.KeyLengths[b] = N - 3*b
			}
		}
		o, err := attn(q, k, v, opts)
		if err != nil {
			return nil, err
		}
		if h, err = gorgonia.Add(o, h); err != nil {
			return nil, err
		}
		if h, err = gorgonia.Tanh(h); err != nil {
			return nil, err
		}
	}
	return weightedSum(h, w)
}

// TestGraphLayers runs a three-layer stack (attention followed by residual
// adds and tanh, one layer with grouped kv heads from a sliced view) four
// times on one TapeMachine and compares the gradient of the input with the
// same stack built on Reference.
func TestGraphLayers(t *testing.T) {
	const B, H, N, D = 2, 4, 70, 8
	rng := rand.New(rand.NewSource(10))
	xd, wd := randn(rng, B*H*N*D), randn(rng, B*H*N*D)
	grads := map[impl][]float64{}
	for _, m := range []impl{decomposed, fused} {
		g := gorgonia.NewGraph()
		x := graph.Input(g, "x", graph.NewTensor([]int{B, H, N, D}, xd))
		w := graph.Input(g, "w", graph.NewTensor([]int{B, H, N, D}, wd))
		loss, err := layerStack(g, m, x, w, B, H, N, D)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gorgonia.Grad(loss, x); err != nil {
			t.Fatal(err)
		}
		vm := gorgonia.NewTapeMachine(g, gorgonia.BindDualValues(x))
		for run := 0; run < 4; run++ {
			if d, err := x.Grad(); err == nil && d != nil {
				d.(tensor.Tensor).Zero()
			}
			vm.Reset()
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			dx, err := graph.Grads[float64](x)
			if err != nil {
				t.Fatal(err)
			}
			if run == 0 {
				grads[m] = dx
				continue
			}
			if e := relErr(dx, grads[m]); e != 0 {
				t.Errorf("%v: run %d differs from run 0 by %.3g", m, run, e)
			}
		}
		vm.Close()
	}
	if e := relErr(grads[fused], grads[decomposed]); e > 1e-12 {
		t.Errorf("fused stack gradient differs from the decomposed one by %.3g", e)
	}
}

// TestGraphConcurrent runs separate graphs with the fused op on several
// goroutines at once; each must match its own sequential run.
func TestGraphConcurrent(t *testing.T) {
	const workers = 4
	pr := problem{B: 1, H: 4, Hkv: 2, Nq: 100, Nk: 130, D: 16, Opts: Options{Causal: true}}
	type result struct{ dq, dk, dv []float64 }
	inputs := make([][4][]float64, workers)
	want := make([]result, workers)
	for i := range inputs {
		rng := rand.New(rand.NewSource(int64(20 + i)))
		q, k, v := pr.inputs(rng)
		inputs[i] = [4][]float64{q, k, v, randn(rng, pr.qLen())}
		var err error
		r := &want[i]
		if r.dq, r.dk, r.dv, err = gradients(pr, fused, q, k, v, inputs[i][3], nil); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, workers)
	got := make([]result, workers)
	for i := 0; i < workers; i++ {
		go func() {
			var err error
			r := &got[i]
			in := inputs[i]
			r.dq, r.dk, r.dv, err = gradients(pr, fused, in[0], in[1], in[2], in[3], nil)
			errs <- err
		}()
	}
	for i := 0; i < workers; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := range got {
		for j, pair := range [][2][]float64{{got[i].dq, want[i].dq}, {got[i].dk, want[i].dk}, {got[i].dv, want[i].dv}} {
			if e := relErr(pair[0], pair[1]); e != 0 {
				t.Errorf("graph %d gradient %d: concurrent run differs by %.3g", i, j, e)
			}
		}
	}
}

// TestGraphLispMachine runs forward and backward on Gorgonia's LispMachine
// (DoDiff of every op) and compares with the oracle, o and lse both in the
// loss.
func TestGraphLispMachine(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	pr := problem{B: 2, H: 2, Hkv: 1, Nq: 70, Nk: 90, D: 5, Opts: Options{Causal: true, KeyLengths: []int{90, 60}}}
	q, k, v := pr.inputs(rng)
	do, dl := randn(rng, pr.qLen()), randn(rng, pr.lLen())
	var want [3][]float64
	want[0], want[1], want[2] = pr.naive(q, k, v).backward(do, dl)

	g := gorgonia.NewGraph()
	in, o, lse, err := buildGraph(g, pr, fused, q, k, v)
	if err != nil {
		t.Fatal(err)
	}
	lo, err := weightedSum(o, graph.Input(g, "do", graph.NewTensor([]int{pr.B, pr.H, pr.Nq, pr.D}, do)))
	if err != nil {
		t.Fatal(err)
	}
	ll, err := weightedSum(lse, graph.Input(g, "dl", graph.NewTensor([]int{pr.B, pr.H, pr.Nq}, dl)))
	if err != nil {
		t.Fatal(err)
	}
	// The LispMachine differentiates the graph's last node, the loss.
	if _, err := gorgonia.Add(lo, ll); err != nil {
		t.Fatal(err)
	}
	m := gorgonia.NewLispMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"dq", "dk", "dv"} {
		got, err := graph.Grads[float64](in[i])
		if err != nil {
			t.Fatal(err)
		}
		if e := relErr(got, want[i]); e > 1e-12 {
			t.Errorf("LispMachine %s: error %.3g", name, e)
		}
	}
}
