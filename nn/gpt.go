package nn

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"math/rand"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Config describes a GPT-style decoder-only transformer.
type Config struct {
	Vocab    int     `json:"vocab"`     // V, number of token ids
	Context  int     `json:"context"`   // longest sequence (learned positions)
	Layers   int     `json:"layers"`    // transformer blocks
	Heads    int     `json:"heads"`     // query heads H
	KVHeads  int     `json:"kv_heads"`  // key/value heads Hkv (0 means H; H must be a multiple)
	Width    int     `json:"width"`     // model width (a multiple of H)
	MLPRatio int     `json:"mlp_ratio"` // hidden width of the MLP is MLPRatio·Width
	Dropout  float64 `json:"dropout"`   // dropout probability (training only), in [0, 1)
	RMSNorm  bool    `json:"rms_norm"`  // RMSNorm instead of LayerNorm
}

// kvHeads returns Hkv with the default applied.
func (c Config) kvHeads() int {
	if c.KVHeads == 0 {
		return c.Heads
	}
	return c.KVHeads
}

// Validate returns an error naming the first inconsistent field.
func (c Config) Validate() error {
	switch {
	case c.Vocab <= 0:
		return fmt.Errorf("nn.Config: vocabulary size %d must be positive", c.Vocab)
	case c.Context <= 0:
		return fmt.Errorf("nn.Config: context length %d must be positive", c.Context)
	case c.Layers <= 0:
		return fmt.Errorf("nn.Config: layers %d must be positive", c.Layers)
	case c.Heads <= 0 || c.KVHeads < 0:
		return fmt.Errorf("nn.Config: heads %d must be positive and kv heads %d non-negative", c.Heads, c.KVHeads)
	case c.Heads%c.kvHeads() != 0:
		return fmt.Errorf("nn.Config: heads %d must be a multiple of kv heads %d", c.Heads, c.kvHeads())
	case c.Width <= 0 || c.Width%c.Heads != 0:
		return fmt.Errorf("nn.Config: width %d must be a positive multiple of heads %d", c.Width, c.Heads)
	case c.MLPRatio <= 0:
		return fmt.Errorf("nn.Config: MLP ratio %d must be positive", c.MLPRatio)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return fmt.Errorf("nn.Config: dropout %g must be in [0, 1)", c.Dropout)
	}
	if n, ok := c.numParams(); !ok || n > maxElements {
		return fmt.Errorf("nn.Config: vocabulary %d, context %d, layers %d, width %d, MLP ratio %d, heads %d/%d: the model would have more than %d parameters (or their count overflows)",
			c.Vocab, c.Context, c.Layers, c.Width, c.MLPRatio, c.Heads, c.kvHeads(), maxElements)
	}
	return nil
}

// maxElements bounds the number of elements of a model (2³⁷, 1 TiB in
// float64) and of a runner's widest activation, so that sizes whose product
// overflows an int, or that no machine can allocate, are an error instead of
// a panic in make. (A size below it that does not fit the machine's memory
// still ends the process, as any allocation does in Go.)
const maxElements = 1 << 37

// mulChecked returns the product of xs (each ≥ 0) and whether it fits an int.
func mulChecked(xs ...int) (int, bool) {
	p := uint64(1)
	for _, x := range xs {
		if x < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(p, uint64(x))
		if hi != 0 || lo > math.MaxInt {
			return 0, false
		}
		p = lo
	}
	return int(p), true
}

