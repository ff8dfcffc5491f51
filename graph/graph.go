// Package graph holds the small pieces that every flashgorgon package and
// test needs around a Gorgonia expression graph: tensors from slices, input
// nodes bound to values, one-call forward and backward runs, reading values
// and gradients back as flat slices, and a gradient checker (check.go) that
// works on any op, ours or a user's.
package graph

import (
	"fmt"
	"math/rand"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Float is the set of element types our ops compute in.
type Float interface{ ~float32 | ~float64 }

// dtypeOf returns the tensor dtype of T.
func dtypeOf[T Float]() tensor.Dtype {
	var z T
	switch any(z).(type) {
	case float32:
		return tensor.Float32
	default:
		return tensor.Float64
	}
}

// NewTensor returns a dense tensor of the given shape backed by data
// (row-major, not copied): element (i0, …, ik) is data[Σ i_j·stride_j].
// len(data) must equal the product of shape; a rank-0 shape holds one value.
//
// A shape with a zero-length dimension gives a tensor with no elements, which
// Gorgonia v0.9.18 can hold in a node but not run (see Empty). A negative
// dimension, or data of the wrong length, is a programming error and panics,
// as tensor.New does.
func NewTensor[T Float](shape []int, data []T) *tensor.Dense {
	n := numElements("graph.NewTensor", shape)
	if n != len(data) {
		panic(fmt.Sprintf("graph.NewTensor: shape %v holds %d elements, data has %d", shape, n, len(data)))
	}
	if len(shape) == 0 {
		return tensor.New(tensor.FromScalar(data[0]))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
}

// RandTensor returns a tensor of the given shape whose entries are drawn
// from the standard normal distribution by rng.
func RandTensor[T Float](rng *rand.Rand, shape ...int) *tensor.Dense {
	data := make([]T, numElements("graph.RandTensor", shape))
	for i := range data {
		data[i] = T(rng.NormFloat64())
	}
	return NewTensor(shape, data)
}

// numElements is the number of elements of shape; it panics, naming caller,
// on a negative dimension.
func numElements(caller string, shape []int) int {
	n := 1
	for _, s := range shape {
		if s < 0 {
			panic(fmt.Sprintf("%s: shape %v has a negative dimension", caller, shape))
		}
		n *= s
	}
	return n
}

// Empty reports whether shape has a zero-length dimension, so that a tensor
// of that shape has no elements. A scalar shape (rank 0) holds one element.
//
// Gorgonia v0.9.18 with gorgonia.org/tensor v0.9.24 cannot run such a
// tensor: tensor.Dense's Data, Uintptr and printing index element 0 of the
// backing array, and so do Gorgonia's elementwise ops, matrix product and
// the TapeMachine's gradient accumulation, all inside the goroutine the
// TapeMachine starts, where no caller can recover from the panic. The
// helpers of this package therefore refuse graphs holding such tensors
// (or read them as empty slices), and the ops of this project refuse, at
// graph-build time, to produce or differentiate them.
func Empty(shape tensor.Shape) bool {
	return len(shape) > 0 && shape.TotalSize() == 0
}

// Runnable returns an error naming the first node of g whose shape has no
// elements (see Empty), and nil when there is none. caller prefixes the
// error. Forward, ForwardBackward and CheckGradient call it before running
// a machine: a panic in the TapeMachine's goroutine would end the process.
func Runnable(g *gorgonia.ExprGraph, caller string) error {
	if g == nil {
		return fmt.Errorf("%s: nil graph", caller)
	}
	for _, n := range g.AllNodes() {
		if s := n.Shape(); Empty(s) {
			return fmt.Errorf("%s: node %s has shape %v, which has no elements: Gorgonia v0.9.18 cannot run a tensor with no elements",
				caller, n.Name(), s)
		}
	}
	return nil
}

// NodeDtype returns the element type of n: its type when it is a scalar
// node, the element type of its tensor type otherwise. ok is false when n is
// nil or its type has no concrete element type (Node.Dtype panics there).
func NodeDtype(n *gorgonia.Node) (dt tensor.Dtype, ok bool) {
	if n == nil {
		return dt, false
	}
	switch t := n.Type().(type) {
	case tensor.Dtype:
		return t, true
	case gorgonia.TensorType:
		dt, ok = t.Of.(tensor.Dtype)
		return dt, ok
	}
	return dt, false
}

// Input adds to g a named input node of t's dtype and shape, bound to t.
// A rank-0 tensor gives a scalar node holding a copy of its value.
func Input(g *gorgonia.ExprGraph, name string, t *tensor.Dense) *gorgonia.Node {
	if g == nil || t == nil {
		panic(fmt.Sprintf("graph.Input: %s: nil graph or tensor", name))
	}
	if t.IsScalar() {
		var v gorgonia.Value
		switch s := t.ScalarValue().(type) {
		case float32:
			v = gorgonia.NewF32(s)
		case float64:
			v = gorgonia.NewF64(s)
		default:
			panic(fmt.Sprintf("graph.Input: scalar %s has dtype %v, want float32 or float64", name, t.Dtype()))
		}
		return gorgonia.NewScalar(g, t.Dtype(), gorgonia.WithName(name), gorgonia.WithValue(v))
	}
	return gorgonia.NewTensor(g, t.Dtype(), t.Dims(), gorgonia.WithShape(t.Shape().Clone()...),
		gorgonia.WithName(name), gorgonia.WithValue(t))
}

// Values returns a copy of n's value as a flat row-major slice (empty, not
// nil, for a tensor with no elements). It fails when n has no value yet or
// its element type is not T.
func Values[T Float](n *gorgonia.Node) ([]T, error) {
	if n == nil {
		return nil, fmt.Errorf("graph.Values: nil node")
	}
	return flatten[T](n.Value(), "value of "+n.Name())
}

// Grads returns a copy of the gradient bound to n (after ForwardBackward, or
// any machine run with n's dual value bound) as a flat row-major slice.
func Grads[T Float](n *gorgonia.Node) ([]T, error) {
	if n == nil {
		return nil, fmt.Errorf("graph.Grads: nil node")
	}
	g, err := n.Grad()
	if err != nil {
		return nil, fmt.Errorf("graph.Grads: node %s has no gradient: %w", n.Name(), err)
	}
	return flatten[T](g, "gradient of "+n.Name())
}

// flatten copies a Gorgonia value (tensor or scalar) into a new []T.
func flatten[T Float](v gorgonia.Value, what string) ([]T, error) {
	if v == nil {
		return nil, fmt.Errorf("graph: %s is not computed yet", what)
	}
	if want := dtypeOf[T](); v.Dtype() != want {
		return nil, fmt.Errorf("graph: %s has dtype %v, asked for %v", what, v.Dtype(), want)
	}
	switch x := v.(type) {
	case *tensor.Dense:
		if Empty(x.Shape()) {
			return []T{}, nil // Data and Materialize panic on no elements
		}
		return append([]T(nil), elements[T](x)...), nil
	case tensor.Tensor:
		return nil, fmt.Errorf("graph: %s is a %T, not a dense tensor", what, v)
	default:
		data := v.Data()
		if s, ok := data.(T); ok {
			return []T{s}, nil
		}
		return nil, fmt.Errorf("graph: cannot read %s of type %T", what, v)
	}
}

// Forward runs every node of g once on a fresh TapeMachine. A graph with a
// node that has no elements is refused (Runnable).
func Forward(g *gorgonia.ExprGraph) error {
	if err := Runnable(g, "graph.Forward"); err != nil {
		return err
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		return fmt.Errorf("graph.Forward: %w", err)
	}
	return nil
}

// ForwardBackward adds the symbolic gradient of the scalar loss with respect
// to wrt (gorgonia.Grad), then runs the graph once on a TapeMachine with the
// gradients of wrt bound, so that Grads(w) reads ∂loss/∂w afterwards. A
// graph with a node that has no elements, gradient nodes included, is
// refused (Runnable).
func ForwardBackward(loss *gorgonia.Node, wrt ...*gorgonia.Node) error {
	if loss == nil {
		return fmt.Errorf("graph.ForwardBackward: nil loss node")
	}
	for i, w := range wrt {
		if w == nil {
			return fmt.Errorf("graph.ForwardBackward: wrt[%d] is a nil node", i)
		}
	}
	if !loss.IsScalar() {
		return fmt.Errorf("graph.ForwardBackward: loss %s must be a scalar, has shape %v", loss.Name(), loss.Shape())
	}
	if err := Runnable(loss.Graph(), "graph.ForwardBackward"); err != nil {
		return err
	}
	if _, err := gorgonia.Grad(loss, wrt...); err != nil {
		return fmt.Errorf("graph.ForwardBackward: building the gradient of %s: %w", loss.Name(), err)
	}
	if err := Runnable(loss.Graph(), "graph.ForwardBackward"); err != nil {
		return err
	}
	m := gorgonia.NewTapeMachine(loss.Graph(), gorgonia.BindDualValues(wrt...))
	defer m.Close()
	if err := m.RunAll(); err != nil {
		return fmt.Errorf("graph.ForwardBackward: %w", err)
	}
	return nil
}
