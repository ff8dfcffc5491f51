package graph

import (
	"fmt"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The shapes with a zero-length dimension that the issue names.
var emptyShapes = [][]int{{2, 0}, {0, 3}, {0}, {3, 0, 2}}

func TestEmpty(t *testing.T) {
	for _, c := range []struct {
		shape tensor.Shape
		want  bool
	}{
		{tensor.Shape{2, 0}, true}, {tensor.Shape{0}, true}, {tensor.Shape{3, 0, 2}, true},
		{tensor.ScalarShape(), false}, {tensor.Shape{1}, false}, {tensor.Shape{2, 3}, false},
	} {
		if got := Empty(c.shape); got != c.want {
			t.Errorf("Empty(%v) = %v, want %v", c.shape, got, c.want)
		}
	}
}

// TestEmptyTensors: the helpers that touch values give the natural result
// on a tensor with no elements (an empty slice, nothing to add) or a clear
// error, where they used to panic in tensor.Dense.Data.
func TestEmptyTensors(t *testing.T) {
	for _, shape := range emptyShapes {
		name := fmt.Sprint(tensor.Shape(shape))
		t.Run("Values"+name, func(t *testing.T) {
			g := gorgonia.NewGraph()
			x := Input(g, "x", NewTensor(shape, []float32{}))
			var v []float32
			if err := noPanic(func() (err error) { v, err = Values[float32](x); return err }); err != nil {
				t.Fatal(err)
			}
			if v == nil || len(v) != 0 {
				t.Errorf("Values = %#v, want an empty, non-nil slice", v)
			}
		})
		t.Run("AddInto"+name, func(t *testing.T) {
			src := NewTensor(shape, []float64{})
			if err := noPanic(func() error { return AddInto(NewTensor(shape, []float64{}), src, 0) }); err != nil {
				t.Errorf("empty into empty: %v", err)
			}
			dst := NewTensor([]int{3}, []float64{1, 2, 3})
			if err := noPanic(func() error { return AddInto(dst, src, 3) }); err != nil {
				t.Errorf("empty into the end of [1 2 3]: %v", err)
			}
			if d := dst.Data().([]float64); d[0] != 1 || d[1] != 2 || d[2] != 3 {
				t.Errorf("adding nothing changed dst to %v", d)
			}
		})
		t.Run("CheckGradient"+name, func(t *testing.T) {
			id := func(g *gorgonia.ExprGraph, in []*gorgonia.Node) (*gorgonia.Node, error) { return in[0], nil }
			err := noPanic(func() error {
				_, err := CheckGradient(id, []*tensor.Dense{NewTensor(shape, []float64{})}, CheckOptions{})
				return err
			})
			wantError(t, err, "input 0 has shape "+name, "no elements")
		})
	}
}

// TestAddIntoScalars: a rank-0 tensor holds one element, as src and as dst.
func TestAddIntoScalars(t *testing.T) {
	dst := NewTensor([]int{3}, []float64{1, 2, 3})
	if err := noPanic(func() error { return AddInto(dst, NewTensor(nil, []float64{10}), 2) }); err != nil {
		t.Fatal(err)
	}
	if d := dst.Data().([]float64); d[0] != 1 || d[1] != 2 || d[2] != 13 {
		t.Errorf("adding scalar 10 at 2 gave %v, want [1 2 13]", d)
	}
	s := NewTensor(nil, []float32{1.5})
	if err := noPanic(func() error { return AddInto(s, NewTensor([]int{1}, []float32{2}), 0) }); err != nil {
		t.Fatal(err)
	}
	if v := s.ScalarValue().(float32); v != 3.5 {
		t.Errorf("adding [2] into scalar 1.5 gave %v, want 3.5", v)
	}
	wantError(t, noPanic(func() error { return AddInto(s, NewTensor([]int{1}, []float32{2}), 1) }), "cannot add float32(1) into float32() at 1")
}

// TestEmptyMachines: the helpers that run a TapeMachine refuse a graph with
// a node that has no elements, naming it, instead of letting Gorgonia panic
// in the machine's goroutine (which ends the process). It runs in a child
// process (RunChild), so that such a regression fails the test rather than
// killing the test binary.
func TestEmptyMachines(t *testing.T) {
	if !IsChild(t.Name()) {
		if out, err := RunChild(t.Name()); err != nil {
			t.Fatalf("child process: %v\n%s", err, out)
		}
		return
	}
	for _, shape := range emptyShapes {
		name := fmt.Sprint(tensor.Shape(shape))
		// x (empty) → tanh → sum: Gorgonia's tanh panics on no elements.
		build := func() (g *gorgonia.ExprGraph, x, loss *gorgonia.Node) {
			g = gorgonia.NewGraph()
			x = Input(g, "x", NewTensor(shape, []float64{}))
			th, err := gorgonia.Tanh(x)
			if err != nil {
				t.Fatal(err)
			}
			if loss, err = gorgonia.Sum(th); err != nil {
				t.Fatal(err)
			}
			return g, x, loss
		}
		t.Run("Forward"+name, func(t *testing.T) {
			g, _, _ := build()
			wantError(t, noPanic(func() error { return Forward(g) }), "graph.Forward", "node x has shape "+name, "no elements")
		})
		t.Run("ForwardBackward"+name, func(t *testing.T) {
			_, x, loss := build()
			wantError(t, noPanic(func() error { return ForwardBackward(loss, x) }), "graph.ForwardBackward", "shape "+name, "no elements")
		})
		t.Run("CheckGradient/empty output"+name, func(t *testing.T) {
			err := noPanic(func() error {
				_, err := CheckGradient(func(g *gorgonia.ExprGraph, _ []*gorgonia.Node) (*gorgonia.Node, error) {
					return gorgonia.Tanh(Input(g, "e", NewTensor(shape, []float64{})))
				}, []*tensor.Dense{NewTensor([]int{2}, []float64{1, 2})}, CheckOptions{})
				return err
			})
			wantError(t, err, "graph.CheckGradient", "shape "+name, "no elements")
		})
		t.Run("CheckGradient/empty intermediate"+name, func(t *testing.T) {
			err := noPanic(func() error {
				_, err := CheckGradient(func(g *gorgonia.ExprGraph, in []*gorgonia.Node) (*gorgonia.Node, error) {
					th, err := gorgonia.Tanh(Input(g, "e", NewTensor(shape, []float64{})))
					if err != nil {
						return nil, err
					}
					s, err := gorgonia.Sum(th)
					if err != nil {
						return nil, err
					}
					return gorgonia.Mul(in[0], s)
				}, []*tensor.Dense{NewTensor([]int{2}, []float64{1, 2})}, CheckOptions{})
				return err
			})
			wantError(t, err, "graph.CheckGradient", "node e has shape "+name, "no elements")
		})
	}
}
