package attention

import (
	"fmt"
	"hash"

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

// fwdOp is the fused attention forward: (q, k, v) → packed [O | L | L
// residual] (the residual is internal: see flashForward).
type fwdOp struct {
	graph.Pure
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

func (op fwdOp) Arity() int { return 3 }
func (op fwdOp) Type() hm.Type {
	return hm.NewFnType(graph.TensorType(4), graph.TensorType(4), graph.TensorType(4), graph.TensorType(1))
}
func (op fwdOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.packedLen()}, nil
}

// Do runs the forward on values q, k, v of the shapes the op was built for.
func (op fwdOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	out := tensor.New(tensor.WithShape(op.packedLen()), tensor.Of(op.dtype))
	if err := op.DoInto(out, vs...); err != nil {
		return nil, err
	}
	return out, nil
}

// DoInto is Do writing into out, a contiguous tensor of the output's shape
// and dtype (machine.IntoDoer: a buffer no other live value shares).
func (op fwdOp) DoInto(out gorgonia.Value, vs ...gorgonia.Value) error {
	if len(vs) != 3 {
		return fmt.Errorf("%v: got %d inputs, want 3 (q, k, v)", op, len(vs))
	}
	q, err := op.input("q", vs[0], op.qShape())
	if err != nil {
		return err
	}
	k, err := op.input("k", vs[1], op.kShape())
	if err != nil {
		return err
	}
	v, err := op.input("v", vs[2], op.kShape())
	if err != nil {
		return err
	}
	o, err := op.output(out, op.packedLen())
	if err != nil {
		return err
	}
	if err := forwardCompute(&op.p, q.Data(), k.Data(), v.Data(), o.Data()); err != nil {
		return fmt.Errorf("%v: %w", op, err)
	}
	return nil
}

// output checks a destination of n elements given to DoInto.
func (op fwdOp) output(out gorgonia.Value, n int) (*tensor.Dense, error) {
	d, ok := out.(*tensor.Dense)
	if !ok || d.IsMaterializable() || d.Dtype() != op.dtype || !d.Shape().Eq(tensor.Shape{n}) {
		return nil, fmt.Errorf("%v: output %T of dtype %v and shape %v, want a contiguous %v tensor of shape (%d)",
			op, out, out.Dtype(), out.Shape(), op.dtype, n)
	}
	return d, nil
}

// input checks one value against the shape and dtype the op expects and
// returns it as a contiguous dense tensor.
func (op fwdOp) input(name string, v gorgonia.Value, want tensor.Shape) (*tensor.Dense, error) {
	d, ok := v.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("%v: %s is a %T, want a dense tensor", op, name, v)
	}
	if d.Dtype() != op.dtype {
		return nil, fmt.Errorf("%v: %s has dtype %v, the op was built for %v", op, name, d.Dtype(), op.dtype)
	}
	if !d.Shape().Eq(want) {
		return nil, fmt.Errorf("%v: %s has shape %v, the op was built for %v", op, name, d.Shape(), want)
	}
	if d.IsMaterializable() {
		d = d.Materialize().(*tensor.Dense)
	}
	return d, nil
}

func (op fwdOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "flashattention.fwd %v %+v", op.dtype, op.p)
}
func (op fwdOp) Hashcode() uint32 { return graph.OpHash(op) }
func (op fwdOp) String() string {
	return fmt.Sprintf("FlashAttention{q%v k%v causal=%t scale=%g keyLengths=%v}",
		op.qShape(), op.kShape(), op.p.Causal, op.p.Scale, op.p.KeyLengths)
}

func (op fwdOp) DiffWRT(n int) []bool { return trues(n) }

