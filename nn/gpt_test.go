package nn

import (
	"math"
	"math/rand"
	"path/filepath"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
)

// paramInputs returns float64 copies of ps' values, for a gradient check.
func paramInputs(ps []*Param) []*tensor.Dense {
	out := make([]*tensor.Dense, len(ps))
	for i, p := range ps {
		out[i] = graph.NewTensor(p.Value.Shape().Clone(), toF64(p.Value))
	}
	return out
}

// bindScope makes a scope whose parameters are the given input nodes.
func bindScope(g *gorgonia.ExprGraph, ps []*Param, nodes []*gorgonia.Node, train bool) (*Scope, error) {
	s := NewScope(g, tensor.Float64, train)
	for i, p := range ps {
		if err := s.Bind(p, nodes[i]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// refMHA is multi-head attention by float64 loops, straight from the
// definition, for x [B·N, Width] and the layer's weights.
func refMHA(a *MultiHeadAttention, x []float64, b, n, width int) []float64 {
	h, hkv, hd := a.Heads, a.KVHeads, a.HeadDim
	cols := (h + 2*hkv) * hd
	lin := func(x []float64, rows, in, out int, w, bias []float64) []float64 {
		y := make([]float64, rows*out)
		for r := 0; r < rows; r++ {
			for o := 0; o < out; o++ {
				s := bias[o]
				for i := 0; i < in; i++ {
					s += x[r*in+i] * w[i*out+o]
				}
				y[r*out+o] = s
			}
		}
		return y
	}
	qkv := lin(x, b*n, width, cols, toF64(a.QKV.W.Value), toF64(a.QKV.B.Value))
	at := func(bi, ti, col int) float64 { return qkv[(bi*n+ti)*cols+col] }
	o := make([]float64, b*n*h*hd)
	for bi := 0; bi < b; bi++ {
		for hi := 0; hi < h; hi++ {
			kh := hi / (h / hkv) // the key/value head this query head reads
			for i := 0; i < n; i++ {
				s := make([]float64, n)
				mx := math.Inf(-1)
				for j := 0; j <= i; j++ {
					for c := 0; c < hd; c++ {
						s[j] += at(bi, i, hi*hd+c) * at(bi, j, (h+kh)*hd+c)
					}
					s[j] /= math.Sqrt(float64(hd))
					mx = math.Max(mx, s[j])
				}
				z := 0.0
				for j := 0; j <= i; j++ {
					s[j] = math.Exp(s[j] - mx)
					z += s[j]
				}
				for j := 0; j <= i; j++ {
					for c := 0; c < hd; c++ {
						o[(bi*n+i)*h*hd+hi*hd+c] += s[j] / z * at(bi, j, (h+hkv+kh)*hd+c)
					}
				}
			}
		}
	}
	return lin(o, b*n, h*hd, width, toF64(a.Proj.W.Value), toF64(a.Proj.B.Value))
}

func TestMultiHeadAttention(t *testing.T) {
	for _, tc := range []struct {
		name                string
		b, n, width, h, hkv int
	}{
		{"mha", 2, 3, 4, 2, 2},
		{"gqa", 1, 4, 8, 4, 2},
		{"mqa", 2, 3, 4, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(30))
			a, err := NewMultiHeadAttention("attn", tc.width, tc.h, tc.hkv, true, tensor.Float64, rng, 0.5)
			if err != nil {
				t.Fatal(err)
			}
			// Larger weights than GPT-2's init, so that the attention is not uniform.
			for _, p := range a.Params() {
				p.fillNormal(rng, 0.5)
			}
			x := randSlice(rng, tc.b*tc.n*tc.width, 1, 0)
			ps := a.Params()
			build := func(g *gorgonia.ExprGraph, in []*gorgonia.Node) (*gorgonia.Node, error) {
				s, err := bindScope(g, ps, in[1:], false)
				if err != nil {
					return nil, err
				}
				return a.Forward(s, in[0], tc.b, tc.n)
			}
			inputs := append([]*tensor.Dense{graph.NewTensor([]int{tc.b * tc.n, tc.width}, x)}, paramInputs(ps)...)
			got := runForward(t, build, inputs...)
			assertClose(t, "forward", got, refMHA(a, x, tc.b, tc.n, tc.width), 1e-12)
			checkGrad(t, build, inputs, graph.CheckOptions{Seed: 2})
		})
	}
	if _, err := NewMultiHeadAttention("x", 6, 4, 2, true, tensor.Float64, rand.New(rand.NewSource(1)), 0.02); err == nil {
		t.Fatal("width 6 with 4 heads accepted")
	}
}

func tinyConfig() Config {
	return Config{Vocab: 7, Context: 5, Layers: 2, Heads: 2, KVHeads: 1, Width: 8, MLPRatio: 2}
}

// lossBuilder builds the GPT's cross-entropy on fixed tokens and targets with
// the parameters as inputs.
func lossBuilder(m *GPT, tokens, targets []int, b, n int, train bool, masks func(*Scope)) graph.Builder {
	return func(g *gorgonia.ExprGraph, in []*gorgonia.Node) (*gorgonia.Node, error) {
		s, err := bindScope(g, m.Params(), in, train)
		if err != nil {
			return nil, err
		}
		tok, err := IndexInput(g, "tokens", len(tokens))
		if err != nil {
			return nil, err
		}
		pos, err := IndexInput(g, "positions", len(tokens))
		if err != nil {
			return nil, err
		}
		p := make([]int, len(tokens))
		for i := range p {
			p[i] = i % n
		}
		SetIndices(tok, tokens)
		SetIndices(pos, p)
		logits, err := m.Forward(s, tok, pos, b, n)
		if err != nil {
			return nil, err
		}
		if masks != nil {
			masks(s)
		}
		ce, err := NewCrossEntropy(logits, IgnoreIndex)
		if err != nil {
			return nil, err
		}
		_, err = ce.SetTargets(targets)
		return ce.Loss, err
	}
}

func TestGPTGradient(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rms     bool
		dropout float64
	}{
		{"layernorm", false, 0},
		{"rmsnorm", true, 0},
		{"dropout", false, 0.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig()
			cfg.RMSNorm, cfg.Dropout = tc.rms, tc.dropout
			rng := rand.New(rand.NewSource(31))
			m, err := NewGPT(cfg, tensor.Float64, rng)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range m.Params() {
				p.fillNormal(rng, 0.3) // away from the init's near-symmetric point
			}
			tokens := []int{1, 2, 3, 4, 0, 6, 5, 5}
			targets := []int{2, 3, IgnoreIndex, 0, 6, 5, 1, 2}
			// Fixed masks: the same draw for every run of the check.
			masks := func(s *Scope) {
				if err := s.ResampleDropout(rand.New(rand.NewSource(5))); err != nil {
					t.Fatal(err)
				}
			}
			build := lossBuilder(m, tokens, targets, 2, 4, tc.dropout > 0, masks)
			checkGrad(t, build, paramInputs(m.Params()), graph.CheckOptions{Seed: 3, Projections: 6})
		})
	}
}

