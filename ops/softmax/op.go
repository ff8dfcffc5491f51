package softmax

import (
	"fmt"
	"hash"
	"math"
	"slices"
	"unsafe"

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
	y, err := gorgonia.ApplyOp(fwdOp{kind: k, axis: a, dims: rank}, x)
	if err != nil {
		return nil, fmt.Errorf("softmax.%v: x %q (shape %v, axis %d): %w", k, x.Name(), shape, axis, err)
	}
	return y, nil
}

// fwdOp is the forward op of kind along axis (normalized to [0, dims)) of an
// input of rank dims. It holds no state: one value serves every run and
// every graph.
type fwdOp struct {
	graph.Pure
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

func (op fwdOp) Arity() int { return 1 }

func (op fwdOp) Type() hm.Type {
	x, y := op.types()
	return hm.NewFnType(x, y)
}

func (op fwdOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := op.inputShape(in)
	if err != nil {
		return nil, err
	}
	return outputShape(op.kind, s, op.axis), nil
}

func (op fwdOp) inputShape(in []gorgonia.DimSizer) (tensor.Shape, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("%v: %d inputs, want 1", op, len(in))
	}
	s, ok := in[0].(tensor.Shape)
	if !ok || len(s) != op.dims {
		return nil, fmt.Errorf("%v: input shape %v, want rank %d", op, in[0], op.dims)
	}
	return s, nil
}

func (op fwdOp) Do(in ...gorgonia.Value) (gorgonia.Value, error) { return op.do(nil, in) }

// UsePreallocDo lets the TapeMachine reuse the output of the previous run.
func (op fwdOp) UsePreallocDo(prealloc gorgonia.Value, in ...gorgonia.Value) (gorgonia.Value, error) {
	return op.do(prealloc, in)
}

func (op fwdOp) do(prealloc gorgonia.Value, in []gorgonia.Value) (gorgonia.Value, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("%v: %d inputs, want 1", op, len(in))
	}
	x, err := checkValue(op, in[0], "x", op.dims)
	if err != nil {
		return nil, err
	}
	outShape := outputShape(op.kind, x.Shape(), op.axis)
	if graph.Empty(x.Shape()) {
		return emptyForward(op, x.Dtype(), outShape), nil
	}
	l := layoutOf(x.Shape(), op.axis)
	switch x.Dtype() {
	case tensor.Float64:
		return runForward[float64](op, x, prealloc, outShape, l)
	case tensor.Float32:
		return runForward[float32](op, x, prealloc, outShape, l)
	}
	return nil, fmt.Errorf("%v: x (shape %v) has dtype %v, want float32 or float64", op, x.Shape(), x.Dtype())
}

// emptyForward is the forward of an x with no elements, which the kernels
// never see: softmax and log-softmax give an empty tensor of x's shape;
// log-sum-exp over an empty axis is log 0 = −Inf for each of the
// Outer·Inner rows (none when Outer or Inner is 0).
func emptyForward(op fwdOp, dt tensor.Dtype, outShape tensor.Shape) gorgonia.Value {
	if op.kind != kindLogSumExp {
		return tensor.New(tensor.WithShape(outShape...), tensor.Of(dt))
	}
	if outShape.IsScalar() {
		if dt == tensor.Float32 {
			return gorgonia.NewF32(float32(math.Inf(-1)))
		}
		return gorgonia.NewF64(math.Inf(-1))
	}
	y := tensor.New(tensor.WithShape(outShape...), tensor.Of(dt))
	if outShape.TotalSize() > 0 {
		switch d := y.Data().(type) {
		case []float32:
			fill(d, float32(math.Inf(-1)))
		case []float64:
			fill(d, math.Inf(-1))
		}
	}
	return y
}

func fill[T graph.Float](d []T, v T) {
	for i := range d {
		d[i] = v
	}
}