// SymDiff builds the backward: one bwdOp node reading q, k, v, the packed
// forward value and its gradient, and three views taking dq, dk, dv out.
func (op fwdOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if len(inputs) != 3 {
		return nil, fmt.Errorf("%v: SymDiff got %d inputs, want 3", op, len(inputs))
	}
	g, err := gorgonia.ApplyOp(bwdOp{fwd: op}, inputs[0], inputs[1], inputs[2], output, grad)
	if err != nil {
		return nil, fmt.Errorf("%v: building the backward: %w", op, err)
	}
	out := make(gorgonia.Nodes, 3)
	for i, piece := range op.gradPieces() {
		if out[i], err = gorgonia.ApplyOp(piece, g); err != nil {
			return nil, fmt.Errorf("%v: taking the gradient of input %d: %w", op, i, err)
		}
	}
	return out, nil
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

// DoDiff is the LispMachine's backward: it runs the same backward on values
// and adds dq, dk, dv into the inputs' gradients.
func (op fwdOp) DoDiff(ctx gorgonia.ExecutionContext, inputs gorgonia.Nodes, output *gorgonia.Node) error {
	if len(inputs) != 3 {
		return fmt.Errorf("%v: DoDiff got %d inputs, want 3", op, len(inputs))
	}
	gout, err := output.Grad()
	if err != nil {
		return fmt.Errorf("%v: the packed output has no gradient: %w", op, err)
	}
	grads, err := bwdOp{fwd: op}.Do(inputs[0].Value(), inputs[1].Value(), inputs[2].Value(), output.Value(), gout)
	if err != nil {
		return err
	}
	for i, piece := range op.gradPieces() {
		g, err := piece.Do(grads)
		if err != nil {
			return err
		}
		dst, err := inputs[i].Grad()
		if err != nil {
			return fmt.Errorf("%v: input %d has no gradient slot: %w", op, i, err)
		}
		if err := graph.AddInto(dst, g, 0); err != nil {
			return fmt.Errorf("%v: accumulating the gradient of input %d: %w", op, i, err)
		}
	}
	return nil
}

// bwdOp is the fused attention backward:
// (q, k, v, packed [O | L | residual], dPacked [dO | dL | 0]) → [dQ | dK | dV].
type bwdOp struct {
	graph.Pure
	fwd fwdOp
}

func (op bwdOp) Arity() int { return 5 }
func (op bwdOp) Type() hm.Type {
	return hm.NewFnType(graph.TensorType(4), graph.TensorType(4), graph.TensorType(4), graph.TensorType(1), graph.TensorType(1), graph.TensorType(1))
}
func (op bwdOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.fwd.oLen() + 2*op.fwd.kLen()}, nil
}

// Do runs the backward on values.
func (op bwdOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	out := tensor.New(tensor.WithShape(op.fwd.oLen()+2*op.fwd.kLen()), tensor.Of(op.fwd.dtype))
	if err := op.DoInto(out, vs...); err != nil {
		return nil, err
	}
	return out, nil
}

// DoInto is Do writing into out (machine.IntoDoer).
func (op bwdOp) DoInto(out gorgonia.Value, vs ...gorgonia.Value) error {
	f := op.fwd
	if len(vs) != 5 {
		return fmt.Errorf("%v: got %d inputs, want 5 (q, k, v, packed, dPacked)", op, len(vs))
	}
	q, err := f.input("q", vs[0], f.qShape())
	if err != nil {
		return err
	}
	k, err := f.input("k", vs[1], f.kShape())
	if err != nil {
		return err
	}
	v, err := f.input("v", vs[2], f.kShape())
	if err != nil {
		return err
	}
	packed, err := f.input("forward value", vs[3], tensor.Shape{f.packedLen()})
	if err != nil {
		return err
	}
	dPacked, err := f.input("gradient of the forward value", vs[4], tensor.Shape{f.packedLen()})
	if err != nil {
		return err
	}
	o, err := f.output(out, f.oLen()+2*f.kLen())
	if err != nil {
		return err
	}
	if err := backwardCompute(&f.p, q.Data(), k.Data(), v.Data(), packed.Data(), dPacked.Data(), o.Data()); err != nil {
		return fmt.Errorf("%v: %w", op, err)
	}
	return nil
}

func (op bwdOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "flashattention.bwd %v %+v", op.fwd.dtype, op.fwd.p)
}
func (op bwdOp) Hashcode() uint32 { return graph.OpHash(op) }
func (op bwdOp) String() string   { return "∂" + op.fwd.String() }

// takeOp takes elements [off, off+size(shape)) of a flat tensor of srcLen
// elements out as a tensor of the given shape:
//
//	out[i] = src[off+i]   (row-major flat index i)
//
// With view it shares src's backing array (cheap, ReturnsPtr like
// Gorgonia's reshape); without, it copies.
type takeOp struct {
	off    int
	shape  tensor.Shape
	srcLen int
	view   bool
	what   string
}

