package attention

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/ops/softmax"
)

// Reference computes the same function as Attention, decomposed into
// Gorgonia ops (what PyTorch calls the math backend): with G = H/Hkv and
// the G query heads of a kv head side by side,
//
//	s = BatchedMatMul(q as [B·Hkv, G·Nq, d], kᵀ)·Scale + mask   [B·Hkv, G·Nq, Nk]
//	p = softmax.Softmax(s, along keys)
//	o = BatchedMatMul(p, v as [B·Hkv, Nk, d])                    → [B,H,Nq,d]
//
// where mask is a constant input holding −Inf at the masked keys (causal or
// padding; there is none without masking). ops/softmax turns a row of only
// −Inf into zeros with a zero gradient, which gives the rows without a
// visible key o = 0, as Attention does. Gorgonia differentiates the whole
// expression, so Reference is the oracle and the baseline of the fused op:
// it materializes the B·H·Nq·Nk scores, probabilities and their gradients.
func Reference(q, k, v *gorgonia.Node, opts Options) (*gorgonia.Node, error) {
	o, _, err := reference(q, k, v, opts, false)
	return o, err
}

// ReferenceLSE is Reference that also returns the log-sum-exp of the masked
// scores, softmax.LogSumExp(s, along keys) as [B,H,Nq], like AttentionLSE.
func ReferenceLSE(q, k, v *gorgonia.Node, opts Options) (o, lse *gorgonia.Node, err error) {
	return reference(q, k, v, opts, true)
}

func reference(q, k, v *gorgonia.Node, opts Options, withLSE bool) (o, lse *gorgonia.Node, err error) {
	const fn = "attention.Reference"
	p, dt, err := newParams(fn, q, k, v, opts)
	if err != nil {
		return nil, nil, err
	}
	g := p.H / p.Hkv
	wrap := func(step string, err error) error { return fmt.Errorf("%s: %s: %w", fn, step, err) }

	// Query head h = kvh·G + i of batch b is rows [i·Nq, (i+1)·Nq) of
	// matrix b·Hkv + kvh: a plain reshape.
	q3, err := gorgonia.Reshape(q, tensor.Shape{p.B * p.Hkv, g * p.Nq, p.D})
	if err != nil {
		return nil, nil, wrap("reshaping q", err)
	}
	k3, err := gorgonia.Reshape(k, tensor.Shape{p.B * p.Hkv, p.Nk, p.D})
	if err != nil {
		return nil, nil, wrap("reshaping k", err)
	}
	v3, err := gorgonia.Reshape(v, tensor.Shape{p.B * p.Hkv, p.Nk, p.D})
	if err != nil {
		return nil, nil, wrap("reshaping v", err)
	}
	s, err := gorgonia.BatchedMatMul(q3, k3, false, true)
	if err != nil {
		return nil, nil, wrap("q·kᵀ", err)
	}
	var scale *gorgonia.Node
	if dt == tensor.Float32 {
		scale = gorgonia.NewConstant(float32(p.Scale))
	} else {
		scale = gorgonia.NewConstant(p.Scale)
	}
	if s, err = gorgonia.Mul(s, scale); err != nil {
		return nil, nil, wrap("scaling", err)
	}
	if p.Causal || p.KeyLengths != nil {
		mask := gorgonia.NewTensor(q.Graph(), dt, 3,
			gorgonia.WithShape(p.B*p.Hkv, g*p.Nq, p.Nk),
			gorgonia.WithName(fmt.Sprintf("attention.mask%v causal=%t keyLengths=%v %v", s.Shape(), p.Causal, p.KeyLengths, dt)),
			gorgonia.WithValue(referenceMask(p, dt)))
		if s, err = gorgonia.Add(s, mask); err != nil {
			return nil, nil, wrap("masking", err)
		}
	}
	pr, err := softmax.Softmax(s, 2)
	if err != nil {
		return nil, nil, wrap("softmax", err)
	}
	o3, err := gorgonia.BatchedMatMul(pr, v3)
	if err != nil {
		return nil, nil, wrap("p·v", err)
	}
	if o, err = gorgonia.Reshape(o3, tensor.Shape{p.B, p.H, p.Nq, p.D}); err != nil {
		return nil, nil, wrap("reshaping o", err)
	}
	if withLSE {
		l, err := softmax.LogSumExp(s, 2)
		if err != nil {
			return nil, nil, wrap("log-sum-exp", err)
		}
		if lse, err = gorgonia.Reshape(l, tensor.Shape{p.B, p.H, p.Nq}); err != nil {
			return nil, nil, wrap("reshaping lse", err)
		}
	}
	return o, lse, nil
}

// referenceMask returns the additive mask [B·Hkv, G·Nq, Nk]: 0 where key j
// is visible to the query row, −Inf where it is masked.
func referenceMask(p *params, dt tensor.Dtype) *tensor.Dense {
	g := p.H / p.Hkv
	m := tensor.New(tensor.WithShape(p.B*p.Hkv, g*p.Nq, p.Nk), tensor.Of(dt))
	fill := func(set func(at int)) {
		for bk := 0; bk < p.B*p.Hkv; bk++ {
			b := bk / p.Hkv
			for r := 0; r < g*p.Nq; r++ {
				i, row := r%p.Nq, (bk*g*p.Nq+r)*p.Nk
				for j := 0; j < p.Nk; j++ {
					// Written from the definitions in Options, not with the
					// fused kernel's keyLimit, so that the twins stay independent.
					padded := p.KeyLengths != nil && j >= p.KeyLengths[b]
					future := p.Causal && j > i+(p.Nk-p.Nq)
					if padded || future {
						set(row + j)
					}
				}
			}
		}
	}
	switch d := m.Data().(type) {
	case []float32:
		fill(func(at int) { d[at] = float32(math.Inf(-1)) })
	case []float64:
		fill(func(at int) { d[at] = math.Inf(-1) })
	}
	return m
}
