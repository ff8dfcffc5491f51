package attention

import (
	"fmt"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// This file holds the Gorgonia ops. Gorgonia ops have one output, and the
// fused attention has two (O and L) forward and three (dQ, dK, dV) backward,
// so each direction writes a flat packed tensor and small ops take the
// pieces out:
//
//	packed  = fwdOp(q, k, v)                     [O (B·H·Nq·d) | L (B·H·Nq) | L residual (B·H·Nq)]
//	o       = takeOp{O}(packed)                  [B,H,Nq,d]
//	lse     = takeOp{L}(packed)                  [B,H,Nq]
//	dPacked = Σ scatterOp(gradient of o / lse)   [dO | dL | 0]   (gorgonia.Grad sums them)
//	grads   = bwdOp(q, k, v, packed, dPacked)    [dQ | dK | dV]
//	dq, dk, dv = takeOp{…}(grads)
//
// L reaches the backward only through the graph (the packed value), and
// every op is a value without mutable state: a graph runs many times, and
// separate graphs run concurrently.
//
// The forward takes copy O and L out of packed (cost O(B·H·Nq·d), nothing
// next to the O(Nq·Nk·d) attention). A view sharing packed's array would
// be cheaper still, but Gorgonia's register allocator has no alias
// analysis: when the view's last reader is an in-place op (Add, Mul, Tanh…
// run UnsafeDo on a dead register), that op would overwrite the O the
// backward still needs in packed. TestGraphInPlaceAfterAttention shows it.
// The backward's pieces are views: nothing reads the grads tensor after
// them, and their regions are disjoint.

// apply adds the op that d describes (graph.NewOp) to the graph of args.
func apply(d graph.OpDef, args ...*gorgonia.Node) (*gorgonia.Node, error) {
	return gorgonia.ApplyOp(graph.NewOp(d), args...)
}

// fwdOp describes (graph.OpDef) the fused attention forward: (q, k, v) →
// packed [O | L | L residual] (the residual is internal: see flashForward).
type fwdOp struct {
	p     params
	dtype tensor.Dtype
}

// sizes of the packed pieces.
func (op fwdOp) oLen() int { return op.p.QLen() }
func (op fwdOp) lLen() int { return op.p.LLen() }

// packedLen is the length of the forward's packed value.
func (op fwdOp) packedLen() int { return op.oLen() + 2*op.lLen() }
func (op fwdOp) kLen() int      { return op.p.KLen() }

func (op fwdOp) qShape() tensor.Shape { return tensor.Shape{op.p.B, op.p.H, op.p.Nq, op.p.D} }
func (op fwdOp) kShape() tensor.Shape { return tensor.Shape{op.p.B, op.p.Hkv, op.p.Nk, op.p.D} }
func (op fwdOp) lShape() tensor.Shape { return tensor.Shape{op.p.B, op.p.H, op.p.Nq} }

func (op fwdOp) String() string {
	return fmt.Sprintf("FlashAttention{q%v k%v causal=%t scale=%g keyLengths=%v}",
		op.qShape(), op.kShape(), op.p.Causal, op.p.Scale, op.p.KeyLengths)
}
func (op fwdOp) Arity() int           { return 3 }
func (op fwdOp) InputNames() []string { return []string{"q", "k", "v"} }
func (op fwdOp) Type() hm.Type {
	return hm.NewFnType(graph.TensorType(4), graph.TensorType(4), graph.TensorType(4), graph.TensorType(1))
}

// Shape checks q, k, v against the shapes the op was built for.
func (op fwdOp) Shape(in []tensor.Shape) (tensor.Shape, error) {
	if err := checkShapes(op, op.InputNames(), in, op.qShape(), op.kShape(), op.kShape()); err != nil {
		return nil, err
	}
	return tensor.Shape{op.packedLen()}, nil
}

// checkShapes fails, naming the input, when an input's shape is not the
// one op was built for.
func checkShapes(op fmt.Stringer, names []string, in []tensor.Shape, want ...tensor.Shape) error {
	for i, s := range in {
		if !s.Eq(want[i]) {
			return fmt.Errorf("%v: %s has shape %v, the op was built for %v", op, names[i], s, want[i])
		}
	}
	return nil
}

// checkDtypes fails, naming the input, when an input's dtype is not dt,
// the one op was built for.
func checkDtypes(op fmt.Stringer, names []string, in []*tensor.Dense, dt tensor.Dtype) error {
	for i, t := range in {
		if t.Dtype() != dt {
			return fmt.Errorf("%v: %s has dtype %v, the op was built for %v", op, names[i], t.Dtype(), dt)
		}
	}
	return nil
}

// Forward runs the fused forward into packed.
func (op fwdOp) Forward(packed *tensor.Dense, in []*tensor.Dense) error {
	if err := checkDtypes(op, op.InputNames(), in, op.dtype); err != nil {
		return err
	}
	if err := forwardCompute(&op.p, in[0].Data(), in[1].Data(), in[2].Data(), packed.Data()); err != nil {
		return fmt.Errorf("%v: %w", op, err)
	}
	return nil
}

// Grad is the backward: one bwdOp node reading q, k, v, the packed forward
// value and its gradient, and three pieces taking dq, dk, dv out.
func (op fwdOp) Grad(in []*graph.Expr, packed, dPacked *graph.Expr) []*graph.Expr {
	g := graph.Apply(graph.NewOp(bwdOp{fwd: op}), in[0], in[1], in[2], packed, dPacked)
	pieces := op.gradPieces()
	out := make([]*graph.Expr, len(pieces))
	for i, piece := range pieces {
		out[i] = graph.Apply(graph.NewOp(piece), g)
	}
	return out
}

// gradPieces returns the views that take dq, dk and dv out of the backward's
// packed value.
func (op fwdOp) gradPieces() [3]takeOp {
	qn, kn := op.oLen(), op.kLen()
	total := qn + 2*kn
	return [3]takeOp{
		{off: 0, shape: op.qShape(), srcLen: total, view: true, what: "dq"},
		{off: qn, shape: op.kShape(), srcLen: total, view: true, what: "dk"},
		{off: qn + kn, shape: op.kShape(), srcLen: total, view: true, what: "dv"},
	}
}

// bwdOp describes the fused attention backward:
// (q, k, v, packed [O | L | residual], dPacked [dO | dL | 0]) → [dQ | dK | dV].
type bwdOp struct{ fwd fwdOp }

func (op bwdOp) String() string { return "∂" + op.fwd.String() }
func (op bwdOp) Arity() int     { return 5 }
func (op bwdOp) InputNames() []string {
	return []string{"q", "k", "v", "forward value", "gradient of the forward value"}
}
func (op bwdOp) Type() hm.Type {
	return hm.NewFnType(graph.TensorType(4), graph.TensorType(4), graph.TensorType(4), graph.TensorType(1), graph.TensorType(1), graph.TensorType(1))
}

func (op bwdOp) Shape(in []tensor.Shape) (tensor.Shape, error) {
	f := op.fwd
	packed := tensor.Shape{f.packedLen()}
	if err := checkShapes(op, op.InputNames(), in, f.qShape(), f.kShape(), f.kShape(), packed, packed); err != nil {
		return nil, err
	}
	return tensor.Shape{f.oLen() + 2*f.kLen()}, nil
}

// Forward runs the fused backward into grads.
func (op bwdOp) Forward(grads *tensor.Dense, in []*tensor.Dense) error {
	if err := checkDtypes(op, op.InputNames(), in, op.fwd.dtype); err != nil {
		return err
	}
	if err := backwardCompute(&op.fwd.p, in[0].Data(), in[1].Data(), in[2].Data(), in[3].Data(), in[4].Data(), grads.Data()); err != nil {
		return fmt.Errorf("%v: %w", op, err)
	}
	return nil
}

// takeOp takes elements [off, off+size(shape)) of a flat tensor of srcLen
// elements out as a tensor of the given shape:
//
//	out[i] = src[off+i]   (row-major flat index i)
//
// With view it shares src's backing array under Gorgonia's machines (cheap,
// ReturnsPtr like Gorgonia's reshape); without, it copies. The machine shares
// it either way (View: ok for graph.Op.ViewOffset): it never runs an op in
// place and keeps the packed buffer until the piece's last reader has run,
// so the hazard that makes o and lse copies under the TapeMachine cannot
// occur there.
type takeOp struct {
	off    int
	shape  tensor.Shape
	srcLen int
	view   bool
	what   string
}

func (op takeOp) String() string { return fmt.Sprintf("take{%s %v}", op.what, op.shape) }
func (op takeOp) Arity() int     { return 1 }
func (op takeOp) Type() hm.Type {
	return hm.NewFnType(graph.TensorType(1), graph.TensorType(len(op.shape)))
}
func (op takeOp) View() (int, bool) { return op.off, op.view }

func (op takeOp) Shape(in []tensor.Shape) (tensor.Shape, error) {
	if in[0].TotalSize() != op.srcLen || in[0].Dims() != 1 {
		return nil, fmt.Errorf("%v: input has shape %v, want (%d)", op, in[0], op.srcLen)
	}
	return op.shape.Clone(), nil
}

// Forward copies the piece into out.
func (op takeOp) Forward(out *tensor.Dense, in []*tensor.Dense) error {
	n := op.shape.TotalSize()
	switch src := in[0].Data().(type) {
	case []float32:
		copyInto(out.Data().([]float32), src[op.off:op.off+n])
	case []float64:
		copyInto(out.Data().([]float64), src[op.off:op.off+n])
	default:
		return fmt.Errorf("%v: dtype %v is not supported", op, in[0].Dtype())
	}
	return nil
}

// Grad: the gradient of a take is its gradient put back in place in a zero
// tensor of the source's size.
func (op takeOp) Grad(_ []*graph.Expr, _, dout *graph.Expr) []*graph.Expr {
	return []*graph.Expr{graph.Apply(graph.NewOp(scatterOp{off: op.off, shape: op.shape, dstLen: op.srcLen, what: op.what}), dout)}
}

// copyInto copies src into dst (of the same length) split over the cores:
// a large output is fresh memory, and its first touch (the page faults)
// then runs on every core instead of one — on 16 cores a serial copy of
// O (8 MiB at N = 4096, H = 8) was a visible share of the op's time.
func copyInto[T Float](dst, src []T) {
	src = src[:len(dst)]
	parallel.For(len(dst), copyGrain, func(lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
}

// copyGrain is the smallest piece of a parallel copy, in elements.
const copyGrain = 1 << 16

// scatterOp is the gradient of takeOp: a flat tensor of dstLen zeros with
// the input's elements at [off, off+size):
//
//	out[off+i] = in[i], out[j] = 0 elsewhere
type scatterOp struct {
	off    int
	shape  tensor.Shape
	dstLen int
	what   string
}

func (op scatterOp) String() string { return fmt.Sprintf("scatter{%s %v}", op.what, op.shape) }
func (op scatterOp) Arity() int     { return 1 }
func (op scatterOp) Type() hm.Type {
	return hm.NewFnType(graph.TensorType(len(op.shape)), graph.TensorType(1))
}

func (op scatterOp) Shape(in []tensor.Shape) (tensor.Shape, error) {
	if !in[0].Eq(op.shape) {
		return nil, fmt.Errorf("%v: input has shape %v, want %v", op, in[0], op.shape)
	}
	if n := op.shape.TotalSize(); n > 0 && (op.off < 0 || op.off+n > op.dstLen) {
		return nil, fmt.Errorf("%v: region [%d, %d) outside the output's %d elements", op, op.off, op.off+n, op.dstLen)
	}
	return tensor.Shape{op.dstLen}, nil
}

// Forward writes zeros and the input at [off, off+size), split over the
// cores as copyInto.
func (op scatterOp) Forward(out *tensor.Dense, in []*tensor.Dense) error {
	switch in[0].Dtype() { // Float32s, not Data: the input may have no elements
	case tensor.Float32:
		scatter(out.Float32s(), in[0].Float32s(), op.off)
	case tensor.Float64:
		scatter(out.Float64s(), in[0].Float64s(), op.off)
	default:
		return fmt.Errorf("%v: dtype %v is not supported", op, in[0].Dtype())
	}
	return nil
}

func scatter[T Float](dst, src []T, off int) {
	parallel.For(off, copyGrain, func(lo, hi int) { clear(dst[lo:hi]) })
	copyInto(dst[off:off+len(src)], src)
	rest := dst[off+len(src):]
	parallel.For(len(rest), copyGrain, func(lo, hi int) { clear(rest[lo:hi]) })
}

// Grad: the gradient of a scatter is the take of its region.
func (op scatterOp) Grad(_ []*graph.Expr, _, dout *graph.Expr) []*graph.Expr {
	return []*graph.Expr{graph.Apply(graph.NewOp(takeOp{off: op.off, shape: op.shape, srcLen: op.dstLen, what: "∂" + op.what}), dout)}
}

var (
	_ graph.Differentiable = fwdOp{}
	_ graph.OpDef          = bwdOp{}
	_ graph.Differentiable = takeOp{}
	_ graph.Differentiable = scatterOp{}
)