func (op takeOp) Arity() int { return 1 }
func (op takeOp) Type() hm.Type {
	return hm.NewFnType(graph.TensorType(1), graph.TensorType(len(op.shape)))
}
func (op takeOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return op.shape.Clone(), nil
}
func (op takeOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if len(vs) != 1 {
		return nil, fmt.Errorf("%v: got %d inputs, want 1", op, len(vs))
	}
	d, ok := vs[0].(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("%v: input is a %T, want a dense tensor", op, vs[0])
	}
	if d.Shape().TotalSize() != op.srcLen || d.Dims() != 1 {
		return nil, fmt.Errorf("%v: input has shape %v, want (%d)", op, d.Shape(), op.srcLen)
	}
	if d.IsMaterializable() {
		d = d.Materialize().(*tensor.Dense)
	}
	n := op.shape.TotalSize()
	var backing any
	switch s := d.Data().(type) {
	case []float32:
		backing = piece(s[op.off:op.off+n], op.view)
	case []float64:
		backing = piece(s[op.off:op.off+n], op.view)
	default:
		return nil, fmt.Errorf("%v: dtype %v is not supported", op, d.Dtype())
	}
	return tensor.New(tensor.WithShape(op.shape.Clone()...), tensor.WithBacking(backing)), nil
}

// piece returns s itself (view) or a copy of it, capacity clipped so that
// nothing can append into the rest of the packed array.
func piece[T Float](s []T, view bool) []T {
	if view {
		return s[:len(s):len(s)]
	}
	out := make([]T, len(s))
	copyInto(out, s)
	return out
}

// DoInto copies the piece into out, a contiguous tensor of the piece's
// shape and dtype (machine.IntoDoer; a view piece is a copy there too).
func (op takeOp) DoInto(out gorgonia.Value, vs ...gorgonia.Value) error {
	v, err := takeOp{off: op.off, shape: op.shape, srcLen: op.srcLen, view: true, what: op.what}.Do(vs...)
	if err != nil {
		return err
	}
	d, ok := out.(*tensor.Dense)
	if !ok || d.IsMaterializable() || d.Dtype() != v.Dtype() || !d.Shape().Eq(op.shape) {
		return fmt.Errorf("%v: output %T of dtype %v and shape %v, want a contiguous %v tensor of shape %v",
			op, out, out.Dtype(), out.Shape(), v.Dtype(), op.shape)
	}
	return graph.CopyInto(d, v.(*tensor.Dense))
}

// ViewOffset says that the piece is elements [off, off+size) of its input
// (machine.Viewer). The machine shares them even for a copying piece (o,
// lse): it never runs an op in place and keeps the packed buffer until the
// piece's last reader has run, so the hazard that makes those pieces copies
// under the TapeMachine cannot occur there.
func (op takeOp) ViewOffset() (int, bool) { return op.off, true }

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

func (op takeOp) ReturnsPtr() bool { return op.view }
func (op takeOp) CallsExtern() bool {
	return false
}
func (op takeOp) OverwritesInput() int {
	if op.view {
		return 0
	}
	return -1
}
func (op takeOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "flashattention.take %s %d %v %d %t", op.what, op.off, op.shape, op.srcLen, op.view)
}
func (op takeOp) Hashcode() uint32 { return graph.OpHash(op) }
func (op takeOp) String() string   { return fmt.Sprintf("take{%s %v}", op.what, op.shape) }

func (op takeOp) DiffWRT(n int) []bool { return trues(n) }

// SymDiff: the gradient of a take is its gradient put back in place in a
// zero tensor of the source's size.
func (op takeOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	n, err := gorgonia.ApplyOp(scatterOp{off: op.off, shape: op.shape, dstLen: op.srcLen, what: op.what}, grad)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	return gorgonia.Nodes{n}, nil
}

// DoDiff adds the output's gradient into its region of the input's gradient.
func (op takeOp) DoDiff(ctx gorgonia.ExecutionContext, inputs gorgonia.Nodes, output *gorgonia.Node) error {
	return graph.AddGradInto(op, inputs[0], output, op.off, nil)
}

