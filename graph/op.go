package graph

import (
	"fmt"
	"hash"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file holds the one way the project defines a Gorgonia op (OpDef and
// NewOp) and the pieces every op needs, so that ops/softmax, ops/attention
// and nn write them once.

// OpDef is the small description of an op from which NewOp makes the
// gorgonia.Op. For y = f(x₁, …, xₙ) it says:
//
//	String()       the op's name for errors and graph printouts ("Softmax{axis=1}")
//	Arity()        n
//	Type()         the Gorgonia type, e.g. hm.NewFnType(TensorType(2), TensorType(2))
//	Shape(in)      shape(y) from shape(x₁), …, shape(xₙ), or an error naming them
//	Forward(y, x)  y ← f(x): y is contiguous, of the output's shape and of x₁'s
//	               dtype, holding anything (a machine's reused buffer): Forward
//	               overwrites every element and reads x, never writes it
//
// and, when the op is differentiable (Differentiable), its gradient as
// a formula over the arguments, built once by NewOp's SymDiff on nodes and by
// its DoDiff on values. Softmax, y = softmax(x) along an axis, is
//
//	Grad(x, y, dy) = [ Apply(NewOp(softmaxGrad), y, dy) ]     dx = y∘(dy − Σ dy∘y)
//
// The op's hash (WriteHash, Hashcode) is that of the description's Go value,
// every field included (%#v), so two ops with different parameters never
// hash alike and no parameter can be left out of it by mistake.
//
// The values NewOp's Do and DoInto give Forward are contiguous dense
// tensors: views are materialized, and a Gorgonia scalar (*F32, *F64) is a
// rank-0 tensor (its one element is Float32s()[0]). A scalar output is
// returned as Gorgonia's scalar value. Optional methods of the description
// extend the contract: InputNames() []string (errors name the inputs),
// View() (off int, shared bool) (the output is elements [off, off+size) of
// input 0, see Op.ViewOffset), Prealloc() bool (UsePreallocDo may reuse the
// TapeMachine's buffer), OpKind() string (the machine's registry key).
type OpDef interface {
	String() string
	Arity() int
	Type() hm.Type
	Shape(in []tensor.Shape) (tensor.Shape, error)
	Forward(out *tensor.Dense, in []*tensor.Dense) error
}

// Differentiable is an OpDef with a gradient: Grad returns, for each input,
// its gradient as an Expr over the leaves in (the inputs), out (the output)
// and dout (the output's gradient), or nil for an input with none. Grad is
// a pure formula: it may be called with leaves alone (DiffWRT does, to learn
// which entries are nil), so it must not look at values.
type Differentiable interface {
	OpDef
	Grad(in []*Expr, out, dout *Expr) []*Expr
}

// Expr is a term of a gradient formula: one of the differentiated op's
// arguments, or an op applied to terms (Apply). A term used twice is
// computed once (attention's backward feeds three pieces).
type Expr struct {
	op   gorgonia.Op // nil: a leaf
	args []*Expr
	leaf int // for a leaf: input index ≥ 0, leafOut or leafGrad
}

const (
	leafOut  = -1
	leafGrad = -2
)

// Apply is the term op(args…).
func Apply(op gorgonia.Op, args ...*Expr) *Expr { return &Expr{op: op, args: args} }

// leaves returns the argument terms of an op of n inputs.
func leaves(n int) (in []*Expr, out, dout *Expr) {
	in = make([]*Expr, n)
	for i := range in {
		in[i] = &Expr{leaf: i}
	}
	return in, &Expr{leaf: leafOut}, &Expr{leaf: leafGrad}
}

// eval computes e with apply for ops and leaf for leaves, each term once.
func eval[V any](e *Expr, memo map[*Expr]V, leaf func(int) V, apply func(gorgonia.Op, []V) (V, error)) (V, error) {
	if v, ok := memo[e]; ok {
		return v, nil
	}
	var v V
	if e.op == nil {
		v = leaf(e.leaf)
	} else {
		args := make([]V, len(e.args))
		for i, a := range e.args {
			var err error
			if args[i], err = eval(a, memo, leaf, apply); err != nil {
				return v, err
			}
		}
		var err error
		if v, err = apply(e.op, args); err != nil {
			return v, err
		}
	}
	memo[e] = v
	return v, nil
}

// Op is the gorgonia.Op that NewOp makes of an OpDef: it implements
// gorgonia.Op, SDOp, ADOp, UsePreallocDoer and the machine's IntoDoer,
// Viewer and Kinder.
type Op struct{ def OpDef }

// NewOp returns the op that def describes.
func NewOp(def OpDef) Op { return Op{def} }

// DefOf returns op's description when op is an Op, and op itself otherwise:
// a device's registry reads a kernel's parameters from it.
func DefOf(op gorgonia.Op) any {
	if o, ok := op.(Op); ok {
		return o.def
	}
	return op
}

func (o Op) Arity() int     { return o.def.Arity() }
func (o Op) Type() hm.Type  { return o.def.Type() }
func (o Op) String() string { return o.def.String() }

// WriteHash writes the description's Go value, every field (see OpDef).
func (o Op) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%#v", o.def) }
func (o Op) Hashcode() uint32      { return OpHash(o) }

// OpKind is the description's own OpKind, or its Go type ("softmax.fwdOp").
func (o Op) OpKind() string {
	if k, ok := o.def.(interface{ OpKind() string }); ok {
		return k.OpKind()
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", o.def), "*")
}

// viewDef is a description whose output is elements [off, off+size) of its
// input 0. shared says that Do returns that view itself rather than a copy.
type viewDef interface {
	View() (off int, shared bool)
}

// ViewOffset reports that the output is elements [off, off+size(output)) of
// input 0 (machine.Viewer): true for a description with a View method.
func (o Op) ViewOffset() (int, bool) {
	if v, ok := o.def.(viewDef); ok {
		off, _ := v.View()
		return off, true
	}
	return 0, false
}

// shared reports whether Do returns a view of input 0.
func (o Op) shared() bool {
	v, ok := o.def.(viewDef)
	if !ok {
		return false
	}
	_, s := v.View()
	return s
}

func (o Op) ReturnsPtr() bool  { return o.shared() }
func (o Op) CallsExtern() bool { return false }
func (o Op) OverwritesInput() int {
	if o.shared() {
		return 0
	}
	return -1
}

// name is the name of input i in errors.
func (o Op) name(i int) string {
	if n, ok := o.def.(interface{ InputNames() []string }); ok {
		if names := n.InputNames(); i < len(names) {
			return names[i]
		}
	}
	return fmt.Sprintf("input %d", i)
}

func (o Op) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	if len(ds) != o.def.Arity() {
		return nil, fmt.Errorf("%v: got %d inputs, want %d", o, len(ds), o.def.Arity())
	}
	shapes := make([]tensor.Shape, len(ds))
	for i, d := range ds {
		s, ok := d.(tensor.Shape)
		if !ok {
			return nil, fmt.Errorf("%v: %s has no concrete shape (%T)", o, o.name(i), d)
		}
		shapes[i] = s
	}
	return o.def.Shape(shapes)
}

// inputs checks the values of a call and returns them as contiguous dense
// tensors with the output's shape.
func (o Op) inputs(vs []gorgonia.Value) ([]*tensor.Dense, tensor.Shape, error) {
	if len(vs) != o.def.Arity() {
		return nil, nil, fmt.Errorf("%v: got %d inputs, want %d", o, len(vs), o.def.Arity())
	}
	in := make([]*tensor.Dense, len(vs))
	shapes := make([]tensor.Shape, len(vs))
	for i, v := range vs {
		var d *tensor.Dense
		switch v := v.(type) {
		case *tensor.Dense:
			d = v
		case *gorgonia.F32:
			if v != nil {
				d = tensor.New(tensor.FromScalar(float32(*v)))
			}
		case *gorgonia.F64:
			if v != nil {
				d = tensor.New(tensor.FromScalar(float64(*v)))
			}
		default:
			if v != nil {
				return nil, nil, fmt.Errorf("%v: %s is a %T, want a dense tensor or a float scalar", o, o.name(i), v)
			}
		}
		if d == nil {
			return nil, nil, fmt.Errorf("%v: %s has no value", o, o.name(i))
		}
		if d.IsMaterializable() {
			d = d.Materialize().(*tensor.Dense)
		}
		in[i], shapes[i] = d, d.Shape()
	}
	shape, err := o.def.Shape(shapes)
	if err != nil {
		return nil, nil, err
	}
	return in, shape, nil
}

// Do runs Forward into a new tensor; a shared view (View) is returned as is.
func (o Op) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	in, shape, err := o.inputs(vs)
	if err != nil {
		return nil, err
	}
	if o.shared() {
		off, _ := o.ViewOffset()
		return view(o, in[0], off, shape)
	}
	out := tensor.New(tensor.WithShape(shape.Clone()...), tensor.Of(in[0].Dtype()))
	if err := o.def.Forward(out, in); err != nil {
		return nil, err
	}
	return scalarOrTensor(out), nil
}

// view returns elements [off, off+size(shape)) of the contiguous float
// tensor d as a tensor of the given shape sharing d's memory (capacity
// clipped, so that nothing can append into the rest of d).
func view(op fmt.Stringer, d *tensor.Dense, off int, shape tensor.Shape) (*tensor.Dense, error) {
	n := shape.TotalSize()
	if off < 0 || off+n > d.Shape().TotalSize() {
		return nil, fmt.Errorf("%v: elements [%d, %d) of an input of shape %v", op, off, off+n, d.Shape())
	}
	var backing any
	switch d.Dtype() {
	case tensor.Float32:
		backing = d.Float32s()[off : off+n : off+n]
	case tensor.Float64:
		backing = d.Float64s()[off : off+n : off+n]
	default:
		return nil, fmt.Errorf("%v: dtype %v is not supported", op, d.Dtype())
	}
	return tensor.New(tensor.WithShape(shape.Clone()...), tensor.WithBacking(backing)), nil
}

// scalarOrTensor returns a rank-0 float tensor as Gorgonia's scalar value.
func scalarOrTensor(t *tensor.Dense) gorgonia.Value {
	if !t.IsScalar() {
		return t
	}
	switch v := t.Data().(type) {
	case float32:
		return gorgonia.NewF32(v)
	case float64:
		return gorgonia.NewF64(v)
	}
	return t
}

// DoInto is Do writing into out, a contiguous tensor of the output's shape
// and dtype that shares memory with no other live value (machine.IntoDoer:
// the machine's planned buffer). Gorgonia's TapeMachine never calls it.
func (o Op) DoInto(out gorgonia.Value, vs ...gorgonia.Value) error {
	in, shape, err := o.inputs(vs)
	if err != nil {
		return err
	}
	d, ok := out.(*tensor.Dense)
	if !ok || d.IsMaterializable() || d.Dtype() != in[0].Dtype() || !d.Shape().Eq(shape) {
		return fmt.Errorf("%v: output %T of dtype %v and shape %v, want a contiguous %v tensor of shape %v",
			o, out, out.Dtype(), out.Shape(), in[0].Dtype(), shape)
	}
	return o.def.Forward(d, in)
}

// UsePreallocDo is the TapeMachine's Do with the previous run's output.
// It writes into prealloc only for a description with Prealloc() true (its
// outputs are never viewed by a live value: the TapeMachine's registers
// have no alias analysis) and when prealloc fits: a contiguous tensor of the
// output's shape and dtype, with elements, sharing no input's memory.
// Otherwise it is Do.
func (o Op) UsePreallocDo(prealloc gorgonia.Value, vs ...gorgonia.Value) (gorgonia.Value, error) {
	p, ok := o.def.(interface{ Prealloc() bool })
	d, isDense := prealloc.(*tensor.Dense)
	if !ok || !p.Prealloc() || !isDense || d == nil {
		return o.Do(vs...)
	}
	in, shape, err := o.inputs(vs)
	if err != nil {
		return nil, err
	}
	if d.IsMaterializable() || d.Dtype() != in[0].Dtype() || !d.Shape().Eq(shape) || Empty(shape) || shape.IsScalar() || sharesMemory(d, in) {
		return o.Do(vs...)
	}
	if err := o.def.Forward(d, in); err != nil {
		return nil, err
	}
	return d, nil
}

// sharesMemory reports whether d's backing array is one of in's.
func sharesMemory(d *tensor.Dense, in []*tensor.Dense) bool {
	for _, t := range in {
		if t.Shape().TotalSize() > 0 && t.Uintptr() == d.Uintptr() {
			return true
		}
	}
	return false
}

// DiffWRT: the inputs whose Grad entry is not nil.
func (o Op) DiffWRT(n int) []bool {
	out := make([]bool, n)
	if d, ok := o.def.(Differentiable); ok {
		in, y, dy := leaves(n)
		for i, g := range d.Grad(in, y, dy) {
			if i < n {
				out[i] = g != nil
			}
		}
	}
	return out
}

// SymDiff builds, for each differentiable input, the nodes of its gradient
// (Grad on nodes); the others get nil. An input with no elements cannot be
// differentiated: the TapeMachine would add its empty gradient with
// Gorgonia's own ops, which cannot run it (Empty).
func (o Op) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	d, ok := o.def.(Differentiable)
	if !ok {
		return nil, fmt.Errorf("%v: not differentiable", o)
	}
	if len(inputs) != o.def.Arity() || output == nil || grad == nil || slices.Contains(inputs, nil) {
		return nil, fmt.Errorf("%v: SymDiff with %d inputs, want %d, an output and its gradient", o, len(inputs), o.def.Arity())
	}
	in, y, dy := leaves(len(inputs))
	grads := d.Grad(in, y, dy)
	leaf := func(i int) *gorgonia.Node {
		switch i {
		case leafOut:
			return output
		case leafGrad:
			return grad
		}
		return inputs[i]
	}
	apply := func(op gorgonia.Op, args []*gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.ApplyOp(op, args...)
	}
	memo := map[*Expr]*gorgonia.Node{}
	out := make(gorgonia.Nodes, len(inputs))
	for i, g := range grads {
		if g == nil || i >= len(out) {
			continue
		}
		if s := inputs[i].Shape(); Empty(s) {
			return nil, fmt.Errorf("%v: cannot differentiate with respect to %s %q of shape %v, which has no elements: the TapeMachine would add its empty gradient with Gorgonia's own ops, which cannot run a tensor with no elements (graph.Empty)",
				o, o.name(i), inputs[i].Name(), s)
		}
		var err error
		if out[i], err = eval(g, memo, leaf, apply); err != nil {
			return nil, fmt.Errorf("%v: building the gradient of %s: %w", o, o.name(i), err)
		}
	}
	return out, nil
}

