package graph

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file holds the pieces that every custom Gorgonia op of the project
// needs, so that ops/softmax, ops/attention and nn write them once.

// Pure gives an op, embedded in it, the answers of an op that computes a
// new value from its inputs: the result is not a pointer into an input
// (ReturnsPtr false), no external library is called (CallsExtern false),
// and no input is overwritten (OverwritesInput −1).
type Pure struct{}

func (Pure) ReturnsPtr() bool     { return false }
func (Pure) CallsExtern() bool    { return false }
func (Pure) OverwritesInput() int { return -1 }

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

// AddGradInto is the DoDiff (LispMachine) of a one-input op whose input
// gradient is a function of its output's gradient alone:
//
//	∂input[off+i] += grad(∂output)[i]
//
// grad nil means the output's gradient itself. op names the op in errors.
func AddGradInto(op fmt.Stringer, input, output *gorgonia.Node, off int, grad func(gorgonia.Value) (gorgonia.Value, error)) error {
	gout, err := output.Grad()
	if err != nil {
		return fmt.Errorf("%v: output has no gradient: %w", op, err)
	}
	dst, err := input.Grad()
	if err != nil {
		return fmt.Errorf("%v: input has no gradient slot: %w", op, err)
	}
	src := gout
	if grad != nil {
		if src, err = grad(gout); err != nil {
			return err
		}
	}
	return AddInto(dst, src, off)
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