// scatterOp is the gradient of takeOp: a flat tensor of dstLen zeros with
// the input's elements at [off, off+size):
//
//	out[off+i] = in[i], out[j] = 0 elsewhere
type scatterOp struct {
	graph.Pure
	off    int
	shape  tensor.Shape
	dstLen int
	what   string
}

func (op scatterOp) Arity() int { return 1 }
func (op scatterOp) Type() hm.Type {
	return hm.NewFnType(graph.TensorType(len(op.shape)), graph.TensorType(1))
}
func (op scatterOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.dstLen}, nil
}
func (op scatterOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if len(vs) != 1 {
		return nil, fmt.Errorf("%v: got %d inputs, want 1", op, len(vs))
	}
	d, ok := vs[0].(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("%v: input is a %T, want a dense tensor", op, vs[0])
	}
	if !d.Shape().Eq(op.shape) {
		return nil, fmt.Errorf("%v: input has shape %v, want %v", op, d.Shape(), op.shape)
	}
	// The output is fresh zeros: the region is a copy of the input.
	out := tensor.New(tensor.WithShape(op.dstLen), tensor.Of(d.Dtype()))
	n := op.shape.TotalSize()
	if n == 0 {
		return out, nil
	}
	if op.off < 0 || op.off+n > op.dstLen {
		return nil, fmt.Errorf("%v: region [%d, %d) outside the output's %d elements", op, op.off, op.off+n, op.dstLen)
	}
	if d.IsMaterializable() {
		d = d.Materialize().(*tensor.Dense)
	}
	switch src := d.Data().(type) {
	case []float32:
		copyInto(out.Data().([]float32)[op.off:op.off+n], src)
	case []float64:
		copyInto(out.Data().([]float64)[op.off:op.off+n], src)
	default:
		return nil, fmt.Errorf("%v: dtype %v is not supported", op, d.Dtype())
	}
	return out, nil
}

// DoInto is Do writing into out, a contiguous tensor of dstLen elements
// (machine.IntoDoer): zeros, and the input at [off, off+size).
func (op scatterOp) DoInto(out gorgonia.Value, vs ...gorgonia.Value) error {
	if len(vs) != 1 {
		return fmt.Errorf("%v: got %d inputs, want 1", op, len(vs))
	}
	in, ok1 := vs[0].(*tensor.Dense)
	d, ok2 := out.(*tensor.Dense)
	if !ok1 || !in.Shape().Eq(op.shape) {
		return fmt.Errorf("%v: input is a %T of shape %v, want a dense tensor of shape %v", op, vs[0], vs[0].Shape(), op.shape)
	}
	if !ok2 || d.IsMaterializable() || d.Dtype() != in.Dtype() || !d.Shape().Eq(tensor.Shape{op.dstLen}) {
		return fmt.Errorf("%v: output %T of dtype %v and shape %v, want a contiguous %v tensor of shape (%d)",
			op, out, out.Dtype(), out.Shape(), in.Dtype(), op.dstLen)
	}
	d.Zero()
	if err := graph.AddInto(d, in, op.off); err != nil {
		return fmt.Errorf("%v: %w", op, err)
	}
	return nil
}
func (op scatterOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "flashattention.scatter %s %d %v %d", op.what, op.off, op.shape, op.dstLen)
}
func (op scatterOp) Hashcode() uint32 { return graph.OpHash(op) }
func (op scatterOp) String() string   { return fmt.Sprintf("scatter{%s %v}", op.what, op.shape) }

func (op scatterOp) DiffWRT(n int) []bool { return trues(n) }

// SymDiff: the gradient of a scatter is the take of its region.
func (op scatterOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	n, err := gorgonia.ApplyOp(takeOp{off: op.off, shape: op.shape, srcLen: op.dstLen, what: "∂" + op.what}, grad)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	return gorgonia.Nodes{n}, nil
}

// DoDiff adds the region [off, off+size) of the output's gradient into the
// input's gradient.
func (op scatterOp) DoDiff(ctx gorgonia.ExecutionContext, inputs gorgonia.Nodes, output *gorgonia.Node) error {
	return graph.AddGradInto(op, inputs[0], output, 0, func(g gorgonia.Value) (gorgonia.Value, error) {
		return takeOp{off: op.off, shape: op.shape, srcLen: op.dstLen, view: true}.Do(g)
	})
}

func trues(n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = true
	}
	return out
}