// DoDiff computes the same gradients as SymDiff on values and adds them to
// the inputs' gradients (the LispMachine's dual values).
func (o Op) DoDiff(ctx gorgonia.ExecutionContext, inputs gorgonia.Nodes, output *gorgonia.Node) error {
	d, ok := o.def.(Differentiable)
	if !ok {
		return fmt.Errorf("%v: not differentiable", o)
	}
	if len(inputs) != o.def.Arity() || output == nil || slices.Contains(inputs, nil) {
		return fmt.Errorf("%v: DoDiff with %d inputs, want %d and an output", o, len(inputs), o.def.Arity())
	}
	gout, err := output.Grad()
	if err != nil {
		return fmt.Errorf("%v: DoDiff: gradient of the output: %w", o, err)
	}
	in, y, dy := leaves(len(inputs))
	leaf := func(i int) gorgonia.Value {
		switch i {
		case leafOut:
			return output.Value()
		case leafGrad:
			return gout
		}
		return inputs[i].Value()
	}
	apply := func(op gorgonia.Op, args []gorgonia.Value) (gorgonia.Value, error) { return op.Do(args...) }
	memo := map[*Expr]gorgonia.Value{}
	for i, ge := range d.Grad(in, y, dy) {
		if ge == nil || i >= len(inputs) {
			continue
		}
		g, err := eval(ge, memo, leaf, apply)
		if err != nil {
			return fmt.Errorf("%v: gradient of %s: %w", o, o.name(i), err)
		}
		dst, err := inputs[i].Grad()
		if err != nil {
			return fmt.Errorf("%v: DoDiff: %s has no gradient slot: %w", o, o.name(i), err)
		}
		if dn, gn := dst.Shape().TotalSize(), g.Shape().TotalSize(); dn != gn {
			return fmt.Errorf("%v: gradient of %s has %d elements (shape %v), the input %d (shape %v)",
				o, o.name(i), gn, g.Shape(), dn, dst.Shape())
		}
		if err := AddInto(dst, g, 0); err != nil {
			return fmt.Errorf("%v: accumulating the gradient of %s: %w", o, o.name(i), err)
		}
	}
	return nil
}

