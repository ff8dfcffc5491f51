package softmax

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
)

// Shapes with a zero-length dimension: those of the issue and a few more.
var emptyShapes = [][]int{{2, 0}, {0, 3}, {0}, {3, 0, 2}, {0, 0}, {1, 0, 1, 4}}

// emptyWant is what k along axis (≥ 0) gives for an x of shape with no
// elements, by definition: the output shape, and whether the output has
// elements, which is only log-sum-exp over an empty axis with Outer·Inner
// > 0; those are log Σ_∅ = log 0 = −Inf.
func emptyWant(k kind, shape []int, axis int) (out []int, rows bool) {
	out = outShape(k, shape, axis)
	return out, k == kindLogSumExp && size(out) > 0
}

func emptyValue(dt tensor.Dtype, shape []int) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape...), tensor.Of(dt))
}

// checkEmptyResult checks that v has shape out and, when rows, holds −Inf
// in every entry.
func checkEmptyResult(v gorgonia.Value, dt tensor.Dtype, out []int, rows bool) error {
	if v == nil {
		return fmt.Errorf("nil value")
	}
	if v.Dtype() != dt {
		return fmt.Errorf("dtype %v, want %v", v.Dtype(), dt)
	}
	if !slices.Equal(v.Shape(), out) && !(len(out) == 0 && v.Shape().IsScalar()) {
		return fmt.Errorf("shape %v, want %v", v.Shape(), tensor.Shape(out))
	}
	if !rows {
		return nil
	}
	var got []float64
	if dt == tensor.Float32 {
		got = widen(dataOf[float32](v))
	} else {
		got = dataOf[float64](v)
	}
	if len(got) != size(out) {
		return fmt.Errorf("%d values, want %d", len(got), size(out))
	}
	for i, g := range got {
		if !math.IsInf(g, -1) {
			return fmt.Errorf("[%d] = %v, want −Inf (log of an empty sum)", i, g)
		}
	}
	return nil
}

// TestEmptyDo runs the forward and backward ops' Do on values with no
// elements along every axis: they give the natural results (package doc,
// "Zero-length dimensions"), where they used to panic in dataOf.
func TestEmptyDo(t *testing.T) {
	for _, shape := range emptyShapes {
		for axis := range shape {
			for _, k := range kinds {
				for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
					t.Run(fmt.Sprintf("%v%v/axis%d/%v", k, shape, axis, dt), func(t *testing.T) {
						out, rows := emptyWant(k, shape, axis)
						def := fwdOp{kind: k, axis: axis, dims: len(shape)}
						op := graph.NewOp(def)
						x := emptyValue(dt, shape)
						var y gorgonia.Value
						err := noPanic(t, func() (err error) { y, err = op.Do(x); return err })
						if err != nil {
							t.Fatalf("forward: %v", err)
						}
						if err := checkEmptyResult(y, dt, out, rows); err != nil {
							t.Errorf("forward: %v", err)
						}
						// A TapeMachine passes the previous output back in.
						var y2 gorgonia.Value
						err = noPanic(t, func() (err error) { y2, err = op.UsePreallocDo(y, x); return err })
						if err != nil {
							t.Fatalf("forward into prealloc: %v", err)
						}
						if err := checkEmptyResult(y2, dt, out, rows); err != nil {
							t.Errorf("forward into prealloc: %v", err)
						}
						// Backward: dy of the output's shape (ones where it has
						// elements); dx has x's shape and no elements.
						var dy gorgonia.Value = emptyValue(dt, out)
						switch {
						case len(out) == 0 && dt == tensor.Float32:
							dy = gorgonia.NewF32(1)
						case len(out) == 0:
							dy = gorgonia.NewF64(1)
						case size(out) > 0:
							dy = tensor.New(tensor.WithShape(out...), tensor.Of(dt), tensor.WithBacking(onesOf(dt, size(out))))
						}
						args := []gorgonia.Value{y, dy}
						if k == kindLogSumExp {
							args = []gorgonia.Value{x, y, dy}
						}
						var dx gorgonia.Value
						err = noPanic(t, func() (err error) { dx, err = graph.NewOp(bwdOp(def)).Do(args...); return err })
						if err != nil {
							t.Fatalf("backward: %v", err)
						}
						if err := checkEmptyResult(dx, dt, shape, false); err != nil {
							t.Errorf("backward: %v", err)
						}
					})
				}
			}
		}
	}
}

func onesOf(dt tensor.Dtype, n int) any {
	if dt == tensor.Float32 {
		d := make([]float32, n)
		for i := range d {
			d[i] = 1
		}
		return d
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = 1
	}
	return d
}

