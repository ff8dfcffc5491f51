package softmax

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
)

// Softmax returns softmax(x) along axis, a node of x's shape:
//
//	y[o,i,j] = exp(x[o,i,j]) / Σ_i' exp(x[o,i',j])
//
// in the [Outer, N, Inner] view of x around axis (DESIGN.md). x is a
// float32 or float64 node of rank ≥ 1; a negative axis counts from the end
// (−1 is the last). Each row is computed with its own maximum, so no logit
// is too large or too small: an entry of −Inf gets probability 0, a row of
// only −Inf gives zeros (and a zero gradient), and a NaN or +Inf in a row
// makes that row, and no other, NaN. An x with no elements is an error
// (package doc, "Zero-length dimensions").
//
// The gradient is dx = y∘(dy − Σ_i dy∘y), computed from y and dy by an op of
// its own.
func Softmax(x *gorgonia.Node, axis int) (*gorgonia.Node, error) {
	return apply(kindSoftmax, x, axis)
}

// LogSoftmax returns log(softmax(x)) along axis, a node of x's shape:
//
//	y[o,i,j] = x[o,i,j] − log Σ_i' exp(x[o,i',j])
//
// with x, axis and the rows as in Softmax. An entry of −Inf gives −Inf; a row
// of only −Inf gives −Inf throughout and a zero gradient; a NaN or +Inf makes
// its row NaN. An x with no elements is an error.
//
// The gradient is dx = dy − exp(y)∘Σ_i dy, computed from y and dy by an op
// of its own.
func LogSoftmax(x *gorgonia.Node, axis int) (*gorgonia.Node, error) {
	return apply(kindLogSoftmax, x, axis)
}

// LogSumExp returns log Σ exp(x) along axis, a node of x's shape with axis
// removed (a scalar when x is a vector):
//
//	y[o,j] = log Σ_i exp(x[o,i,j])
//
// with x, axis and the rows as in Softmax. A row of only −Inf gives −Inf and
// a zero gradient; a NaN or +Inf makes its entry NaN. An empty axis gives
// −Inf in every row (log of an empty sum); it is an error when the result
// itself would have no elements, and gorgonia.Grad refuses to differentiate it
// (package doc, "Zero-length dimensions").
//
// The gradient is dx = softmax(x)∘dy, dy broadcast along axis, computed from
// x, y and dy by an op of its own.
func LogSumExp(x *gorgonia.Node, axis int) (*gorgonia.Node, error) {
	return apply(kindLogSumExp, x, axis)
}

// apply checks x and axis and adds the forward op of k to x's graph.
func apply(k kind, x *gorgonia.Node, axis int) (*gorgonia.Node, error) {
	if x == nil {
		return nil, fmt.Errorf("softmax.%v: x is a nil node (axis %d)", k, axis)
	}
	shape := x.Shape()
	dt, ok := graph.NodeDtype(x)
	if !ok {
		return nil, fmt.Errorf("softmax.%v: x %q (shape %v, axis %d) has type %v, want a float32 or float64 tensor",
			k, x.Name(), shape, axis, x.Type())
	}
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, fmt.Errorf("softmax.%v: x %q (shape %v, axis %d) has dtype %v, want float32 or float64",
			k, x.Name(), shape, axis, dt)
	}
	rank := len(shape)
	if rank == 0 {
		return nil, fmt.Errorf("softmax.%v: x %q is a scalar (shape %v, axis %d); want rank ≥ 1", k, x.Name(), shape, axis)
	}
	a := axis
	if a < 0 {
		a += rank
	}
	if a < 0 || a >= rank {
		return nil, fmt.Errorf("softmax.%v: axis %d out of range for x %q of shape %v (rank %d: axes −%d … %d)",
			k, axis, x.Name(), shape, rank, rank, rank-1)
	}
	// An x with no elements: log-sum-exp over an empty axis has rows (−Inf
	// each) when Outer·Inner > 0; every other such result has no elements.
	if out := outputShape(k, shape, a); graph.Empty(out) {
		return nil, fmt.Errorf("softmax.%v: x %q has shape %v, which has no elements (axis %d): the result would have shape %v and no elements, which Gorgonia v0.9.18 cannot run (graph.Empty)",
			k, x.Name(), shape, axis, out)
	}
	y, err := gorgonia.ApplyOp(graph.NewOp(fwdOp{kind: k, axis: a, dims: rank}), x)
	if err != nil {
		return nil, fmt.Errorf("softmax.%v: x %q (shape %v, axis %d): %w", k, x.Name(), shape, axis, err)
	}
	return y, nil
}

