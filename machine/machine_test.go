package machine_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/machine"
	"github.com/flashgorgon/flashgorgon/nn"
	"github.com/flashgorgon/flashgorgon/ops/attention"
	"github.com/flashgorgon/flashgorgon/ops/softmax"
)

// A builder adds one test graph to g in dtype dt, with its inputs drawn
// from a fixed seed (so that two calls build the same graph with the same
// values), and returns a scalar loss and the inputs to differentiate.
type builder func(g *gorgonia.ExprGraph, dt tensor.Dtype) (loss *gorgonia.Node, wrt []*gorgonia.Node, err error)

// randInput adds an input node of the given shape with standard normal
// entries.
func randInput(g *gorgonia.ExprGraph, dt tensor.Dtype, rng *rand.Rand, name string, shape ...int) *gorgonia.Node {
	if dt == tensor.Float32 {
		return graph.Input(g, name, graph.RandTensor[float32](rng, shape...))
	}
	return graph.Input(g, name, graph.RandTensor[float64](rng, shape...))
}

// weighted returns Σ out∘R for a random R of out's shape, a loss whose
// gradient reaches every element of out with its own weight.
func weighted(g *gorgonia.ExprGraph, dt tensor.Dtype, rng *rand.Rand, out *gorgonia.Node) (*gorgonia.Node, error) {
	if out.IsScalar() {
		return out, nil
	}
	r := randInput(g, dt, rng, fmt.Sprintf("R%d", out.ID()), out.Shape()...)
	p, err := gorgonia.HadamardProd(out, r)
	if err != nil {
		return nil, err
	}
	return gorgonia.Sum(p)
}

// unary builds loss = Σ f(x)∘R for x of the given shape.
func unary(shape []int, f func(*gorgonia.Node) (*gorgonia.Node, error)) builder {
	return func(g *gorgonia.ExprGraph, dt tensor.Dtype) (*gorgonia.Node, []*gorgonia.Node, error) {
		rng := rand.New(rand.NewSource(1))
		x := randInput(g, dt, rng, "x", shape...)
		y, err := f(x)
		if err != nil {
			return nil, nil, err
		}
		loss, err := weighted(g, dt, rng, y)
		return loss, []*gorgonia.Node{x}, err
	}
}

// attn builds loss = Σ o∘R1 + Σ L∘R2 (+ a Gorgonia add and tanh on o when
// inPlace: ops that the TapeMachine runs in place) for attention with the
// given sizes and options.
func attn(b, h, hkv, nq, nk, d int, opts attention.Options, inPlace bool) builder {
	return func(g *gorgonia.ExprGraph, dt tensor.Dtype) (*gorgonia.Node, []*gorgonia.Node, error) {
		rng := rand.New(rand.NewSource(2))
		q := randInput(g, dt, rng, "q", b, h, nq, d)
		k := randInput(g, dt, rng, "k", b, hkv, nk, d)
		v := randInput(g, dt, rng, "v", b, hkv, nk, d)
		o, lse, err := attention.AttentionLSE(q, k, v, opts)
		if err != nil {
			return nil, nil, err
		}
		if inPlace {
			x := randInput(g, dt, rng, "x", b, h, nq, d)
			if o, err = gorgonia.Add(o, x); err != nil {
				return nil, nil, err
			}
			if o, err = gorgonia.Tanh(o); err != nil {
				return nil, nil, err
			}
		}
		l1, err := weighted(g, dt, rng, o)
		if err != nil {
			return nil, nil, err
		}
		// Rows without a visible key have L = −Inf: weight only the finite
		// ones (a zero weight on −Inf would be NaN).
		l2, err := weighted(g, dt, rng, lse)
		if err != nil {
			return nil, nil, err
		}
		if opts.KeyLengths == nil {
			l1, err = gorgonia.Add(l1, l2)
		}
		return l1, []*gorgonia.Node{q, k, v}, err
	}
}

