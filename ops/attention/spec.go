package attention

import "github.com/flashgorgon/flashgorgon/cuda"

// DeviceSpec returns the sizes and options of the forward for the machine's CUDA backend,
// which fills in the buffers: O, L and the residual are the pieces of the packed value,
// [O | L | LRes].
func (op fwdOp) DeviceSpec() cuda.AttentionBuffers {
	p := &op.p
	return cuda.AttentionBuffers{B: p.B, H: p.H, Hkv: p.Hkv, Nq: p.Nq, Nk: p.Nk, D: p.D, Scale: p.Scale, Causal: p.Causal,
		Precision: p.Precision}
}

// DeviceSpec returns the forward's description (the backward reads packed [O | L | LRes] and
// dPacked [dO | dL | 0] and writes [dQ | dK | dV]).
func (op bwdOp) DeviceSpec() cuda.AttentionBuffers { return op.fwd.DeviceSpec() }

// KeyLengths returns the forward's key lengths (nil: every key).
func (op fwdOp) KeyLengths() []int { return op.p.KeyLengths }

// KeyLengths returns the forward's key lengths.
func (op bwdOp) KeyLengths() []int { return op.fwd.p.KeyLengths }

// ScatterOffset returns where the op puts its input in its zeroed output.
func (op scatterOp) ScatterOffset() int { return op.off }