// fwdOp describes (graph.OpDef) the forward op of kind along axis
// (normalized to [0, dims)) of an input of rank dims. It holds no state: one
// value serves every run and every graph.
type fwdOp struct {
	kind kind
	axis int
	dims int
}

// outputShape is the shape of k's output for input shape s along axis.
func outputShape(k kind, s tensor.Shape, axis int) tensor.Shape {
	if k == kindLogSumExp {
		return reducedShape(s, axis)
	}
	return s.Clone()
}

// reducedShape is the shape of log-sum-exp's output for input shape s.
func reducedShape(s tensor.Shape, axis int) tensor.Shape {
	r := append(append(tensor.Shape{}, s[:axis]...), s[axis+1:]...)
	if len(r) == 0 {
		return tensor.ScalarShape()
	}
	return r
}

// types returns the Gorgonia types of the input x and of the output of op.
func (op fwdOp) types() (x, y hm.Type) {
	a := hm.TypeVariable('a')
	x = gorgonia.TensorType{Dims: op.dims, Of: a}
	switch {
	case op.kind != kindLogSumExp:
		y = x
	case op.dims == 1:
		y = a
	default:
		y = gorgonia.TensorType{Dims: op.dims - 1, Of: a}
	}
	return x, y
}

func (op fwdOp) String() string       { return fmt.Sprintf("%v{axis=%d}", op.kind, op.axis) }
func (op fwdOp) Arity() int           { return 1 }
func (op fwdOp) InputNames() []string { return []string{"x"} }

// Prealloc: the output is never a view, so the TapeMachine may reuse it.
func (op fwdOp) Prealloc() bool { return true }

func (op fwdOp) Type() hm.Type {
	x, y := op.types()
	return hm.NewFnType(x, y)
}

func (op fwdOp) Shape(in []tensor.Shape) (tensor.Shape, error) {
	if err := checkRank(op, "x", in[0], op.dims); err != nil {
		return nil, err
	}
	return outputShape(op.kind, in[0], op.axis), nil
}

// checkRank fails when the input name has a shape of another rank.
func checkRank(op fmt.Stringer, name string, s tensor.Shape, dims int) error {
	if s.Dims() != dims {
		return fmt.Errorf("%v: %s has shape %v, want rank %d", op, name, s, dims)
	}
	return nil
}

// checkFloat fails when the input name is not float32 or float64, or not of
// dtype dt.
func checkFloat(op fmt.Stringer, name string, v, first *tensor.Dense) error {
	if dt := v.Dtype(); dt != tensor.Float64 && dt != tensor.Float32 {
		return fmt.Errorf("%v: %s (shape %v) has dtype %v, want float32 or float64", op, name, v.Shape(), dt)
	}
	if v.Dtype() != first.Dtype() {
		return fmt.Errorf("%v: %s has shape %v and dtype %v, want shape %v and dtype %v",
			op, name, v.Shape(), v.Dtype(), v.Shape(), first.Dtype())
	}
	return nil
}

func (op fwdOp) Forward(y *tensor.Dense, in []*tensor.Dense) error {
	x := in[0]
	if err := checkFloat(op, "x", x, x); err != nil {
		return err
	}
	if graph.Empty(x.Shape()) {
		emptyForward(op, y)
		return nil
	}
	l := layoutOf(x.Shape(), op.axis)
	var err error
	if x.Dtype() == tensor.Float64 {
		err = forward(op.kind, dataOf[float64](x), dataOf[float64](y), l)
	} else {
		err = forward(op.kind, dataOf[float32](x), dataOf[float32](y), l)
	}
	if err != nil {
		return fmt.Errorf("%v: %w", op, err)
	}
	return nil
}

// emptyForward is the forward of an x with no elements, which the kernels
// never see: softmax and log-softmax give an empty tensor of x's shape;
// log-sum-exp over an empty axis is log 0 = −Inf for each of the
// Outer·Inner rows (none when Outer or Inner is 0).
func emptyForward(op fwdOp, y *tensor.Dense) {
	if op.kind != kindLogSumExp {
		return
	}
	switch y.Dtype() {
	case tensor.Float32:
		fill(y.Float32s(), float32(math.Inf(-1)))
	case tensor.Float64:
		fill(y.Float64s(), math.Inf(-1))
	}
}