// numParams returns the number of parameters of the model c describes (the
// table of GPT's documentation) and whether it is at most maxElements, for a
// config whose fields are positive.
func (c Config) numParams() (int, bool) {
	for _, x := range []int{c.Vocab, c.Context, c.Layers, c.Width, c.MLPRatio} {
		if x > maxElements {
			return 0, false
		}
	}
	d, hd, kv := c.Width, c.Width/c.Heads, c.kvHeads()
	qkv := (c.Heads + 2*kv) * hd // ≤ 3·Width
	hid := c.MLPRatio * d        // ≤ 2⁷⁴: checked below through d·hid
	norms := 2                   // LayerNorm: gain and bias
	if c.RMSNorm {
		norms = 1
	}
	var sum uint64
	ok := true
	add := func(xs ...int) {
		n, fits := mulChecked(xs...)
		if !fits || n > maxElements {
			ok = false
			return
		}
		sum += uint64(n) // at most a few terms of 2³⁷ each: no overflow
		if sum > maxElements {
			ok = false
		}
	}
	add(c.MLPRatio, d) // validates hid before its products
	if !ok {
		return 0, false
	}
	sum = 0
	// One block: ln1, ln2, attn.qkv weight and bias, attn.proj weight and
	// bias, mlp.fc weight and bias, mlp.proj weight and bias.
	add(2, norms, d)
	add(d, qkv)
	add(qkv)
	add(c.Heads*hd, d)
	add(d)
	add(d, hid)
	add(hid)
	add(hid, d)
	add(d)
	block := sum
	sum = 0
	if !ok {
		return 0, false
	}
	add(c.Layers, int(block))
	add(c.Vocab, d)   // tok_emb
	add(c.Context, d) // pos_emb
	add(norms, d)     // ln_f
	add(d, c.Vocab)   // head
	return int(sum), ok
}

// checkInit validates the arguments of a layer constructor: dt float32 or
// float64, an rng when std > 0 draws from it, std finite and ≥ 0, each size
// positive and their product at most maxElements.
func checkInit(what string, dt tensor.Dtype, rng *rand.Rand, std float64, sizes ...int) error {
	if err := checkFloat(what, dt); err != nil {
		return err
	}
	if !(std >= 0) || math.IsInf(std, 1) {
		return fmt.Errorf("%s: initialization std %g must be finite and ≥ 0", what, std)
	}
	if std > 0 && rng == nil {
		return fmt.Errorf("%s: the random source is nil", what)
	}
	for _, n := range sizes {
		if n <= 0 {
			return fmt.Errorf("%s: sizes %v must be positive", what, sizes)
		}
	}
	if n, ok := mulChecked(sizes...); !ok || n > maxElements {
		return fmt.Errorf("%s: sizes %v give more than %d elements", what, sizes, maxElements)
	}
	return nil
}

// Block is a pre-norm transformer block:
//
//	h = x + dropout(attn(norm1(x)))
//	y = h + dropout(W2·gelu(W1·norm2(h) + b1) + b2)
//
// Parameters "<name>.ln1.*", "<name>.attn.*", "<name>.ln2.*",
// "<name>.mlp.fc.weight" [Width, r·Width], "<name>.mlp.fc.bias" [r·Width],
// "<name>.mlp.proj.weight" [r·Width, Width], "<name>.mlp.proj.bias" [Width].
type Block struct {
	Norm1, Norm2 *Norm
	Attn         *MultiHeadAttention
	FC, Proj     *Linear
	Dropout      float64
}

func newNorm(name string, d int, rms bool, dt tensor.Dtype) (*Norm, error) {
	if rms {
		return NewRMSNorm(name, d, dt)
	}
	return NewLayerNorm(name, d, dt)
}

// NewBlock returns a block for cfg with GPT-2 initialization (rng not nil).
func NewBlock(name string, cfg Config, dt tensor.Dtype, rng *rand.Rand) (*Block, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, fmt.Errorf("nn.NewBlock: the random source is nil")
	}
	d, hid := cfg.Width, cfg.MLPRatio*cfg.Width
	rstd := residualStd(cfg.Layers)
	b := &Block{Dropout: cfg.Dropout}
	var err error
	if b.Norm1, err = newNorm(name+".ln1", d, cfg.RMSNorm, dt); err != nil {
		return nil, err
	}
	if b.Attn, err = NewMultiHeadAttention(name+".attn", d, cfg.Heads, cfg.kvHeads(), true, dt, rng, rstd); err != nil {
		return nil, err
	}
	if b.Norm2, err = newNorm(name+".ln2", d, cfg.RMSNorm, dt); err != nil {
		return nil, err
	}
	if b.FC, err = NewLinear(name+".mlp.fc", d, hid, true, dt, rng, gpt2Std); err != nil {
		return nil, err
	}
	if b.Proj, err = NewLinear(name+".mlp.proj", hid, d, true, dt, rng, rstd); err != nil {
		return nil, err
	}
	return b, nil
}