// layers builds an nn stack: embedding, layer norm, linear, GELU,
// multi-head attention (GQA), RMS norm and a cross-entropy loss.
func layers(g *gorgonia.ExprGraph, dt tensor.Dtype) (*gorgonia.Node, []*gorgonia.Node, error) {
	const batch, seq, vocab, width = 2, 9, 11, 12
	rng := rand.New(rand.NewSource(3))
	s := nn.NewScope(g, dt, true)
	emb, err := nn.NewEmbedding("emb", vocab, width, dt, rng)
	if err != nil {
		return nil, nil, err
	}
	ln, _ := nn.NewLayerNorm("ln", width, dt)
	lin, err := nn.NewLinear("lin", width, 2*width, true, dt, rng, 0.3)
	if err != nil {
		return nil, nil, err
	}
	back, err := nn.NewLinear("back", 2*width, width, false, dt, rng, 0.3)
	if err != nil {
		return nil, nil, err
	}
	mha, err := nn.NewMultiHeadAttention("mha", width, 4, 2, true, dt, rng, 0.3)
	if err != nil {
		return nil, nil, err
	}
	rms, _ := nn.NewRMSNorm("rms", width, dt)
	head, err := nn.NewLinear("head", width, vocab, true, dt, rng, 0.3)
	if err != nil {
		return nil, nil, err
	}
	tok, err := nn.IndexInput(g, "tokens", batch*seq)
	if err != nil {
		return nil, nil, err
	}
	ids, tgt := make([]int, batch*seq), make([]int, batch*seq)
	for i := range ids {
		ids[i], tgt[i] = rng.Intn(vocab), rng.Intn(vocab)
	}
	tgt[3] = nn.IgnoreIndex
	if err := nn.SetIndices(tok, ids); err != nil {
		return nil, nil, err
	}
	x, err := emb.Forward(s, tok)
	steps := []func(*gorgonia.Node) (*gorgonia.Node, error){
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return ln.Forward(s, x) },
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return lin.Forward(s, x) },
		nn.GELU,
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return back.Forward(s, x) },
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return mha.Forward(s, x, batch, seq) },
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return rms.Forward(s, x) },
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return head.Forward(s, x) },
	}
	for _, f := range steps {
		if err != nil {
			return nil, nil, err
		}
		x, err = f(x)
	}
	if err != nil {
		return nil, nil, err
	}
	ce, err := nn.NewCrossEntropy(x, nn.IgnoreIndex)
	if err != nil {
		return nil, nil, err
	}
	if _, err := ce.SetTargets(tgt); err != nil {
		return nil, nil, err
	}
	_, wrt := s.Params()
	return ce.Loss, wrt, nil
}

// gptConfig is a small GPT with dropout, so that its masks are inputs too.
var gptConfig = nn.Config{Vocab: 13, Context: 8, Layers: 2, Heads: 4, KVHeads: 2, Width: 16, MLPRatio: 4, Dropout: 0.1}

// gpt builds a GPT's training graph (logits, cross-entropy) for a fixed
// batch, with its dropout masks drawn from a fixed seed.
func gpt(cfg nn.Config, batch int) builder {
	return func(g *gorgonia.ExprGraph, dt tensor.Dtype) (*gorgonia.Node, []*gorgonia.Node, error) {
		loss, wrt, _, err := gptGraph(cfg, batch, g, dt)
		return loss, wrt, err
	}
}

// gptGraph is gpt's graph, with the model's parameters in the order of wrt.
func gptGraph(cfg nn.Config, batch int, g *gorgonia.ExprGraph, dt tensor.Dtype) (*gorgonia.Node, []*gorgonia.Node, []*nn.Param, error) {
	rng := rand.New(rand.NewSource(4))
	model, err := nn.NewGPT(cfg, dt, rng)
	if err != nil {
		return nil, nil, nil, err
	}
	seq := cfg.Context
	s := nn.NewScope(g, dt, true)
	tok, err := nn.IndexInput(g, "tokens", batch*seq)
	if err != nil {
		return nil, nil, nil, err
	}
	pos, err := nn.IndexInput(g, "positions", batch*seq)
	if err != nil {
		return nil, nil, nil, err
	}
	ids, tgt, ps := make([]int, batch*seq), make([]int, batch*seq), make([]int, batch*seq)
	for i := range ids {
		ids[i], tgt[i], ps[i] = rng.Intn(cfg.Vocab), rng.Intn(cfg.Vocab), i%seq
	}
	if err := nn.SetIndices(tok, ids); err != nil {
		return nil, nil, nil, err
	}
	if err := nn.SetIndices(pos, ps); err != nil {
		return nil, nil, nil, err
	}
	logits, err := model.Forward(s, tok, pos, batch, seq)
	if err != nil {
		return nil, nil, nil, err
	}
	ce, err := nn.NewCrossEntropy(logits, nn.IgnoreIndex)
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := ce.SetTargets(tgt); err != nil {
		return nil, nil, nil, err
	}
	if err := s.ResampleDropout(rng); err != nil {
		return nil, nil, nil, err
	}
	params := model.Params()
	wrt := make([]*gorgonia.Node, len(params))
	for i, p := range params {
		wrt[i] = s.Node(p)
	}
	return ce.Loss, wrt, params, nil
}

