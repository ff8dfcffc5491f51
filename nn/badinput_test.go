package nn

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestBadInput calls nn's public API with each misuse we know of and checks
// that it returns an error mentioning the values involved, never panics.
func TestBadInput(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	rng := func() *rand.Rand { return rand.New(rand.NewSource(1)) }
	cfg := tinyConfig()
	m, err := NewGPT(cfg, tensor.Float32, rng())
	if err != nil {
		t.Fatal(err)
	}
	dcfg := cfg
	dcfg.Dropout = 0.2
	dm, err := NewGPT(dcfg, tensor.Float32, rng())
	if err != nil {
		t.Fatal(err)
	}
	train, err := m.NewRunner(1, 4, Train)
	if err != nil {
		t.Fatal(err)
	}
	eval, err := m.NewRunner(1, 4, Eval)
	if err != nil {
		t.Fatal(err)
	}
	dtrain, err := dm.NewRunner(1, 4, Train)
	if err != nil {
		t.Fatal(err)
	}
	newOpt := func() *AdamW {
		o, err := NewAdamW(train.Params(), 0.9, 0.95, 1e-8, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	tok, tgt := []int{1, 2, 3, 4}, []int{2, 3, 4, 5}
	step := func(mod func(*AdamW), lr, clip float64) func() error {
		return func() error {
			o := newOpt()
			if mod != nil {
				mod(o)
			}
			_, _, err := train.TrainStep(o, lr, clip, tok, tgt, nil)
			return err
		}
	}
	adamStep := func(mod func(*AdamW), lr float64, grads func() []*tensor.Dense) func() error {
		return func() error {
			o := newOpt()
			if mod != nil {
				mod(o)
			}
			return o.Step(grads(), lr)
		}
	}
	zeroGrads := func() []*tensor.Dense {
		var gs []*tensor.Dense
		for _, p := range train.Params() {
			gs = append(gs, newDense(p.Value.Dtype(), p.Value.Shape().Clone()...))
		}
		return gs
	}
	nanGrads := func() []*tensor.Dense {
		gs := zeroGrads()
		floats[float32](gs[3])[5] = float32(nan)
		return gs
	}
	withCfg := func(mod func(*Config)) func() error {
		return func() error {
			c := cfg
			mod(&c)
			_, err := NewGPT(c, tensor.Float32, rng())
			return err
		}
	}
	gen := func(r *Runner, prompts [][]int, n int, temp float64, g *rand.Rand) func() error {
		return func() error { _, err := Generate(r, prompts, n, temp, g); return err }
	}
	sample := func(logits []float64, temp float64, g *rand.Rand) func() error {
		return func() error { _, err := SampleLogits(logits, temp, g); return err }
	}
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "ckpt.safetensors")
	save := func(path string, ps []*Param, opt *AdamW, step int, meta map[string]string) func() error {
		return func() error { return SaveCheckpoint(path, ps, opt, step, meta) }
	}
	nanModel, _ := NewGPT(cfg, tensor.Float32, rng())
	floats[float32](nanModel.Blocks[1].FC.W.Value)[7] = float32(inf)
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not a checkpoint at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	bigModel, _ := NewGPT(Config{Vocab: 7, Context: 5, Layers: 3, Heads: 2, KVHeads: 1, Width: 8, MLPRatio: 2}, tensor.Float32, rng())
	if err := SaveCheckpoint(ckpt, bigModel.Params(), nil, 1, nil); err != nil {
		t.Fatal(err)
	}
	restore := func(path string, ps []*Param, opt *AdamW) func() error {
		return func() error {
			ck, err := ReadCheckpoint(path)
			if err != nil {
				return err
			}
			return ck.Restore(ps, opt)
		}
	}
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 3), gorgonia.WithName("x"))
	maskScope := NewScope(g, tensor.Float64, true)
	if _, err := maskScope.Dropout(x, 0.5); err != nil {
		t.Fatal(err)
	}
	f32 := func(n int) *tensor.Dense { return newDense(tensor.Float32, n) }
	nanParam := &Param{Name: "w", Value: tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, nan}))}

	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		// Model construction.
		{"NewGPT nil rng", func() error { _, err := NewGPT(cfg, tensor.Float32, nil); return err }, "random source is nil"},
		{"NewGPT int dtype", func() error { _, err := NewGPT(cfg, tensor.Int, rng()); return err }, "int"},
		{"NewGPT vocab×width overflows", withCfg(func(c *Config) { c.Vocab, c.Width, c.Heads, c.KVHeads = math.MaxInt/2, 1<<40, 1, 1 }), "more than"},
		{"NewGPT huge vocab", withCfg(func(c *Config) { c.Vocab = math.MaxInt }), "vocabulary 9223372036854775807"},
		{"NewGPT huge layers", withCfg(func(c *Config) { c.Layers = 1 << 40 }), "layers 1099511627776"},
		{"NewGPT huge MLP ratio", withCfg(func(c *Config) { c.MLPRatio = math.MaxInt / 4 }), "more than"},
		{"NewGPT huge context", withCfg(func(c *Config) { c.Context = 1 << 36 }), "context 68719476736"},
		{"NewGPT huge heads", withCfg(func(c *Config) { c.Heads, c.KVHeads, c.Width = math.MaxInt/2+1, 1, math.MaxInt/2+1 }), "more than"},
		{"NewGPT NaN dropout", withCfg(func(c *Config) { c.Dropout = nan }), "dropout NaN"},
		{"NewGPT zero width", withCfg(func(c *Config) { c.Width = 0 }), "width 0"},
		{"NewGPT negative kv heads", withCfg(func(c *Config) { c.KVHeads = -1 }), "kv heads -1"},
		{"EncodeJSON invalid", func() error { c := cfg; c.Dropout = nan; _, err := c.EncodeJSON(); return err }, "dropout NaN"},
		{"ParseConfig bad JSON", func() error { _, err := ParseConfig("{"); return err }, "nn.ParseConfig"},
		{"NewBlock nil rng", func() error { _, err := NewBlock("b", cfg, tensor.Float32, nil); return err }, "random source is nil"},
		{"NewMultiHeadAttention nil rng", func() error {
			_, err := NewMultiHeadAttention("a", 8, 2, 1, true, tensor.Float32, nil, 0.02)
			return err
		}, "random source is nil"},
		{"NewLinear zero input", func() error { _, err := NewLinear("l", 0, 3, true, tensor.Float32, rng(), 1); return err }, "sizes [0 3]"},
		{"NewLinear negative output", func() error { _, err := NewLinear("l", 2, -3, true, tensor.Float32, rng(), 1); return err }, "sizes [2 -3]"},
		{"NewLinear overflow", func() error { _, err := NewLinear("l", 1<<62, 4, true, tensor.Float32, rng(), 1); return err }, "more than"},
		{"NewLinear nil rng", func() error { _, err := NewLinear("l", 2, 3, true, tensor.Float32, nil, 1); return err }, "random source is nil"},
		{"NewLinear NaN std", func() error { _, err := NewLinear("l", 2, 3, true, tensor.Float32, rng(), nan); return err }, "std NaN"},
		{"NewEmbedding negative rows", func() error { _, err := NewEmbedding("e", -1, 3, tensor.Float32, rng()); return err }, "sizes [-1 3]"},
		{"NewEmbedding nil rng", func() error { _, err := NewEmbedding("e", 4, 3, tensor.Float32, nil); return err }, "random source is nil"},
		{"NewLayerNorm zero width", func() error { _, err := NewLayerNorm("n", 0, tensor.Float32); return err }, "sizes [0]"},
		{"NewRMSNorm bool dtype", func() error { _, err := NewRMSNorm("n", 4, tensor.Bool); return err }, "bool"},

		// Graph building.
		{"LinearNode nil", func() error { _, err := LinearNode(nil, x, nil); return err }, "is nil"},
		{"EmbedNode nil", func() error { _, err := EmbedNode(x, nil); return err }, "is nil"},
		{"GELU nil", func() error { _, err := GELU(nil); return err }, "x is nil"},
		{"LayerNormNode nil", func() error { _, err := LayerNormNode(nil, nil, nil, 1e-5); return err }, "x is nil"},
		{"LayerNormNode NaN eps", func() error { _, err := LayerNormNode(x, nil, nil, nan); return err }, "eps must be positive and finite, got NaN"},
		{"RMSNormNode Inf eps", func() error { _, err := RMSNormNode(x, nil, inf); return err }, "got +Inf"},
		{"NewCrossEntropy nil", func() error { _, err := NewCrossEntropy(nil, -1); return err }, "logits are nil"},
		{"Dropout NaN", func() error { _, err := maskScope.Dropout(x, nan); return err }, "probability NaN"},
		{"Dropout nil x", func() error { _, err := maskScope.Dropout(nil, 0.1); return err }, "is nil"},
		{"ResampleDropout nil rng", func() error { return maskScope.ResampleDropout(nil) }, "random source is nil"},
		{"SetIndices nil", func() error { return SetIndices(nil, []int{1}) }, "node is nil"},
		{"IndexInput nil graph", func() error { _, err := IndexInput(nil, "t", 3); return err }, "graph is nil"},
		{"IndexInput zero length", func() error { _, err := IndexInput(g, "t", 0); return err }, "length 0"},
		{"Scope.Bind nil node", func() error { return NewScope(g, tensor.Float64, false).Bind(train.Params()[0], nil) }, "is nil"},
		{"Scope.Bind nil scope", func() error { return (*Scope)(nil).Bind(train.Params()[0], x) }, "scope is nil"},
		{"GPT.Forward nil scope", func() error { _, err := m.Forward(nil, x, x, 1, 2); return err }, "nn.GPT: the scope is nil"},
		{"GPT.Forward zero model", func() error { _, err := (&GPT{}).Forward(NewScope(g, tensor.Float32, false), x, x, 1, 2); return err }, "model is nil"},
		{"Block.Forward nil scope", func() error { _, err := m.Blocks[0].Forward(nil, x, 1, 2); return err }, "nn.Block: the scope is nil"},
		{"Linear.Forward nil scope", func() error { _, err := m.Head.Forward(nil, x); return err }, "nn.Linear: the scope is nil"},
		{"Linear.Forward zero layer", func() error { _, err := (&Linear{}).Forward(NewScope(g, tensor.Float32, false), x); return err }, "layer is nil"},
		{"Norm.Forward nil layer", func() error { _, err := (*Norm)(nil).Forward(NewScope(g, tensor.Float32, false), x); return err }, "layer is nil"},
		{"Embedding.Forward nil scope", func() error { _, err := m.TokEmb.Forward(nil, x); return err }, "nn.Embedding: the scope is nil"},
		{"MultiHeadAttention.Forward nil x", func() error {
			_, err := m.Blocks[0].Attn.Forward(NewScope(g, tensor.Float32, false), nil, 1, 2)
			return err
		}, "x is nil"},
		{"MultiHeadAttention.Forward zero batch", func() error {
			_, err := m.Blocks[0].Attn.Forward(NewScope(g, tensor.Float32, false), x, 0, 2)
			return err
		}, "batch 0"},

		// Runners.
		{"NewRunner nil model", func() error { _, err := (*GPT)(nil).NewRunner(1, 2, Eval); return err }, "model is nil"},
		{"NewRunner zero batch", func() error { _, err := m.NewRunner(0, 2, Eval); return err }, "batch 0"},
		{"NewRunner negative seq", func() error { _, err := m.NewRunner(1, -2, Eval); return err }, "sequence length -2"},
		{"NewRunner huge batch", func() error { _, err := m.NewRunner(math.MaxInt/2, 5, Eval); return err }, "activations"},
		{"NewRunner bad mode", func() error { _, err := m.NewRunner(1, 2, Mode(7)); return err }, "unknown mode Mode(7)"},
		{"Run nil runner", func() error { _, err := (*Runner)(nil).Run(tok, tgt, nil); return err }, "runner is nil"},
		{"Run zero runner", func() error { _, err := (&Runner{}).Run(tok, tgt, nil); return err }, "runner is nil"},
		{"Run short tokens", func() error { _, err := eval.Run(tok[:3], tgt, nil); return err }, "holds 4 indices, got 3"},
		{"Run token outside vocabulary", func() error { _, err := eval.Run([]int{1, 2, 7, 0}, tgt, nil); return err }, "token 7 at position 2"},
		{"Run negative target", func() error { _, err := eval.Run(tok, []int{1, -5, 1, 1}, nil); return err }, "target -5 at row 1"},
		{"Run dropout without rng", func() error { _, err := dtrain.Run(tok, tgt, nil); return err }, "random source"},
		{"Grads of an eval runner", func() error { _, err := eval.Grads(); return err }, "eval runner computes no gradient"},
		{"Grads nil runner", func() error { _, err := (*Runner)(nil).Grads(); return err }, "runner is nil"},
		{"LogitsRow outside", func() error { _, err := eval.LogitsRow(1, 0); return err }, "(1, 0) outside batch 1"},
		{"Close nil runner", func() error { return (*Runner)(nil).Close() }, "runner is nil"},

		// Training steps and hyperparameters.
		{"TrainStep nil runner", func() error { _, _, err := (*Runner)(nil).TrainStep(newOpt(), 1e-3, 1, tok, tgt, nil); return err }, "runner is nil"},
		{"TrainStep nil optimizer", func() error { _, _, err := train.TrainStep(nil, 1e-3, 1, tok, tgt, nil); return err }, "optimizer is nil"},
		{"TrainStep zero optimizer", func() error { _, _, err := train.TrainStep(&AdamW{}, 1e-3, 1, tok, tgt, nil); return err }, "eps 0"},
		{"TrainStep eval runner", func() error { _, _, err := eval.TrainStep(newOpt(), 1e-3, 1, tok, tgt, nil); return err }, "eval mode"},
		{"TrainStep NaN lr", step(nil, nan, 1), "learning rate NaN"},
		{"TrainStep +Inf lr", step(nil, inf, 1), "learning rate +Inf"},
		{"TrainStep -Inf lr", step(nil, -inf, 1), "learning rate -Inf"},
		{"TrainStep negative lr", step(nil, -1e-3, 1), "learning rate -0.001"},
		{"TrainStep NaN clip", step(nil, 1e-3, nan), "clip norm NaN"},
		{"TrainStep +Inf clip", step(nil, 1e-3, inf), "clip norm +Inf"},
		{"TrainStep NaN beta1", step(func(o *AdamW) { o.Beta1 = nan }, 1e-3, 1), "beta1 NaN"},
		{"TrainStep beta2 1", step(func(o *AdamW) { o.Beta2 = 1 }, 1e-3, 1), "beta2 1"},
		{"TrainStep NaN eps", step(func(o *AdamW) { o.Eps = nan }, 1e-3, 1), "eps NaN"},
		{"TrainStep Inf weight decay", step(func(o *AdamW) { o.WeightDecay = inf }, 1e-3, 1), "weight decay +Inf"},
		{"TrainStep foreign optimizer", func() error {
			o, _ := NewAdamW(eval.Model.Params()[:2], 0.9, 0.95, 1e-8, 0)
			_, _, err := train.TrainStep(o, 1e-3, 1, tok, tgt, nil)
			return err
		}, "optimizer holds 2 parameters"},
		{"AdamW.Step nil", func() error { return (*AdamW)(nil).Step(nil, 1) }, "optimizer is nil"},
		{"AdamW.Step NaN lr", adamStep(nil, nan, zeroGrads), "learning rate NaN"},
		{"AdamW.Step Inf lr", adamStep(nil, inf, zeroGrads), "learning rate +Inf"},
		{"AdamW.Step negative eps", adamStep(func(o *AdamW) { o.Eps = -1 }, 1e-3, zeroGrads), "eps -1"},
		{"AdamW.Step NaN gradient", adamStep(nil, 1e-3, nanGrads), "holds NaN at flat index 5"},
		{"AdamW.Step missing gradients", adamStep(nil, 1e-3, func() []*tensor.Dense { return nil }), "0 gradients for"},
		{"AdamW.Step nil gradient", adamStep(nil, 1e-3, func() []*tensor.Dense { gs := zeroGrads(); gs[1] = nil; return gs }), "is missing"},
		{"NewAdamW NaN beta1", func() error { _, err := NewAdamW(train.Params(), nan, 0.9, 1e-8, 0); return err }, "beta1 NaN"},
		{"NewAdamW beta2 5", func() error { _, err := NewAdamW(train.Params(), 0.9, 5, 1e-8, 0); return err }, "beta2 5"},
		{"NewAdamW eps -1", func() error { _, err := NewAdamW(train.Params(), 0.9, 0.9, -1, 0); return err }, "eps -1"},
		{"NewAdamW Inf eps", func() error { _, err := NewAdamW(train.Params(), 0.9, 0.9, inf, 0); return err }, "eps +Inf"},
		{"NewAdamW Inf weight decay", func() error { _, err := NewAdamW(train.Params(), 0.9, 0.9, 1e-8, inf); return err }, "weight decay +Inf"},
		{"NewAdamW nil parameter", func() error { _, err := NewAdamW([]*Param{nil}, 0.9, 0.9, 1e-8, 0); return err }, "parameter 0 is nil"},
		{"CosineSchedule Inf peak", func() error { return CosineSchedule{Peak: inf, Total: 10}.Validate() }, "Peak: learning rate +Inf"},
		{"CosineSchedule NaN min", func() error { return CosineSchedule{Peak: 1, Min: nan, Total: 10}.Validate() }, "Min: learning rate NaN"},
		{"CosineSchedule negative warmup", func() error { return CosineSchedule{Peak: 1, Warmup: -1, Total: 10}.Validate() }, "Warmup -1"},
		{"CheckLR NaN", func() error { return CheckLR(nan) }, "learning rate NaN"},

		// Generation.
		{"Generate nil rng", gen(eval, [][]int{{1}}, 3, 0.8, nil), "random source is nil"},
		{"Generate nil runner", gen(nil, [][]int{{1}}, 3, 0, nil), "runner is nil"},
		{"Generate NaN temperature", gen(eval, [][]int{{1}}, 3, nan, rng()), "temperature NaN"},
		{"Generate negative temperature", gen(eval, [][]int{{1}}, 3, -1, rng()), "temperature -1"},
		{"Generate Inf temperature", gen(eval, [][]int{{1}}, 3, inf, rng()), "temperature +Inf"},
		{"Generate negative n", gen(eval, [][]int{{1}}, -1, 0, nil), "-1 tokens"},
		{"Generate no prompt", gen(eval, nil, 3, 0, nil), "0 prompts"},
		{"Generate too many prompts", gen(eval, [][]int{{1}, {2}}, 3, 0, nil), "2 prompts for a runner of batch 1"},
		{"Generate empty prompt", gen(eval, [][]int{{}}, 3, 0, nil), "prompt 0 is empty"},
		{"Generate token outside vocabulary", gen(eval, [][]int{{1, 9}}, 3, 0, nil), "token 9 at position 1 of prompt 0"},
		{"SampleLogits empty", sample(nil, 0, nil), "no logits"},
		{"SampleLogits NaN logit", sample([]float64{0, nan}, 1, rng()), "logit 1 is NaN"},
		{"SampleLogits +Inf logit", sample([]float64{inf, 0}, 0, nil), "logit 0 is +Inf"},
		{"SampleLogits all -Inf", sample([]float64{-inf, -inf}, 0, nil), "all 2 logits are -Inf"},
		{"SampleLogits nil rng", sample([]float64{0, 1}, 1, nil), "random source is nil"},

		// Checkpoints.
		{"SaveCheckpoint empty path", save("", m.Params(), nil, 1, nil), "the path is empty"},
		{"SaveCheckpoint onto a directory", save(dir, m.Params(), nil, 1, nil), "is a directory"},
		{"SaveCheckpoint trailing separator", save(dir+string(os.PathSeparator), m.Params(), nil, 1, nil), "ends in a separator"},
		{"SaveCheckpoint missing directory", save(filepath.Join(dir, "no", "ckpt"), m.Params(), nil, 1, nil), "does not exist"},
		{"SaveCheckpoint under a file", save(filepath.Join(garbage, "ckpt"), m.Params(), nil, 1, nil), "is not a directory"},
		{"SaveCheckpoint onto a device", save(os.DevNull, m.Params(), nil, 1, nil), "not a regular file"},
		{"SaveCheckpoint negative step", save(ckpt, m.Params(), nil, -1, nil), "step -1"},
		{"SaveCheckpoint reserved key", save(ckpt, m.Params(), nil, 1, map[string]string{"step": "3"}), `key "step" is reserved`},
		{"SaveCheckpoint Inf parameter", save(ckpt, nanModel.Params(), nil, 1, nil), `"blocks.1.mlp.fc.weight" (8, 16) holds +Inf at flat index 7`},
		{"SaveCheckpoint nil parameter", save(ckpt, []*Param{nil}, nil, 1, nil), "parameter 0 is nil"},
		{"SaveCheckpoint foreign optimizer", save(ckpt, m.Params()[:3], newOpt(), 1, nil), "optimizer holds"},
		{"SaveCheckpoint NaN beta1", func() error { o := newOpt(); o.Beta1 = nan; return SaveCheckpoint(ckpt, m.Params(), o, 1, nil) }, "beta1 NaN"},
		{"ReadCheckpoint empty path", func() error { _, err := ReadCheckpoint(""); return err }, "the path is empty"},
		{"ReadCheckpoint garbage", func() error { _, err := ReadCheckpoint(garbage); return err }, "header length"},
		{"Restore nil checkpoint", func() error { return (*Checkpoint)(nil).Restore(m.Params(), nil) }, "checkpoint is nil"},
		{"Restore 3 layers into 2", restore(ckpt, m.Params(), nil), `12 unexpected tensors (the checkpoint has them, the model does not): "blocks.2.attn.proj.bias"`},
		{"CheckFinite NaN", func() error { return CheckFinite([]*Param{nanParam}) }, `parameter "w" (2) holds NaN at flat index 1`},
		{"CheckFinite nil", func() error { return CheckFinite([]*Param{nil}) }, "parameter 0 is nil"},
		{"WriteSafetensors nil tensor", func() error { return WriteSafetensors(&bytes.Buffer{}, []NamedTensor{{"a", nil}}, nil) }, `tensor "a" is nil`},
		{"WriteSafetensors nil writer", func() error { return WriteSafetensors(nil, nil, nil) }, "writer is nil"},
		{"WriteSafetensors empty name", func() error { return WriteSafetensors(&bytes.Buffer{}, []NamedTensor{{"", f32(1)}}, nil) }, "invalid tensor name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("PANIC: %v", r)
					}
				}()
				return tc.call()
			}()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
