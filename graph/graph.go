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
func NewTensor[T Float](shape []int, data []T) *tensor.Dense {
	n := 1
	for _, s := range shape {
		n *= s
	}
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
	n := 1
	for _, s := range shape {
		n *= s
	}
	data := make([]T, n)
	for i := range data {
		data[i] = T(rng.NormFloat64())
	}
	return NewTensor(shape, data)
}

// Input adds to g a named input node of t's dtype and shape, bound to t.
// A rank-0 tensor gives a scalar node holding a copy of its value.
func Input(g *gorgonia.ExprGraph, name string, t *tensor.Dense) *gorgonia.Node {
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

// Values returns a copy of n's value as a flat row-major slice. It fails when
// n has no value yet or its element type is not T.
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
		if x.IsScalar() {
			return []T{x.ScalarValue().(T)}, nil
		}
		if x.IsMaterializable() {
			x = x.Materialize().(*tensor.Dense)
		}
		src := x.Data().([]T)
		return append([]T(nil), src...), nil
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

// Forward runs every node of g once on a fresh TapeMachine.
func Forward(g *gorgonia.ExprGraph) error {
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		return fmt.Errorf("graph.Forward: %w", err)
	}
	return nil
}

// ForwardBackward adds the symbolic gradient of the scalar loss with respect
// to wrt (gorgonia.Grad), then runs the graph once on a TapeMachine with the
// gradients of wrt bound, so that Grads(w) reads ∂loss/∂w afterwards.
func ForwardBackward(loss *gorgonia.Node, wrt ...*gorgonia.Node) error {
	if loss == nil {
		return fmt.Errorf("graph.ForwardBackward: nil loss node")
	}
	if !loss.IsScalar() {
		return fmt.Errorf("graph.ForwardBackward: loss %s must be a scalar, has shape %v", loss.Name(), loss.Shape())
	}
	if _, err := gorgonia.Grad(loss, wrt...); err != nil {
		return fmt.Errorf("graph.ForwardBackward: building the gradient of %s: %w", loss.Name(), err)
	}
	m := gorgonia.NewTapeMachine(loss.Graph(), gorgonia.BindDualValues(wrt...))
	defer m.Close()
	if err := m.RunAll(); err != nil {
		return fmt.Errorf("graph.ForwardBackward: %w", err)
	}
	return nil
}
