package nn

// This file adapts nn's ops to graph.NewOp, the project's one way to define a
// Gorgonia op. An nn op is a kernel: its forward computation and, for each
// input, the op that computes that input's gradient from (inputs, output,
// upstream gradient), a table that opBase turns into graph's gradient
// formula (graph.Expr): gorgonia.Grad, the TapeMachine, the LispMachine and
// the machine all run it from there.

import (
	"fmt"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
)

// float is the set of element types nn computes in.
type float interface{ ~float32 | ~float64 }

// Argument selectors for gradSpec.args: an index i < arity names input i;
// these two name the op's output and the gradient flowing into it.
const (
	argOut  = -1
	argGrad = -2
)

// gradSpec says how one input's gradient is computed: op applied to the
// selected arguments. A nil op means the gradient is the upstream gradient
// itself (the input enters the output through an identity).
type gradSpec struct {
	op   graph.OpDef
	args []int
}

// kernel is what a concrete op provides; opBase turns it into a graph.OpDef.
type kernel interface {
	name() string                                   // unique description, with every parameter
	arity() int                                     // number of inputs
	typ() hm.Type                                   // Gorgonia type signature
	shape(in []tensor.Shape) (tensor.Shape, error)  // output shape, or an error naming the shapes
	do(out *tensor.Dense, in []*tensor.Dense) error // forward computation into out (output shape, dtype of input 0, any contents: overwrite every element)
	grads() []gradSpec                              // one entry per input; a zero entry (nil op, nil args) = not differentiable
}

// opBase adapts a kernel to graph.Differentiable.
type opBase struct{ k kernel }

func (o opBase) String() string                                      { return o.k.name() }
func (o opBase) Arity() int                                          { return o.k.arity() }
func (o opBase) Type() hm.Type                                       { return o.k.typ() }
func (o opBase) Shape(in []tensor.Shape) (tensor.Shape, error)       { return o.k.shape(in) }
func (o opBase) Forward(out *tensor.Dense, in []*tensor.Dense) error { return o.k.do(out, in) }

// OpKind names the kernel, for a device's registry (machine.OpKind).
func (o opBase) OpKind() string { return fmt.Sprintf("%T", o.k) }

// Grad is the kernel's table as graph's formula.
func (o opBase) Grad(in []*graph.Expr, out, dout *graph.Expr) []*graph.Expr {
	specs := o.k.grads()
	grads := make([]*graph.Expr, len(in))
	for i := range grads {
		if i >= len(specs) {
			continue
		}
		s := specs[i]
		switch {
		case s.op == nil && s.args == nil: // not differentiable
		case s.op == nil:
			grads[i] = dout
		default:
			args := make([]*graph.Expr, len(s.args))
			for j, a := range s.args {
				switch a {
				case argOut:
					args[j] = out
				case argGrad:
					args[j] = dout
				default:
					args[j] = in[a]
				}
			}
			grads[i] = graph.Apply(graph.NewOp(s.op), args...)
		}
	}
	return grads
}

// run applies kernel k to in on a new output tensor.
func run(k kernel, in ...*tensor.Dense) (*tensor.Dense, error) {
	vs := make([]gorgonia.Value, len(in))
	for i, d := range in {
		vs[i] = d
	}
	v, err := graph.NewOp(opBase{k}).Do(vs...)
	if err != nil {
		return nil, err
	}
	return v.(*tensor.Dense), nil
}

// apply wraps ApplyOp for a kernel.
func apply(k kernel, children ...*gorgonia.Node) (*gorgonia.Node, error) {
	return gorgonia.ApplyOp(graph.NewOp(opBase{k}), children...)
}

// newDense allocates a zeroed tensor of dtype dt and the given shape.
func newDense(dt tensor.Dtype, shape ...int) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape...), tensor.Of(dt))
}

// floats returns the backing slice of t as []T (t must have dtype T).
func floats[T float](t *tensor.Dense) []T { return t.Data().([]T) }

// isFloat reports whether dt is one of the dtypes nn computes in.
func isFloat(dt tensor.Dtype) bool { return dt == tensor.Float32 || dt == tensor.Float64 }

// checkFloat returns an error naming what when dt is not float32/float64.
func checkFloat(what string, dt tensor.Dtype) error {
	if !isFloat(dt) {
		return fmt.Errorf("%s: dtype %v is not supported (want float32 or float64)", what, dt)
	}
	return nil
}

// sameDtype fails when the tensors do not share one float dtype.
func sameDtype(what string, ts ...*tensor.Dense) error {
	for i, t := range ts {
		if err := checkFloat(what, t.Dtype()); err != nil {
			return err
		}
		if t.Dtype() != ts[0].Dtype() {
			return fmt.Errorf("%s: input %d has dtype %v, input 0 has %v", what, i, t.Dtype(), ts[0].Dtype())
		}
	}
	return nil
}

// toF64 copies a float tensor's values into a new []float64.
func toF64(t *tensor.Dense) []float64 {
	switch d := t.Data().(type) {
	case []float32:
		out := make([]float64, len(d))
		for i, v := range d {
			out[i] = float64(v)
		}
		return out
	case []float64:
		return append([]float64(nil), d...)
	}
	return nil
}

// fromF64 stores vs into a float tensor (rounding for float32).
func fromF64(t *tensor.Dense, vs []float64) {
	switch d := t.Data().(type) {
	case []float32:
		for i := range d {
			d[i] = float32(vs[i])
		}
	case []float64:
		copy(d, vs)
	}
}