// TestEmptyBuild builds each op on an input node with no elements along
// every axis, negative ones too. Where the result would have no elements
// the constructor must refuse at graph-build time, naming the shape and the
// axis (Gorgonia v0.9.18 cannot run it); log-sum-exp over an empty axis
// with rows left is built, and gorgonia.Grad must refuse to differentiate
// it (the TapeMachine would panic adding x's empty gradient).
func TestEmptyBuild(t *testing.T) {
	for _, shape := range emptyShapes {
		for axis := -len(shape); axis < len(shape); axis++ {
			for _, k := range kinds {
				a := (axis + len(shape)) % len(shape)
				t.Run(fmt.Sprintf("%v%v/axis%d", k, shape, axis), func(t *testing.T) {
					g := gorgonia.NewGraph()
					x := graph.Input(g, "x", graph.NewTensor(shape, []float64{}))
					var y *gorgonia.Node
					err := noPanic(t, func() (err error) { y, err = apply1(k, x, axis); return err })
					out, rows := emptyWant(k, shape, a)
					shapeText := fmt.Sprint(tensor.Shape(shape))
					if !rows {
						if err == nil {
							t.Fatalf("built a node of shape %v; want an error", y.Shape())
						}
						for _, w := range []string{k.String(), shapeText, fmt.Sprintf("axis %d", axis), "no elements"} {
							if !strings.Contains(err.Error(), w) {
								t.Errorf("error %q does not mention %q", err, w)
							}
						}
						return
					}
					if err != nil {
						t.Fatalf("log-sum-exp over an empty axis with rows left: %v", err)
					}
					if !slices.Equal(y.Shape(), out) && !(len(out) == 0 && y.IsScalar()) {
						t.Errorf("shape %v, want %v", y.Shape(), tensor.Shape(out))
					}
					loss := y
					if !y.IsScalar() {
						if loss, err = gorgonia.Sum(y); err != nil {
							t.Fatal(err)
						}
					}
					_, err = gorgonia.Grad(loss, x)
					if err == nil {
						t.Fatalf("gorgonia.Grad differentiated with respect to an x of shape %v", shapeText)
					}
					for _, w := range []string{shapeText, "no elements"} {
						if !strings.Contains(err.Error(), w) {
							t.Errorf("Grad error %q does not mention %q", err, w)
						}
					}
				})
			}
		}
	}
}

// TestEmptyMachines runs, on both machines, every op on every input with
// no elements that the constructors accept: forward on the TapeMachine,
// forward and backward on the LispMachine, in both precisions. It runs in a
// child process (graph.RunChild): a panic in the TapeMachine's goroutine
// ends the process, and must fail this test rather than kill the binary.
func TestEmptyMachines(t *testing.T) {
	if !graph.IsChild(t.Name()) {
		if out, err := graph.RunChild(t.Name()); err != nil {
			t.Fatalf("child process: %v\n%s", err, out)
		}
		return
	}
	ran := 0
	for _, shape := range emptyShapes {
		for axis := range shape {
			for _, k := range kinds {
				t.Run(fmt.Sprintf("%v%v/axis%d", k, shape, axis), func(t *testing.T) {
					out, _ := emptyWant(k, shape, axis)
					for _, machine := range []string{"tape", "lisp"} {
						g := gorgonia.NewGraph()
						x := graph.Input(g, "x", graph.NewTensor(shape, []float32{}))
						y, err := apply1(k, x, axis)
						if err != nil {
							return // refused at build time: TestEmptyBuild checks the error
						}
						ran++
						var m gorgonia.VM
						if machine == "tape" {
							m = gorgonia.NewTapeMachine(g)
						} else {
							loss := y
							if !y.IsScalar() {
								if loss, err = gorgonia.Sum(y); err != nil {
									t.Fatal(err)
								}
							}
							_ = loss
							m = gorgonia.NewLispMachine(g)
						}
						if err := m.RunAll(); err != nil {
							t.Fatalf("%s machine: %v", machine, err)
						}
						m.Close()
						if err := checkEmptyResult(y.Value(), tensor.Float32, out, true); err != nil {
							t.Errorf("%s machine: %v", machine, err)
						}
						got, err := graph.Values[float32](y)
						if err != nil || len(got) != max(1, size(out)) {
							t.Errorf("%s machine: Values = %v, %v; want %d values", machine, got, err, max(1, size(out)))
						}
						if machine == "lisp" {
							dx, err := graph.Grads[float32](x)
							if err != nil || len(dx) != 0 {
								t.Errorf("lisp machine: gradient of x = %v, %v; want no elements", dx, err)
							}
						}
					}
				})
			}
		}
	}
	if ran == 0 {
		t.Errorf("no case ran on a machine")
	}
}