// OpHash is the FNV-1a hash of what op writes with WriteHash: the
// Hashcode of an op whose WriteHash describes it completely.
func OpHash(op interface{ WriteHash(hash.Hash) }) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

// TensorType is the Gorgonia type "tensor of rank dims whose element type is
// the type variable a", for ops generic over float32 and float64.
func TensorType(dims int) hm.Type {
	return gorgonia.TensorType{Dims: dims, Of: hm.TypeVariable('a')}
}

// AddInto adds the dense tensor src, flattened, into the dense tensor dst
// from flat element off on:
//
//	dst[off+i] += src[i]   for i < size(src)
//
// as an op's DoDiff does when it accumulates a gradient. src may be a view;
// dst must not be. Both must be float32 or float64 of the same dtype, and
// src must fit: off + size(src) ≤ size(dst), where a scalar (rank 0) has
// size 1. A src with no elements adds nothing (dst may then have none
// either).
func AddInto(dst, src gorgonia.Value, off int) error {
	d, ok1 := dst.(*tensor.Dense)
	s, ok2 := src.(*tensor.Dense)
	if !ok1 || !ok2 || d == nil || s == nil {
		return fmt.Errorf("graph.AddInto: want dense tensors, got %T and %T", dst, src)
	}
	if d.Dtype() != s.Dtype() || off < 0 || off+s.Shape().TotalSize() > d.Shape().TotalSize() {
		return fmt.Errorf("graph.AddInto: cannot add %v%v into %v%v at %d", s.Dtype(), s.Shape(), d.Dtype(), d.Shape(), off)
	}
	if d.IsMaterializable() {
		return fmt.Errorf("graph.AddInto: cannot add into a view of shape %v", d.Shape())
	}
	switch d.Dtype() {
	case tensor.Float32:
		addDense[float32](d, s, off)
	case tensor.Float64:
		addDense[float64](d, s, off)
	default:
		return fmt.Errorf("graph.AddInto: dtype %v is not float32 or float64", d.Dtype())
	}
	return nil
}