func runForward[T graph.Float](op fwdOp, x gorgonia.Value, prealloc gorgonia.Value, outShape tensor.Shape, l layout) (gorgonia.Value, error) {
	xs := dataOf[T](x)
	if outShape.IsScalar() {
		var y [1]T
		if err := forward(op.kind, xs, y[:], l); err != nil {
			return nil, fmt.Errorf("%v: %w", op, err)
		}
		return scalarValue(y[0]), nil
	}
	y := output[T](prealloc, outShape, x.Dtype(), xs)
	if err := forward(op.kind, xs, y.Data().([]T), l); err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	return y, nil
}

func (op fwdOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "flashgorgon.%v{axis=%d,dims=%d}", op.kind, op.axis, op.dims)
}
func (op fwdOp) Hashcode() uint32 { return graph.OpHash(op) }
func (op fwdOp) String() string   { return fmt.Sprintf("%v{axis=%d}", op.kind, op.axis) }

// DiffWRT: the op is differentiable with respect to its one input.
func (op fwdOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	if n > 0 {
		d[0] = true
	}
	return d
}

// SymDiff adds the backward op: from (y, dy) for softmax and log-softmax,
// from (x, y, dy) for log-sum-exp. Neither recomputes the forward.
func (op fwdOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if len(inputs) != 1 || inputs[0] == nil || output == nil || grad == nil {
		return nil, fmt.Errorf("%v: SymDiff with %d inputs, want 1, an output and its gradient", op, len(inputs))
	}
	if s := inputs[0].Shape(); graph.Empty(s) {
		return nil, fmt.Errorf("%v: cannot differentiate with respect to x %q of shape %v, which has no elements (axis %d): the TapeMachine would add its empty gradient with Gorgonia's own ops, which cannot run a tensor with no elements (graph.Empty)",
			op, inputs[0].Name(), s, op.axis)
	}
	var (
		dx  *gorgonia.Node
		err error
	)
	b := bwdOp(op)
	if op.kind == kindLogSumExp {
		dx, err = gorgonia.ApplyOp(b, inputs[0], output, grad)
	} else {
		dx, err = gorgonia.ApplyOp(b, output, grad)
	}
	if err != nil {
		return nil, fmt.Errorf("%v: building the gradient of %v: %w", op, inputs[0].Shape(), err)
	}
	return gorgonia.Nodes{dx}, nil
}

// DoDiff is the LispMachine's backward step: it adds the gradient of the op
// to the gradient of its input, from the input's and output's values and the
// output's gradient.
func (op fwdOp) DoDiff(ctx gorgonia.ExecutionContext, inputs gorgonia.Nodes, output *gorgonia.Node) error {
	if len(inputs) != 1 || inputs[0] == nil || output == nil {
		return fmt.Errorf("%v: DoDiff with %d inputs, want 1 and an output", op, len(inputs))
	}
	x := inputs[0]
	dy, err := output.Grad()
	if err != nil {
		return fmt.Errorf("%v: DoDiff: gradient of the output: %w", op, err)
	}
	xg, err := x.Grad()
	if err != nil {
		return fmt.Errorf("%v: DoDiff: gradient of the input: %w", op, err)
	}
	args := []gorgonia.Value{output.Value(), dy}
	if op.kind == kindLogSumExp {
		args = []gorgonia.Value{x.Value(), output.Value(), dy}
	}
	dx, err := bwdOp(op).Do(args...)
	if err != nil {
		return err
	}
	acc, ok := xg.(*tensor.Dense)
	if !ok || acc.IsMaterializable() || acc.Dtype() != dx.Dtype() || !slices.Equal(acc.Shape(), dx.Shape()) {
		return fmt.Errorf("%v: DoDiff: the input's gradient %T (shape %v, dtype %v) cannot take a gradient of shape %v, dtype %v",
			op, xg, xg.Shape(), xg.Dtype(), dx.Shape(), dx.Dtype())
	}
	if graph.Empty(acc.Shape()) {
		return nil // an empty input has an empty gradient
	}
	if acc.Dtype() == tensor.Float32 {
		addInto(acc.Data().([]float32), dataOf[float32](dx))
	} else {
		addInto(acc.Data().([]float64), dataOf[float64](dx))
	}
	return nil
}