// cases are the graphs every test runs.
var cases = []struct {
	name  string
	build builder
}{
	{"softmax/last", unary([]int{3, 5, 7}, func(x *gorgonia.Node) (*gorgonia.Node, error) { return softmax.Softmax(x, -1) })},
	{"logsoftmax/middle", unary([]int{3, 5, 7}, func(x *gorgonia.Node) (*gorgonia.Node, error) { return softmax.LogSoftmax(x, 1) })},
	{"logsumexp/first", unary([]int{6, 4}, func(x *gorgonia.Node) (*gorgonia.Node, error) { return softmax.LogSumExp(x, 0) })},
	{"logsumexp/vector", unary([]int{17}, func(x *gorgonia.Node) (*gorgonia.Node, error) { return softmax.LogSumExp(x, 0) })},
	{"gorgonia/arithmetic", unary([]int{4, 6}, func(x *gorgonia.Node) (*gorgonia.Node, error) {
		// Gorgonia's own ops that graphs use beside ours: scalar and
		// broadcast arithmetic, transpose, matrix product, reductions.
		g := x.Graph()
		c := gorgonia.NewConstant(2.5)
		if x.Dtype() == tensor.Float32 {
			c = gorgonia.NewConstant(float32(2.5))
		}
		b := randInput(g, x.Dtype(), rand.New(rand.NewSource(9)), "b", 6)
		y := gorgonia.Must(gorgonia.Mul(x, c))
		y = gorgonia.Must(gorgonia.BroadcastAdd(y, b, nil, []byte{0}))
		y = gorgonia.Must(gorgonia.Sigmoid(y))
		t := gorgonia.Must(gorgonia.Transpose(y))
		p := gorgonia.Must(gorgonia.Mul(y, t)) // [4,4]
		p = gorgonia.Must(gorgonia.Square(p))
		m := gorgonia.Must(gorgonia.Mean(p, 1)) // [4]
		s := gorgonia.Must(gorgonia.Sum(y, 0))  // [6]
		return gorgonia.Must(gorgonia.Concat(0, m, s)), nil
	})},
	{"gorgonia/mlp", gorgoniaMLP},
	{"gorgonia/batched", gorgoniaBatched},
	{"attention/causal", attn(2, 2, 2, 17, 17, 5, attention.Options{Causal: true}, false)},
	{"attention/causal-nq<nk", attn(1, 2, 2, 5, 17, 4, attention.Options{Causal: true}, false)},
	{"attention/padding", attn(2, 2, 2, 9, 17, 3, attention.Options{KeyLengths: []int{17, 6}}, false)},
	{"attention/gqa", attn(2, 4, 2, 9, 9, 4, attention.Options{}, false)},
	{"attention/in-place-after", attn(1, 2, 1, 8, 8, 4, attention.Options{Causal: true}, true)},
	{"nn/layers", layers},
	{"nn/gpt", gpt(gptConfig, 2)},
}

// named returns the builder of the case called name.
func named(name string) builder {
	for _, c := range cases {
		if c.name == name {
			return c.build
		}
	}
	panic("no test case " + name)
}

// flat returns a value's elements as float64.
func flat(t *testing.T, v gorgonia.Value) []float64 {
	t.Helper()
	switch x := v.(type) {
	case *gorgonia.F64:
		return []float64{float64(*x)}
	case *gorgonia.F32:
		return []float64{float64(*x)}
	case *tensor.Dense:
		switch d := x.Data().(type) {
		case []float64:
			return append([]float64(nil), d...)
		case []float32:
			out := make([]float64, len(d))
			for i, e := range d {
				out[i] = float64(e)
			}
			return out
		case float64:
			return []float64{d}
		case float32:
			return []float64{float64(d)}
		}
	}
	t.Fatalf("cannot read a %T", v)
	return nil
}

// reference runs a fresh copy of the case on Gorgonia's TapeMachine
// (graph.ForwardBackward) and returns the loss and the gradients.
func reference(t *testing.T, b builder, dt tensor.Dtype) (float64, [][]float64) {
	t.Helper()
	g := gorgonia.NewGraph()
	loss, wrt, err := b(g, dt)
	if err != nil {
		t.Fatal(err)
	}
	if err := graph.ForwardBackward(loss, wrt...); err != nil {
		t.Fatal(err)
	}
	grads := make([][]float64, len(wrt))
	for i, w := range wrt {
		gv, err := w.Grad()
		if err != nil {
			t.Fatal(err)
		}
		grads[i] = flat(t, gv)
	}
	return flat(t, loss.Value())[0], grads
}

// onMachine builds a fresh copy of the case with its gradient nodes and a
// machine over it, on the CPU unless opts name another backend (the CPU
// machine is the reference the device tests compare with).
func onMachine(t *testing.T, b builder, dt tensor.Dtype, opts ...machine.Option) (*machine.Machine, *gorgonia.Node, []*gorgonia.Node, []*gorgonia.Node) {
	t.Helper()
	g := gorgonia.NewGraph()
	loss, wrt, err := b(g, dt)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := gorgonia.Grad(loss, wrt...)
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]machine.Option{machine.OnDevice("cpu")}, opts...)
	m, err := machine.New(g, append(opts, machine.Keep(loss), machine.Keep(grads...))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, loss, wrt, grads
}

