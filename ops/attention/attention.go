package attention

import (
	"fmt"
	"math"

	"github.com/flashgorgon/flashgorgon/cuda"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Options selects the masking and the scale of the attention.
type Options struct {
	// Causal masks the future: query i sees keys j ≤ i + (Nk − Nq), the
	// mask aligned to the bottom-right corner as FlashAttention-2 does when
	// Nq ≠ Nk (with Nq = Nk, j ≤ i).
	Causal bool
	// Scale multiplies the scores q·k; 0 means 1/√d. It must be finite.
	Scale float64
	// KeyLengths is optional, one value in [0, Nk] per batch element: keys
	// at index ≥ KeyLengths[b] are masked (padding).
	KeyLengths []int
	// Precision selects the arithmetic of float32 attention on a CUDA device
	// (cuda.Precision): the zero value, cuda.PrecisionDefault, is
	// cuda.PrecisionExact, float32 accuracy on the tensor cores (3xF16 or 3xTF32)
	// where their kernels cover the problem (d = 64 or 128) and float32
	// products and sums elsewhere; cuda.PrecisionFMA asks for the latter
	// everywhere; PrecisionTF32 and PrecisionBF16 round the operands to TF32
	// or bfloat16 (float32 accumulation) on the tensor cores.
	// It never changes the function computed, only its rounding. The CPU
	// kernels ignore it: on the CPU, and for float64 everywhere, the op
	// computes in its element type (float32 products, float64 sums).
	Precision cuda.Precision
}

// Attention returns scaled dot-product attention of q [B,H,Nq,d] over keys k
// and values v [B,Hkv,Nk,d], a node o [B,H,Nq,d]:
//
//	s_ij = Scale·Σ_c q[b,h,i,c]·k[b,h/G,j,c]          G = H/Hkv
//	o[b,h,i,:] = Σ_j softmax_j(s_ij)·v[b,h/G,j,:]     over the visible keys j
//
// H must be a multiple of Hkv: query head h uses key/value head h/G, which
// covers multi-head (Hkv = H), grouped-query and multi-query (Hkv = 1)
// attention. Key j is visible to query i of batch b unless
// opts.Causal and j > i + Nk − Nq, or j ≥ opts.KeyLengths[b]. A query row
// that sees no key gets o = 0 (and zero gradients), never NaN. q, k and v
// are all float32 or all float64.
//
// Masked keys are not read. Whatever a padded key (j ≥ KeyLengths[b])
// holds, NaN and ±Inf included, has no effect on any output or gradient,
// and its gradients dk, dv are exactly 0, on the CPU and on a CUDA device.
// A key that the causal mask hides from row i but shows to later rows
// makes those later rows non-finite if it is, as the definition does; on
// the CPU, row i is unaffected too (each row's tile products stop at its
// visible keys). The CUDA kernels, like FlashAttention's, multiply such a
// key by a zero probability inside a tile, so there a NaN or ±Inf in a
// future key reaches the earlier rows of its 16–64-row tile (0·NaN = NaN).
//
// The op is fused in the FlashAttention-2 way: the forward runs an online
// softmax over key blocks and keeps only the log-sum-exp
// L = log Σ_j exp(s_ij) next to o; the backward recomputes the
// probabilities from L block by block. Neither allocates anything of size
// Nq×Nk. Reference computes the same function from Gorgonia ops.
//
// Bad shapes, zero-length dimensions (gorgonia.org/tensor holds no empty
// tensor), mixed dtypes, bad key lengths and a NaN or infinite Scale are
// returned as errors when the graph is built.
func Attention(q, k, v *gorgonia.Node, opts Options) (*gorgonia.Node, error) {
	o, _, err := build(q, k, v, opts, false)
	return o, err
}

// AttentionLSE is Attention that also returns the log-sum-exp of the scores,
// a node lse [B,H,Nq]:
//
//	lse[b,h,i] = log Σ_{visible j} exp(s_ij)    (−Inf for a row with no visible key)
//
// Both outputs can take part in a loss: the gradient through lse is
// ∂lse_i/∂s_ij = softmax_j(s_ij), folded into the same fused backward.
func AttentionLSE(q, k, v *gorgonia.Node, opts Options) (o, lse *gorgonia.Node, err error) {
	return build(q, k, v, opts, true)
}

// forwardViews selects how o and lse are taken out of the forward's packed
// value: false copies them (the default), true would share packed's array.
// It stays false: TestGraphViewHazard shows that Gorgonia's in-place ops
// then corrupt the O the backward reads (see ops.go).
var forwardViews = false

// build adds the fused forward and the ops taking o (and lse) out of it.
func build(q, k, v *gorgonia.Node, opts Options, withLSE bool) (o, lse *gorgonia.Node, err error) {
	p, dt, err := newParams("attention.Attention", q, k, v, opts)
	if err != nil {
		return nil, nil, err
	}
	fwd := fwdOp{p: *p, dtype: dt}
	packed, err := apply(fwd, q, k, v)
	if err != nil {
		return nil, nil, fmt.Errorf("attention.Attention: %w", err)
	}
	total := fwd.packedLen()
	o, err = apply(takeOp{off: 0, shape: fwd.qShape(), srcLen: total, view: forwardViews, what: "o"}, packed)
	if err != nil {
		return nil, nil, fmt.Errorf("attention.Attention: %w", err)
	}
	if withLSE {
		lse, err = apply(takeOp{off: fwd.oLen(), shape: fwd.lShape(), srcLen: total, view: forwardViews, what: "lse"}, packed)
		if err != nil {
			return nil, nil, fmt.Errorf("attention.Attention: %w", err)
		}
	}
	return o, lse, nil
}

// newParams checks q, k, v and opts and returns the problem's description
// and element type, or an error naming the offending shapes or values.
func newParams(fn string, q, k, v *gorgonia.Node, opts Options) (*params, tensor.Dtype, error) {
	for _, in := range []struct {
		name string
		n    *gorgonia.Node
	}{{"q", q}, {"k", k}, {"v", v}} {
		if in.n == nil {
			return nil, tensor.Dtype{}, fmt.Errorf("%s: %s is a nil node", fn, in.name)
		}
	}
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	for _, in := range []struct {
		name, layout string
		dims         [4]string
		s            tensor.Shape
	}{
		{"q", "[B,H,Nq,d]", [4]string{"B", "H", "Nq", "d"}, qs},
		{"k", "[B,Hkv,Nk,d]", [4]string{"B", "Hkv", "Nk", "d"}, ks},
		{"v", "[B,Hkv,Nk,d]", [4]string{"B", "Hkv", "Nk", "d"}, vs},
	} {
		if len(in.s) != 4 {
			return nil, tensor.Dtype{}, fmt.Errorf("%s: %s must have rank 4 %s, has shape %v (q %v, k %v, v %v)",
				fn, in.name, in.layout, in.s, qs, ks, vs)
		}
		// Zero-length dimensions are refused here, when the graph is
		// built: gorgonia.org/tensor cannot hold an empty tensor's data
		// (Dense.Data panics), so no run of such a graph could succeed.
		for i, n := range in.s {
			if n < 1 {
				return nil, tensor.Dtype{}, fmt.Errorf("%s: %s %s has shape %v: %s = %d; every dimension must be at least 1 (empty tensors are not supported)",
					fn, in.name, in.layout, in.s, in.dims[i], n)
			}
		}
	}
	dt, err := nodeDtype(q)
	if err != nil {
		return nil, tensor.Dtype{}, fmt.Errorf("%s: q %v: %w", fn, qs, err)
	}
	for _, in := range []struct {
		name string
		n    *gorgonia.Node
	}{{"k", k}, {"v", v}} {
		d, err := nodeDtype(in.n)
		if err != nil {
			return nil, tensor.Dtype{}, fmt.Errorf("%s: %s %v: %w", fn, in.name, in.n.Shape(), err)
		}
		if d != dt {
			return nil, tensor.Dtype{}, fmt.Errorf("%s: mixed dtypes: q %v is %v, %s %v is %v", fn, qs, dt, in.name, in.n.Shape(), d)
		}
	}
	if !ks.Eq(vs) {
		return nil, tensor.Dtype{}, fmt.Errorf("%s: k %v and v %v must have the same shape [B,Hkv,Nk,d]", fn, ks, vs)
	}
	if qs[3] != ks[3] {
		return nil, tensor.Dtype{}, fmt.Errorf("%s: head dimension d differs: q %v has d=%d, k %v has d=%d", fn, qs, qs[3], ks, ks[3])
	}
	if qs[0] != ks[0] {
		return nil, tensor.Dtype{}, fmt.Errorf("%s: batch size differs: q %v has B=%d, k %v has B=%d", fn, qs, qs[0], ks, ks[0])
	}
	if qs[1]%ks[1] != 0 {
		return nil, tensor.Dtype{}, fmt.Errorf("%s: q %v has H=%d heads, not a multiple of the Hkv=%d heads of k %v",
			fn, qs, qs[1], ks[1], ks)
	}
	if q.Graph() != k.Graph() || q.Graph() != v.Graph() {
		return nil, tensor.Dtype{}, fmt.Errorf("%s: q, k and v belong to different graphs", fn)
	}
	p := &params{B: qs[0], H: qs[1], Hkv: ks[1], Nq: qs[2], Nk: ks[2], D: qs[3], Causal: opts.Causal,
		KeyLengths: opts.KeyLengths, Precision: opts.Precision}
	switch {
	case math.IsNaN(opts.Scale) || math.IsInf(opts.Scale, 0):
		return nil, tensor.Dtype{}, fmt.Errorf("%s: Scale must be finite, got %v", fn, opts.Scale)
	case opts.Scale == 0:
		p.Scale = 1 / math.Sqrt(float64(p.D))
	default:
		p.Scale = opts.Scale
	}
	// The sizes are checked above with the nodes' shapes named; what is
	// left is the key lengths and the element counts.
	if err := p.Check(); err != nil {
		return nil, tensor.Dtype{}, fmt.Errorf("%s: q %v, k %v: %w", fn, qs, ks, err)
	}
	if p.KeyLengths != nil {
		// The op keeps its own copy: ops are immutable values.
		p.KeyLengths = append([]int(nil), opts.KeyLengths...)
	}
	return p, dt, nil
}

// nodeDtype returns the element type of a float32 or float64 tensor node.
func nodeDtype(n *gorgonia.Node) (tensor.Dtype, error) {
	tt, ok := n.Type().(gorgonia.TensorType)
	if !ok {
		return tensor.Dtype{}, fmt.Errorf("node %q has type %v, want a float32 or float64 tensor", n.Name(), n.Type())
	}
	dt, ok := tt.Of.(tensor.Dtype)
	if !ok || (dt != tensor.Float32 && dt != tensor.Float64) {
		return tensor.Dtype{}, fmt.Errorf("node %q has element type %v, want float32 or float64", n.Name(), tt.Of)
	}
	return dt, nil
}