func addInto[T graph.Float](dst, src []T) {
	for i, v := range src {
		dst[i] += v
	}
}

// bwdOp is the backward op of fwdOp with the same fields. Its inputs are
// (y, dy) for softmax and log-softmax and (x, y, dy) for log-sum-exp; its
// output, dx, has the shape of the forward's input.
type bwdOp fwdOp

func (op bwdOp) Arity() int {
	if op.kind == kindLogSumExp {
		return 3
	}
	return 2
}

func (op bwdOp) Type() hm.Type {
	x, y := fwdOp(op).types()
	if op.kind == kindLogSumExp {
		return hm.NewFnType(x, y, y, x)
	}
	return hm.NewFnType(y, y, x)
}

func (op bwdOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	if len(in) != op.Arity() {
		return nil, fmt.Errorf("%v: %d inputs, want %d", op, len(in), op.Arity())
	}
	return fwdOp(op).inputShape(in[:1])
}

func (op bwdOp) Do(in ...gorgonia.Value) (gorgonia.Value, error) { return op.do(nil, in) }

// UsePreallocDo lets the TapeMachine reuse the output of the previous run.
func (op bwdOp) UsePreallocDo(prealloc gorgonia.Value, in ...gorgonia.Value) (gorgonia.Value, error) {
	return op.do(prealloc, in)
}

func (op bwdOp) do(prealloc gorgonia.Value, in []gorgonia.Value) (gorgonia.Value, error) {
	if len(in) != op.Arity() {
		return nil, fmt.Errorf("%v: %d inputs, want %d", op, len(in), op.Arity())
	}
	names := []string{"y", "dy"}
	if op.kind == kindLogSumExp {
		names = []string{"x", "y", "dy"}
	}
	vals := make([]gorgonia.Value, len(in))
	for i, v := range in {
		dims := op.dims
		if op.kind == kindLogSumExp && i > 0 {
			dims--
		}
		d, err := checkValue(op, v, names[i], dims)
		if err != nil {
			return nil, err
		}
		vals[i] = d
	}
	full := vals[0].Shape() // y for softmax/log-softmax, x for log-sum-exp
	for i, v := range vals[1:] {
		want := full
		if op.kind == kindLogSumExp {
			want = reducedShape(full, op.axis)
		}
		if !slices.Equal(v.Shape(), want) || v.Dtype() != vals[0].Dtype() {
			return nil, fmt.Errorf("%v: %s has shape %v and dtype %v, want shape %v and dtype %v",
				op, names[i+1], v.Shape(), v.Dtype(), want, vals[0].Dtype())
		}
	}
	if graph.Empty(full) { // dx has no elements: nothing to compute
		return tensor.New(tensor.WithShape(full.Clone()...), tensor.Of(vals[0].Dtype())), nil
	}
	l := layoutOf(full, op.axis)
	switch vals[0].Dtype() {
	case tensor.Float64:
		return runBackward[float64](op, vals, prealloc, l)
	case tensor.Float32:
		return runBackward[float32](op, vals, prealloc, l)
	}
	return nil, fmt.Errorf("%v: dtype %v, want float32 or float64", op, vals[0].Dtype())
}

func runBackward[T graph.Float](op bwdOp, vals []gorgonia.Value, prealloc gorgonia.Value, l layout) (gorgonia.Value, error) {
	data := make([][]T, len(vals))
	for i, v := range vals {
		data[i] = dataOf[T](v)
	}
	var x, y, dy []T
	if op.kind == kindLogSumExp {
		x, y, dy = data[0], data[1], data[2]
	} else {
		y, dy = data[0], data[1]
	}
	dx := output[T](prealloc, vals[0].Shape(), vals[0].Dtype(), data...)
	if err := backward(op.kind, x, y, dy, dx.Data().([]T), l); err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	return dx, nil
}