func fill[T graph.Float](d []T, v T) {
	for i := range d {
		d[i] = v
	}
}

// Grad: the backward op, from (y, dy) for softmax and log-softmax, from
// (x, y, dy) for log-sum-exp. Neither recomputes the forward.
func (op fwdOp) Grad(in []*graph.Expr, y, dy *graph.Expr) []*graph.Expr {
	b := graph.NewOp(bwdOp(op))
	if op.kind == kindLogSumExp {
		return []*graph.Expr{graph.Apply(b, in[0], y, dy)}
	}
	return []*graph.Expr{graph.Apply(b, y, dy)}
}

// bwdOp describes the backward op of fwdOp with the same fields. Its inputs
// are (y, dy) for softmax and log-softmax and (x, y, dy) for log-sum-exp;
// its output, dx, has the shape of the forward's input.
type bwdOp fwdOp

func (op bwdOp) String() string { return fmt.Sprintf("%vGrad{axis=%d}", op.kind, op.axis) }
func (op bwdOp) Prealloc() bool { return true }

func (op bwdOp) Arity() int { return len(op.InputNames()) }

func (op bwdOp) InputNames() []string {
	if op.kind == kindLogSumExp {
		return []string{"x", "y", "dy"}
	}
	return []string{"y", "dy"}
}

func (op bwdOp) Type() hm.Type {
	x, y := fwdOp(op).types()
	if op.kind == kindLogSumExp {
		return hm.NewFnType(x, y, y, x)
	}
	return hm.NewFnType(y, y, x)
}

// Shape checks the ranks and that y and dy have the shape the forward gives
// for input 0 (y itself, or x for log-sum-exp), and returns input 0's.
func (op bwdOp) Shape(in []tensor.Shape) (tensor.Shape, error) {
	names := op.InputNames()
	full := in[0] // y for softmax/log-softmax, x for log-sum-exp
	if err := checkRank(op, names[0], full, op.dims); err != nil {
		return nil, err
	}
	want := full
	if op.kind == kindLogSumExp {
		want = reducedShape(full, op.axis)
	}
	for i, s := range in[1:] {
		if err := checkRank(op, names[i+1], s, want.Dims()); err != nil {
			return nil, err
		}
		if !s.Eq(want) {
			return nil, fmt.Errorf("%v: %s has shape %v, want shape %v", op, names[i+1], s, want)
		}
	}
	return full.Clone(), nil
}

func (op bwdOp) Forward(dx *tensor.Dense, in []*tensor.Dense) error {
	for i, v := range in {
		if err := checkFloat(op, op.InputNames()[i], v, in[0]); err != nil {
			return err
		}
	}
	full := in[0].Shape()
	if graph.Empty(full) { // dx has no elements: nothing to compute
		return nil
	}
	l := layoutOf(full, op.axis)
	if in[0].Dtype() == tensor.Float64 {
		return runBackward[float64](op, dx, in, l)
	}
	return runBackward[float32](op, dx, in, l)
}

func runBackward[T graph.Float](op bwdOp, out *tensor.Dense, in []*tensor.Dense, l layout) error {
	var x, y, dy []T
	if op.kind == kindLogSumExp {
		x, y, dy = dataOf[T](in[0]), dataOf[T](in[1]), dataOf[T](in[2])
	} else {
		y, dy = dataOf[T](in[0]), dataOf[T](in[1])
	}
	if err := backward(op.kind, x, y, dy, dataOf[T](out), l); err != nil {
		return fmt.Errorf("%v: %w", op, err)
	}
	return nil
}

// dataOf returns the elements of a float32 or float64 value of dtype T: the
// backing slice of a tensor (one element for a rank-0 one, none for one
// with no elements), or a one-element copy of a Gorgonia scalar.
func dataOf[T graph.Float](v gorgonia.Value) []T {
	switch v := v.(type) {
	case *gorgonia.F64:
		return []T{T(*v)}
	case *gorgonia.F32:
		return []T{T(*v)}
	case *tensor.Dense:
		var s any
		if v.Dtype() == tensor.Float32 {
			s = v.Float32s()
		} else {
			s = v.Float64s()
		}
		return s.([]T)
	}
	return nil
}

var (
	_ graph.Differentiable = fwdOp{}
	_ graph.OpDef          = bwdOp{}
)