// Params returns the block's parameters.
func (b *Block) Params() []*Param {
	var ps []*Param
	ps = append(ps, b.Norm1.Params()...)
	ps = append(ps, b.Attn.Params()...)
	ps = append(ps, b.Norm2.Params()...)
	ps = append(ps, b.FC.Params()...)
	return append(ps, b.Proj.Params()...)
}

// Forward applies the block to x [batch·seq, Width].
func (b *Block) Forward(s *Scope, x *gorgonia.Node, batch, seq int) (*gorgonia.Node, error) {
	if err := s.check("nn.Block"); err != nil {
		return nil, err
	}
	if b == nil || b.Norm1 == nil || b.Norm2 == nil || b.Attn == nil || b.FC == nil || b.Proj == nil {
		return nil, fmt.Errorf("nn.Block: the block is nil or was not made by NewBlock")
	}
	n1, err := b.Norm1.Forward(s, x)
	if err != nil {
		return nil, err
	}
	a, err := b.Attn.Forward(s, n1, batch, seq)
	if err != nil {
		return nil, err
	}
	if a, err = s.Dropout(a, b.Dropout); err != nil {
		return nil, err
	}
	h, err := gorgonia.Add(x, a)
	if err != nil {
		return nil, err
	}
	n2, err := b.Norm2.Forward(s, h)
	if err != nil {
		return nil, err
	}
	f, err := b.FC.Forward(s, n2)
	if err != nil {
		return nil, err
	}
	if f, err = GELU(f); err != nil {
		return nil, err
	}
	if f, err = b.Proj.Forward(s, f); err != nil {
		return nil, err
	}
	if f, err = s.Dropout(f, b.Dropout); err != nil {
		return nil, err
	}
	return gorgonia.Add(h, f)
}

// GPT is a decoder-only transformer language model:
//
//	x = tok_emb[tokens] + pos_emb[positions]      then dropout
//	x = block_L(… block_1(x))
//	logits = norm_f(x)·W_head                     [B·N, V]
//
// Parameter names and shapes (Width the model width, V vocabulary, C context, r MLP ratio,
// d head width, H and Hkv heads, i the block index):
//
//	tok_emb.weight              [V, Width]
//	pos_emb.weight              [C, Width]
//	blocks.i.ln1.weight/bias    [Width]           (RMSNorm: weight only)
//	blocks.i.attn.qkv.weight    [Width, (H+2·Hkv)·d]; columns Q | K | V, head-major inside each
//	blocks.i.attn.qkv.bias      [(H+2·Hkv)·d]
//	blocks.i.attn.proj.weight   [H·d, Width]
//	blocks.i.attn.proj.bias     [Width]
//	blocks.i.ln2.weight/bias    [Width]
//	blocks.i.mlp.fc.weight      [Width, r·Width]
//	blocks.i.mlp.fc.bias        [r·Width]
//	blocks.i.mlp.proj.weight    [r·Width, Width]
//	blocks.i.mlp.proj.bias      [Width]
//	ln_f.weight/bias            [Width]
//	head.weight                 [Width, V]
//
// Initialization follows GPT-2: weights and embeddings N(0, 0.02²), the two
// residual output projections of each block N(0, (0.02/√(2·layers))²),
// biases 0, norm gains 1.
type GPT struct {
	Config Config
	Dtype  tensor.Dtype
	TokEmb *Embedding
	PosEmb *Embedding
	Blocks []*Block
	NormF  *Norm
	Head   *Linear
}

