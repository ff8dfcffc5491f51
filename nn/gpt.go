package nn

import (
	"encoding/json"
	"fmt"
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
	Width    int     `json:"width"`     // model width D (a multiple of H)
	MLPRatio int     `json:"mlp_ratio"` // hidden width of the MLP is MLPRatio·D
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
	return nil
}

// Block is a pre-norm transformer block:
//
//	h = x + dropout(attn(norm1(x)))
//	y = h + dropout(W2·gelu(W1·norm2(h) + b1) + b2)
//
// Parameters "<name>.ln1.*", "<name>.attn.*", "<name>.ln2.*",
// "<name>.mlp.fc.weight" [D, r·D], "<name>.mlp.fc.bias" [r·D],
// "<name>.mlp.proj.weight" [r·D, D], "<name>.mlp.proj.bias" [D].
type Block struct {
	Norm1, Norm2 *Norm
	Attn         *MultiHeadAttention
	FC, Proj     *Linear
	Dropout      float64
}

func newNorm(name string, d int, rms bool, dt tensor.Dtype) *Norm {
	if rms {
		return NewRMSNorm(name, d, dt)
	}
	return NewLayerNorm(name, d, dt)
}

// NewBlock returns a block for cfg with GPT-2 initialization.
func NewBlock(name string, cfg Config, dt tensor.Dtype, rng *rand.Rand) (*Block, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d, hid := cfg.Width, cfg.MLPRatio*cfg.Width
	rstd := residualStd(cfg.Layers)
	attn, err := NewMultiHeadAttention(name+".attn", d, cfg.Heads, cfg.kvHeads(), true, dt, rng, rstd)
	if err != nil {
		return nil, err
	}
	return &Block{
		Norm1:   newNorm(name+".ln1", d, cfg.RMSNorm, dt),
		Norm2:   newNorm(name+".ln2", d, cfg.RMSNorm, dt),
		Attn:    attn,
		FC:      NewLinear(name+".mlp.fc", d, hid, true, dt, rng, gpt2Std),
		Proj:    NewLinear(name+".mlp.proj", hid, d, true, dt, rng, rstd),
		Dropout: cfg.Dropout,
	}, nil
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

// Forward applies the block to x [batch·seq, D].
func (b *Block) Forward(s *Scope, x *gorgonia.Node, batch, seq int) (*gorgonia.Node, error) {
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
//	logits = norm_f(x)·W_head                     [B·T, V]
//
// Parameter names and shapes (D width, V vocabulary, C context, r MLP
// ratio, d head width, H and Hkv heads, i the block index):
//
//	tok_emb.weight              [V, D]
//	pos_emb.weight              [C, D]
//	blocks.i.ln1.weight/bias    [D]           (RMSNorm: weight only)
//	blocks.i.attn.qkv.weight    [D, (H+2·Hkv)·d]; columns Q | K | V, head-major inside each
//	blocks.i.attn.qkv.bias      [(H+2·Hkv)·d]
//	blocks.i.attn.proj.weight   [H·d, D]
//	blocks.i.attn.proj.bias     [D]
//	blocks.i.ln2.weight/bias    [D]
//	blocks.i.mlp.fc.weight      [D, r·D]
//	blocks.i.mlp.fc.bias        [r·D]
//	blocks.i.mlp.proj.weight    [r·D, D]
//	blocks.i.mlp.proj.bias      [D]
//	ln_f.weight/bias            [D]
//	head.weight                 [D, V]
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
// or float64), initialized from rng.
func NewGPT(cfg Config, dt tensor.Dtype, rng *rand.Rand) (*GPT, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkFloat("nn.NewGPT", dt); err != nil {
		return nil, err
	}
	m := &GPT{
		Config: cfg, Dtype: dt,
		TokEmb: NewEmbedding("tok_emb", cfg.Vocab, cfg.Width, dt, rng),
		PosEmb: NewEmbedding("pos_emb", cfg.Context, cfg.Width, dt, rng),
	}
	for i := 0; i < cfg.Layers; i++ {
		b, err := NewBlock(fmt.Sprintf("blocks.%d", i), cfg, dt, rng)
		if err != nil {
			return nil, err
		}
		m.Blocks = append(m.Blocks, b)
	}
	m.NormF = newNorm("ln_f", cfg.Width, cfg.RMSNorm, dt)
	m.Head = NewLinear("head", cfg.Width, cfg.Vocab, false, dt, rng, gpt2Std)
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

// JSON returns the configuration as JSON (stored in checkpoints under
// the "config" metadata key).
func (c Config) JSON() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// ParseConfig reads a configuration written by Config.JSON and validates it.
func ParseConfig(s string) (Config, error) {
	var c Config
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return c, fmt.Errorf("nn.ParseConfig: %w", err)
	}
	return c, c.Validate()
}