func (op bwdOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "flashgorgon.%vGrad{axis=%d,dims=%d}", op.kind, op.axis, op.dims)
}
func (op bwdOp) Hashcode() uint32 { return graph.OpHash(op) }
func (op bwdOp) String() string   { return fmt.Sprintf("%vGrad{axis=%d}", op.kind, op.axis) }

// checkValue validates a float32 or float64 value of rank dims (a Gorgonia
// scalar, or a rank-0 tensor, when dims is 0) and returns it with views
// made contiguous.
func checkValue(op fmt.Stringer, v gorgonia.Value, name string, dims int) (gorgonia.Value, error) {
	if d, ok := v.(*tensor.Dense); v == nil || ok && d == nil {
		return nil, fmt.Errorf("%v: %s has no value", op, name)
	}
	switch v.(type) {
	case *gorgonia.F64, *gorgonia.F32, *tensor.Dense:
	default:
		return nil, fmt.Errorf("%v: %s is a %T, want a dense tensor or a float scalar", op, name, v)
	}
	if dt := v.Dtype(); dt != tensor.Float64 && dt != tensor.Float32 {
		return nil, fmt.Errorf("%v: %s (shape %v) has dtype %v, want float32 or float64", op, name, v.Shape(), dt)
	}
	if v.Shape().Dims() != dims {
		return nil, fmt.Errorf("%v: %s has shape %v, want rank %d", op, name, v.Shape(), dims)
	}
	if d, ok := v.(*tensor.Dense); ok && d.IsMaterializable() {
		return d.Materialize(), nil
	}
	return v, nil
}

// dataOf returns the elements of a value accepted by checkValue, of dtype T:
// the backing slice of a tensor, or a one-element copy of a scalar.
func dataOf[T graph.Float](v gorgonia.Value) []T {
	switch v := v.(type) {
	case *gorgonia.F64:
		return []T{T(*v)}
	case *gorgonia.F32:
		return []T{T(*v)}
	case *tensor.Dense:
		if v.IsScalar() {
			return []T{v.ScalarValue().(T)}
		}
		if graph.Empty(v.Shape()) {
			return nil // Data panics on a tensor with no elements
		}
		return v.Data().([]T)
	}
	return nil
}

// output returns prealloc when it is a dense tensor of the wanted shape and
// dtype whose memory is none of the inputs', and a new tensor otherwise.
func output[T graph.Float](prealloc gorgonia.Value, shape tensor.Shape, dt tensor.Dtype, inputs ...[]T) *tensor.Dense {
	if p, ok := prealloc.(*tensor.Dense); ok && p.Dtype() == dt && slices.Equal(p.Shape(), shape) && !p.IsMaterializable() && !graph.Empty(shape) {
		if data, ok := p.Data().([]T); ok && len(data) == shape.TotalSize() && !aliases(data, inputs) {
			return p
		}
	}
	return tensor.New(tensor.WithShape(shape.Clone()...), tensor.Of(dt))
}

func aliases[T any](a []T, others [][]T) bool {
	for _, b := range others {
		if len(a) > 0 && len(b) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b) {
			return true
		}
	}
	return false
}

// scalarValue wraps a reduced scalar as Gorgonia's scalar value of its type.
func scalarValue[T graph.Float](v T) gorgonia.Value {
	if f, ok := any(v).(float32); ok {
		return gorgonia.NewF32(f)
	}
	return gorgonia.NewF64(float64(v))
}

var (
	_ gorgonia.Op              = fwdOp{}
	_ gorgonia.SDOp            = fwdOp{}
	_ gorgonia.ADOp            = fwdOp{}
	_ gorgonia.UsePreallocDoer = fwdOp{}
	_ gorgonia.Op              = bwdOp{}
	_ gorgonia.UsePreallocDoer = bwdOp{}
)