// NewGPT builds a model of configuration cfg and element type dt (float32
// or float64), initialized from rng (not nil). Its parameters share one lock
// (see Runner for what it guards).
func NewGPT(cfg Config, dt tensor.Dtype, rng *rand.Rand) (*GPT, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkFloat("nn.NewGPT", dt); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, fmt.Errorf("nn.NewGPT: the random source is nil")
	}
	m := &GPT{Config: cfg, Dtype: dt}
	var err error
	if m.TokEmb, err = NewEmbedding("tok_emb", cfg.Vocab, cfg.Width, dt, rng); err != nil {
		return nil, err
	}
	if m.PosEmb, err = NewEmbedding("pos_emb", cfg.Context, cfg.Width, dt, rng); err != nil {
		return nil, err
	}
	for i := 0; i < cfg.Layers; i++ {
		b, err := NewBlock(fmt.Sprintf("blocks.%d", i), cfg, dt, rng)
		if err != nil {
			return nil, err
		}
		m.Blocks = append(m.Blocks, b)
	}
	if m.NormF, err = newNorm("ln_f", cfg.Width, cfg.RMSNorm, dt); err != nil {
		return nil, err
	}
	if m.Head, err = NewLinear("head", cfg.Width, cfg.Vocab, false, dt, rng, gpt2Std); err != nil {
		return nil, err
	}
	shareLock(m.Params())
	return m, nil
}

// Params returns every parameter in a fixed order (the order of the table in
// the type's documentation).
func (m *GPT) Params() []*Param {
	ps := append(m.TokEmb.Params(), m.PosEmb.Params()...)
	for _, b := range m.Blocks {
		ps = append(ps, b.Params()...)
	}
	ps = append(ps, m.NormF.Params()...)
	return append(ps, m.Head.Params()...)
}

// NumParams returns the number of trainable scalars.
func (m *GPT) NumParams() int { return CountParams(m.Params()) }

// Forward returns the logits [batch·seq, V] for the token ids in tokens
// ([batch·seq] ints, row b·seq + t) and positions (the same length, each
// t in [0, Context)).
func (m *GPT) Forward(s *Scope, tokens, positions *gorgonia.Node, batch, seq int) (*gorgonia.Node, error) {
	if err := s.check("nn.GPT"); err != nil {
		return nil, err
	}
	if m == nil || m.TokEmb == nil || m.PosEmb == nil || m.NormF == nil || m.Head == nil {
		return nil, fmt.Errorf("nn.GPT: the model is nil or was not made by NewGPT")
	}
	if seq <= 0 || seq > m.Config.Context || batch <= 0 {
		return nil, fmt.Errorf("nn.GPT: batch %d and sequence length %d: want batch > 0 and 0 < length ≤ context %d", batch, seq, m.Config.Context)
	}
	x, err := m.TokEmb.Forward(s, tokens)
	if err != nil {
		return nil, err
	}
	p, err := m.PosEmb.Forward(s, positions)
	if err != nil {
		return nil, err
	}
	if x, err = gorgonia.Add(x, p); err != nil {
		return nil, err
	}
	if x, err = s.Dropout(x, m.Config.Dropout); err != nil {
		return nil, err
	}
	for _, b := range m.Blocks {
		if x, err = b.Forward(s, x, batch, seq); err != nil {
			return nil, err
		}
	}
	if x, err = m.NormF.Forward(s, x); err != nil {
		return nil, err
	}
	return m.Head.Forward(s, x)
}

// EncodeJSON returns the configuration as JSON (stored in checkpoints under
// the "config" metadata key), or an error when c fails Validate (ParseConfig
// could not read it back) or cannot be encoded.
func (c Config) EncodeJSON() (string, error) {
	if err := c.Validate(); err != nil {
		return "", fmt.Errorf("nn.Config.EncodeJSON: %w", err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("nn.Config.EncodeJSON: %w", err)
	}
	return string(b), nil
}

// JSON returns EncodeJSON's JSON, or "" when EncodeJSON reports an error.
//
// Deprecated: use EncodeJSON, which reports the error instead of dropping it.
func (c Config) JSON() string {
	s, _ := c.EncodeJSON()
	return s
}

// ParseConfig reads a configuration written by Config.JSON and validates it.
func ParseConfig(s string) (Config, error) {
	var c Config
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return c, fmt.Errorf("nn.ParseConfig: %w", err)
	}
	return c, c.Validate()
}