// CopyInto copies the dense tensor src, flattened, into the dense tensor
// dst of the same dtype and number of elements:
//
//	dst[i] = src[i]   for i < size(src)
//
// as an op writing its result into a given buffer does. src may be a view;
// dst must not be. Both must be float32 or float64.
func CopyInto(dst, src *tensor.Dense) error {
	if dst == nil || src == nil || dst.Dtype() != src.Dtype() || dst.Shape().TotalSize() != src.Shape().TotalSize() || dst.IsMaterializable() {
		return fmt.Errorf("graph.CopyInto: cannot copy %v into %v", describeDense(src), describeDense(dst))
	}
	switch {
	case Empty(src.Shape()):
	case dst.Dtype() == tensor.Float32:
		copy(dst.Data().([]float32), elements[float32](src))
	case dst.Dtype() == tensor.Float64:
		copy(dst.Data().([]float64), elements[float64](src))
	default:
		return fmt.Errorf("graph.CopyInto: dtype %v is not float32 or float64", dst.Dtype())
	}
	return nil
}

func describeDense(t *tensor.Dense) string {
	if t == nil {
		return "nil"
	}
	return fmt.Sprintf("%v%v (view %t)", t.Dtype(), t.Shape(), t.IsMaterializable())
}

// addDense is AddInto once the arguments are checked.
func addDense[T Float](d, s *tensor.Dense, off int) {
	switch {
	case Empty(s.Shape()): // Data and Materialize panic on no elements
	case d.IsScalar(): // then s has one element and off is 0
		d.Set(0, d.ScalarValue().(T)+elements[T](s)[0])
	default:
		dst := d.Data().([]T)[off:]
		for i, x := range elements[T](s) {
			dst[i] += x
		}
	}
}

// elements returns the elements of a non-empty dense tensor of dtype T in
// row-major order: its backing slice, or a copy when it is a scalar or a view.
func elements[T Float](t *tensor.Dense) []T {
	if t.IsScalar() {
		return []T{t.ScalarValue().(T)}
	}
	if t.IsMaterializable() {
		t = t.Materialize().(*tensor.Dense)
	}
	return t.Data().([]T)
}
