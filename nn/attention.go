package nn

import (
	"fmt"
	"math"
	"math/rand"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MultiHeadAttention is causal (or not) multi-head self-attention on the
// fused attention op, with grouped-query attention when KVHeads < Heads.
// For x [B·N, Width] (row b·N + l is token l of sequence b):
//
//	[Q | K | V] = x·Wqkv + bqkv                 Wqkv [Width, (H + 2·Hkv)·d]   (one fused projection)
//	q = heads(Q) [B,H,N,d],  k = heads(K), v = heads(V) [B,Hkv,N,d]
//	o = attention(q, k, v)  with scale 1/√d        query head h reads key/value head h/(H/Hkv)
//	y = rows(o)·Wo + bo                          Wo [H·d, Width]
//
// Parameters: "<name>.qkv.weight", "<name>.qkv.bias", "<name>.proj.weight",
// "<name>.proj.bias".
type MultiHeadAttention struct {
	Heads, KVHeads, HeadDim int
	Causal                  bool
	QKV, Proj               *Linear
}

// NewMultiHeadAttention returns attention over width d with the given head
// counts (heads a multiple of kvHeads, d a multiple of heads). The output
// projection is drawn with std projStd (GPT-2 uses the residual scaling),
// the fused input projection with std 0.02.
func NewMultiHeadAttention(name string, d, heads, kvHeads int, causal bool, dt tensor.Dtype, rng *rand.Rand, projStd float64) (*MultiHeadAttention, error) {
	if heads <= 0 || kvHeads <= 0 || d <= 0 || d%heads != 0 || heads%kvHeads != 0 {
		return nil, fmt.Errorf("nn.NewMultiHeadAttention: width %d, heads %d, kv heads %d: want positive, width a multiple of heads, heads a multiple of kv heads", d, heads, kvHeads)
	}
	hd := d / heads
	cols, ok := mulChecked(heads+2*kvHeads, hd)
	if !ok {
		return nil, fmt.Errorf("nn.NewMultiHeadAttention: width %d, heads %d, kv heads %d: the projection's width overflows", d, heads, kvHeads)
	}
	qkv, err := NewLinear(name+".qkv", d, cols, true, dt, rng, gpt2Std)
	if err != nil {
		return nil, err
	}
	proj, err := NewLinear(name+".proj", heads*hd, d, true, dt, rng, projStd)
	if err != nil {
		return nil, err
	}
	return &MultiHeadAttention{Heads: heads, KVHeads: kvHeads, HeadDim: hd, Causal: causal, QKV: qkv, Proj: proj}, nil
}

// Params returns the projections' parameters.
func (a *MultiHeadAttention) Params() []*Param { return append(a.QKV.Params(), a.Proj.Params()...) }

// Forward applies the attention to x [batch·seq, Width] in scope s.
func (a *MultiHeadAttention) Forward(s *Scope, x *gorgonia.Node, batch, seq int) (*gorgonia.Node, error) {
	if err := s.check("nn.MultiHeadAttention"); err != nil {
		return nil, err
	}
	if a == nil || a.QKV == nil || a.Proj == nil || a.Heads <= 0 || a.KVHeads <= 0 || a.HeadDim <= 0 {
		return nil, fmt.Errorf("nn.MultiHeadAttention: the layer is nil or was not made by NewMultiHeadAttention")
	}
	if x == nil {
		return nil, fmt.Errorf("nn.MultiHeadAttention: x is nil")
	}
	if batch <= 0 || seq <= 0 {
		return nil, fmt.Errorf("nn.MultiHeadAttention: batch %d and sequence length %d must be positive", batch, seq)
	}
	if x.Dims() != 2 || x.Shape()[0] != batch*seq {
		return nil, fmt.Errorf("nn.MultiHeadAttention: x has shape %v, want [%d·%d, D]", x.Shape(), batch, seq)
	}
	qkv, err := a.QKV.Forward(s, x)
	if err != nil {
		return nil, fmt.Errorf("nn.MultiHeadAttention: %w", err)
	}
	h, hkv, hd := a.Heads, a.KVHeads, a.HeadDim
	cols := (h + 2*hkv) * hd
	split := func(off, heads int) (*gorgonia.Node, error) {
		return apply(headsOp{split: true, b: batch, n: seq, h: heads, d: hd, off: off, c: cols}, qkv)
	}
	q, err := split(0, h)
	if err != nil {
		return nil, err
	}
	k, err := split(h*hd, hkv)
	if err != nil {
		return nil, err
	}
	v, err := split((h+hkv)*hd, hkv)
	if err != nil {
		return nil, err
	}
	o, err := attend(q, k, v, a.Causal, 1/math.Sqrt(float64(hd)))
	if err != nil {
		return nil, fmt.Errorf("nn.MultiHeadAttention: %w", err)
	}
	rows, err := apply(headsOp{b: batch, n: seq, h: h, d: hd, c: h * hd}, o)
	if err != nil {
		return nil, err
	}
	return a.Proj.Forward(s, rows)
}