func TestGPTConfigErrors(t *testing.T) {
	good := tinyConfig()
	for _, mod := range []func(*Config){
		func(c *Config) { c.Context = 0 },
		func(c *Config) { c.Vocab = 0 },
		func(c *Config) { c.Width = 7 },
		func(c *Config) { c.KVHeads = 3 },
		func(c *Config) { c.Dropout = 1 },
		func(c *Config) { c.MLPRatio = 0 },
		func(c *Config) { c.Layers = -1 },
	} {
		c := good
		mod(&c)
		if _, err := NewGPT(c, tensor.Float32, rand.New(rand.NewSource(1))); err == nil {
			t.Errorf("config %+v accepted", c)
		} else {
			t.Log(err)
		}
	}
	m, _ := NewGPT(good, tensor.Float32, rand.New(rand.NewSource(1)))
	if _, err := m.NewRunner(1, good.Context+1, Infer); err == nil {
		t.Error("sequence longer than the context accepted")
	}
	r, err := m.NewRunner(1, 2, Eval)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run([]int{1, 7}, []int{1, 1}, nil); err == nil {
		t.Error("token outside the vocabulary accepted")
	}
}

func TestGPTParamCount(t *testing.T) {
	cfg := Config{Vocab: 10, Context: 6, Layers: 3, Heads: 4, KVHeads: 2, Width: 8, MLPRatio: 4}
	m, err := NewGPT(cfg, tensor.Float32, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	// By hand: d = 2, qkv columns (4 + 2·2)·2 = 16.
	perBlock := 2*8 + (8*16 + 16) + (8*8 + 8) + 2*8 + (8*32 + 32) + (32*8 + 8)
	want := 10*8 + 6*8 + 3*perBlock + 2*8 + 8*10
	if got := m.NumParams(); got != want {
		t.Fatalf("NumParams = %d, want %d", got, want)
	}
	// The count Config.Validate bounds (from the formula, before any
	// allocation) agrees, for both norms.
	if got, ok := cfg.numParams(); !ok || got != want {
		t.Fatalf("Config.numParams = %d, %t, want %d", got, ok, want)
	}
	cfg.RMSNorm = true
	rm, _ := NewGPT(cfg, tensor.Float32, rand.New(rand.NewSource(1)))
	if got, ok := cfg.numParams(); !ok || got != rm.NumParams() {
		t.Fatalf("RMSNorm: Config.numParams = %d, %t, model %d", got, ok, rm.NumParams())
	}
}

func TestGPTInit(t *testing.T) {
	cfg := Config{Vocab: 64, Context: 32, Layers: 8, Heads: 4, Width: 128, MLPRatio: 4}
	m, _ := NewGPT(cfg, tensor.Float64, rand.New(rand.NewSource(2)))
	std := func(p *Param) float64 {
		s := 0.0
		for _, v := range toF64(p.Value) {
			s += v * v
		}
		return math.Sqrt(s / float64(p.Size()))
	}
	near := func(p *Param, want float64) {
		if got := std(p); math.Abs(got-want) > 0.05*want {
			t.Errorf("%s: std %.5f, want %.5f", p.Name, got, want)
		}
	}
	near(m.TokEmb.W, 0.02)
	near(m.Blocks[3].FC.W, 0.02)
	near(m.Blocks[3].Attn.QKV.W, 0.02)
	near(m.Blocks[3].Attn.Proj.W, 0.02/math.Sqrt(16))
	near(m.Blocks[3].Proj.W, 0.02/math.Sqrt(16))
	if std(m.Blocks[0].FC.B) != 0 || toF64(m.NormF.Gain.Value)[5] != 1 {
		t.Error("biases must start at 0 and gains at 1")
	}
}

// TestGPTOverfits trains a 2-layer model on one tiny batch: the loss must go
// to nearly zero.
func TestGPTOverfits(t *testing.T) {
	cfg := Config{Vocab: 12, Context: 8, Layers: 2, Heads: 2, Width: 32, MLPRatio: 4}
	rng := rand.New(rand.NewSource(40))
	m, err := NewGPT(cfg, tensor.Float32, rng)
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.NewRunner(4, 8, Train)
	if err != nil {
		t.Fatal(err)
	}
	opt, _ := NewAdamW(r.Params(), 0.9, 0.99, 1e-8, 0)
	tokens := make([]int, 32)
	targets := make([]int, 32)
	for i := range tokens {
		tokens[i] = rng.Intn(cfg.Vocab)
		targets[i] = rng.Intn(cfg.Vocab) // arbitrary: only memorization can fit them
	}
	first, last := 0.0, 0.0
	for step := 0; step < 300; step++ {
		loss, _, err := r.TrainStep(opt, 3e-3, 1, tokens, targets, nil)
		if err != nil {
			t.Fatal(err)
		}
		if step == 0 {
			first = loss
		}
		last = loss
	}
	t.Logf("loss %.4f → %.4f", first, last)
	if math.Abs(first-math.Log(12)) > 0.2 {
		t.Errorf("initial loss %.3f, want ≈ ln 12 = %.3f", first, math.Log(12))
	}
	if last > 0.02 {
		t.Fatalf("final loss %.4f: did not overfit", last)
	}
}

// TestRunnerReusesGraph runs one graph on several batches: each result must
// equal, bit for bit, a fresh graph's result on the same batch.
func TestRunnerReusesGraph(t *testing.T) {
	cfg := tinyConfig()
	m, _ := NewGPT(cfg, tensor.Float32, rand.New(rand.NewSource(3)))
	r, _ := m.NewRunner(2, 4, Eval)
	batches := [][]int{{1, 2, 3, 4, 5, 6, 0, 1}, {6, 6, 5, 1, 0, 2, 3, 3}}
	targets := []int{2, 3, 4, 5, 6, 0, 1, 2}
	var first []float32
	for round := 0; round < 2; round++ {
		for i, b := range batches {
			if _, err := r.Run(b, targets, nil); err != nil {
				t.Fatal(err)
			}
			got := append([]float32(nil), r.LogitsData().([]float32)...)
			fresh, _ := m.NewRunner(2, 4, Eval)
			fresh.Run(b, targets, nil)
			want := fresh.LogitsData().([]float32)
			for j := range got {
				if got[j] != want[j] {
					t.Fatalf("round %d batch %d: logit %d = %g, fresh graph %g", round, i, j, got[j], want[j])
				}
			}
			if i == 0 && round == 0 {
				first = got
			}
			if i == 0 && round == 1 {
				for j := range got {
					if got[j] != first[j] {
						t.Fatal("same batch, different logits on the second round")
					}
				}
			}
		}
	}
}

// TestCheckpointResume saves a model and optimizer mid-training, loads them
// into a fresh model, and checks identical logits and an identical next step,
// bit for bit.
func TestCheckpointResume(t *testing.T) {
	cfg := Config{Vocab: 9, Context: 6, Layers: 2, Heads: 2, Width: 16, MLPRatio: 2, Dropout: 0.1}
	data := rand.New(rand.NewSource(50))
	batch := func() ([]int, []int) {
		tok, tgt := make([]int, 12), make([]int, 12)
		for i := range tok {
			tok[i], tgt[i] = data.Intn(9), data.Intn(9)
		}
		return tok, tgt
	}
	m, _ := NewGPT(cfg, tensor.Float32, rand.New(rand.NewSource(51)))
	r, _ := m.NewRunner(2, 6, Train)
	opt, _ := NewAdamW(r.Params(), 0.9, 0.95, 1e-8, 0.1)
	for s := 0; s < 3; s++ {
		tok, tgt := batch()
		if _, _, err := r.TrainStep(opt, 1e-2, 1, tok, tgt, rand.New(rand.NewSource(int64(s)))); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "gpt.safetensors")
	if err := SaveCheckpoint(path, m.Params(), opt, 3, map[string]string{"config": cfg.JSON()}); err != nil {
		t.Fatal(err)
	}

	ck, err := ReadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg2, err := ParseConfig(ck.Metadata["config"])
	if err != nil || cfg2 != cfg {
		t.Fatalf("config read back as %+v (%v)", cfg2, err)
	}
	m2, _ := NewGPT(cfg2, tensor.Float32, rand.New(rand.NewSource(99)))
	r2, _ := m2.NewRunner(2, 6, Train)
	opt2, _ := NewAdamW(r2.Params(), 0.5, 0.5, 1, 0) // overwritten by Restore
	if err := ck.Restore(m2.Params(), opt2); err != nil {
		t.Fatal(err)
	}

	e1, _ := m.NewRunner(2, 6, Eval)
	e2, _ := m2.NewRunner(2, 6, Eval)
	tok, tgt := batch()
	l1, _ := e1.Run(tok, tgt, nil)
	l2, _ := e2.Run(tok, tgt, nil)
	if l1 != l2 {
		t.Fatalf("loss %v vs %v after loading", l1, l2)
	}
	a, b := e1.LogitsData().([]float32), e2.LogitsData().([]float32)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("logit %d: %g vs %g after loading", i, a[i], b[i])
		}
	}
	for s := 3; s < 5; s++ {
		tok, tgt := batch()
		la, _, err := r.TrainStep(opt, 1e-2, 1, tok, tgt, rand.New(rand.NewSource(int64(s))))
		if err != nil {
			t.Fatal(err)
		}
		lb, _, err := r2.TrainStep(opt2, 1e-2, 1, tok, tgt, rand.New(rand.NewSource(int64(s))))
		if err != nil {
			t.Fatal(err)
		}
		if la != lb {
			t.Fatalf("step %d: loss %v vs %v", s, la, lb)
		}
		p1, p2 := m.Params(), m2.Params()
		for i := range p1 {
			if !sameBits(p1[i].Value, p2[i].Value) {
				t.Fatalf("step %d: %s differs after the resumed step", s, p1[i].Name)
			}
		}
	}
}