// results runs m and reads the loss and gradients.
func results(t *testing.T, m *machine.Machine, loss *gorgonia.Node, grads []*gorgonia.Node) (float64, [][]float64) {
	t.Helper()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	lv, err := m.Value(loss)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]float64, len(grads))
	for i, g := range grads {
		v, err := m.Value(g)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = flat(t, v)
	}
	return flat(t, lv)[0], out
}

// sameResults fails t unless two runs gave the same loss and gradients to
// the bit; got and want name the runs in the message.
func sameResults(t *testing.T, got, want string, gotLoss, wantLoss float64, gotGrads, wantGrads [][]float64) {
	t.Helper()
	if gotLoss != wantLoss {
		t.Fatalf("loss %v %s, %v %s", gotLoss, got, wantLoss, want)
	}
	for i := range wantGrads {
		for j := range wantGrads[i] {
			if gotGrads[i][j] != wantGrads[i][j] {
				t.Fatalf("gradient %d [%d]: %v %s, %v %s", i, j, gotGrads[i][j], got, wantGrads[i][j], want)
			}
		}
	}
}

// tolerance is the largest |machine − reference| allowed for a value of
// magnitude scale: the machine runs the same ops in the same order, so the
// float64 results agree to rounding and float32 to a few ulp.
func tolerance(dt tensor.Dtype, scale float64) float64 {
	if dt == tensor.Float32 {
		return 1e-5 * (1 + scale)
	}
	return 1e-12 * (1 + scale)
}

func compare(t *testing.T, what string, dt tensor.Dtype, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	scale := 0.0
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	tol := tolerance(dt, scale)
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= tol) {
			t.Fatalf("%s[%d] = %g, TapeMachine %g (difference %g > %g)", what, i, got[i], want[i], d, tol)
		}
	}
}

// TestMatchesTapeMachine checks the loss and every gradient of each case
// against Gorgonia's TapeMachine on a separately built copy of the graph,
// and that a second run gives bit-identical results (no state leaks from
// one run into the next through the reused buffers).
func TestMatchesTapeMachine(t *testing.T) {
	for _, c := range cases {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", c.name, dt), func(t *testing.T) {
				wantLoss, wantGrads := reference(t, c.build, dt)
				m, loss, wrt, grads := onMachine(t, c.build, dt)
				gotLoss, gotGrads := results(t, m, loss, grads)
				compare(t, "loss", dt, []float64{gotLoss}, []float64{wantLoss})
				for i := range grads {
					compare(t, "gradient of "+wrt[i].Name(), dt, gotGrads[i], wantGrads[i])
				}
				m.Reset()
				againLoss, againGrads := results(t, m, loss, grads)
				if againLoss != gotLoss {
					t.Fatalf("second run: loss %v, first %v", againLoss, gotLoss)
				}
				for i := range grads {
					for j := range againGrads[i] {
						if againGrads[i][j] != gotGrads[i][j] {
							t.Fatalf("second run: gradient of %s [%d] = %v, first %v", wrt[i].Name(), j, againGrads[i][j], gotGrads[i][j])
						}
					}
				}
				r := m.Report()
				if r.BufferBytes >= r.OutputBytes && r.Ops > 4 {
					t.Errorf("no buffer reused: %d bytes of buffers for %d bytes of outputs", r.BufferBytes, r.OutputBytes)
				}
			})
		}
	}
}

// TestFiniteDifferences checks the machine's float64 gradients against
// central differences of the loss the machine computes (eps 1e-6, atol
// 1e-5, rtol 1e-3, as graph.CheckGradient), at a few entries of every input.
func TestFiniteDifferences(t *testing.T) {
	const eps, atol, rtol = 1e-6, 1e-5, 1e-3
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, loss, wrt, grads := onMachine(t, c.build, tensor.Float64)
			_, g := results(t, m, loss, grads)
			lossAt := func() float64 {
				if err := m.RunAll(); err != nil {
					t.Fatal(err)
				}
				v, err := m.Value(loss)
				if err != nil {
					t.Fatal(err)
				}
				return flat(t, v)[0]
			}
			for i, w := range wrt {
				x := w.Value().(*tensor.Dense).Data().([]float64)
				n := min(len(x), 4)
				if testing.Short() {
					n = 1
				}
				for s := 0; s < n; s++ {
					j := s * len(x) / n
					orig := x[j]
					x[j] = orig + eps
					up := lossAt()
					x[j] = orig - eps
					down := lossAt()
					x[j] = orig
					fd := (up - down) / (2 * eps)
					if d := math.Abs(fd - g[i][j]); d > atol+rtol*math.Abs(fd) {
						t.Errorf("∂loss/∂%s[%d]: machine %g, central difference %g", w.Name(), j, g[i][j], fd)
					}
				}
			}
		})
	}
}
