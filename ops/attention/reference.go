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
//	k', v' = k, v with the padded keys (j ≥ KeyLengths[b]) replaced by 0
//	s = BatchedMatMul(q as [B·Hkv, G·Nq, d], k'ᵀ)·Scale                [B·Hkv, G·Nq, Nk]
//	s' = s with the masked entries (causal or padding) replaced by −Inf
//	p = softmax.Softmax(s', along keys)
//	o = BatchedMatMul(p, v' as [B·Hkv, Nk, d])                         → [B,H,Nq,d]
//
// The masks are selects (maskOp), never additions of −Inf, and the padded
// keys are replaced before any product: whatever padded keys hold (NaN and
// ±Inf included) has no effect on any output or gradient, and their
// gradients are exactly 0, as with Attention. A non-finite value in a key
// that the causal mask hides from some rows but not from others still
// reaches those rows through the products p·v' and ds·k' (0·NaN = NaN).
// ops/softmax turns a row of only −Inf into zeros with a zero gradient,
// which gives the rows without a visible key o = 0, as Attention does.
// Gorgonia differentiates the whole expression, so Reference is the oracle
// and the baseline of the fused op: it materializes the B·H·Nq·Nk scores,
// probabilities and their gradients.
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
	if p.KeyLengths != nil {
		if k, err = apply(maskOp{p: *p, dtype: dt, keys: true}, k); err != nil {
			return nil, nil, wrap("masking the padded keys of k", err)
		}
		if v, err = apply(maskOp{p: *p, dtype: dt, keys: true}, v); err != nil {
			return nil, nil, wrap("masking the padded keys of v", err)
		}
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
		if s, err = apply(maskOp{p: *p, dtype: dt, fill: math.Inf(-1)}, s); err != nil {
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
