package nn

// This file holds the plumbing shared by nn's Gorgonia ops: every op states
// its forward computation (Do) and, for each input, the op that computes that
// input's gradient from (inputs, output, upstream gradient). From that one
// table the op gets both of Gorgonia's differentiation interfaces: SymDiff
// (used by gorgonia.Grad and the TapeMachine) builds the gradient nodes, and
// DoDiff (used by the LispMachine) runs the same gradient ops on values.

import (
	"fmt"
	"hash"
	"hash/fnv"

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
	op   gorgonia.Op
	args []int
}

// kernel is what a concrete op provides; opBase turns it into a gorgonia.Op.
type kernel interface {
	name() string                                   // unique description, with every parameter
	arity() int                                     // number of inputs
	typ() hm.Type                                   // Gorgonia type signature
	shape(in []tensor.Shape) (tensor.Shape, error)  // output shape, or an error naming the shapes
	do(out *tensor.Dense, in []*tensor.Dense) error // forward computation into out (output shape, dtype of input 0, any contents: overwrite every element)
	grads() []gradSpec                              // one entry per input; a zero entry (nil op, nil args) = not differentiable
}

// opBase adapts a kernel to gorgonia.Op, gorgonia.SDOp and gorgonia.ADOp.
type opBase struct{ k kernel }

func (o opBase) Arity() int    { return o.k.arity() }
func (o opBase) Type() hm.Type { return o.k.typ() }
func (o opBase) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	shapes := make([]tensor.Shape, len(ds))
	for i, d := range ds {
		s, ok := d.(tensor.Shape)
		if !ok {
			return nil, fmt.Errorf("%s: input %d has no concrete shape (%T)", o.k.name(), i, d)
		}
		shapes[i] = s
	}
	return o.k.shape(shapes)
}
func (o opBase) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	in, shape, err := o.inputs(vs)
	if err != nil {
		return nil, err
	}
	out := newDense(in[0].Dtype(), shape...)
	if err := o.k.do(out, in); err != nil {
		return nil, err
	}
	return out, nil
}

// DoInto is Do writing into out, a contiguous tensor of the output's shape
// and dtype that shares memory with no other live value (machine.IntoDoer:
// the machine's planned buffer). Gorgonia's TapeMachine never calls it; its
// UsePreallocDo would hand the op a register that a live view may share.
func (o opBase) DoInto(out gorgonia.Value, vs ...gorgonia.Value) error {
	in, shape, err := o.inputs(vs)
	if err != nil {
		return err
	}
	d, ok := out.(*tensor.Dense)
	if !ok || d.IsMaterializable() || d.Dtype() != in[0].Dtype() || !d.Shape().Eq(shape) {
		return fmt.Errorf("%s: output %T of dtype %v and shape %v, want a contiguous %v tensor of shape %v",
			o.k.name(), out, out.Dtype(), out.Shape(), in[0].Dtype(), shape)
	}
	return o.k.do(d, in)
}

// OpKind names the kernel, for a device's registry (machine.OpKind).
func (o opBase) OpKind() string { return fmt.Sprintf("%T", o.k) }

// inputs checks the values of a call and returns them as contiguous dense
// tensors with the output's shape.
func (o opBase) inputs(vs []gorgonia.Value) ([]*tensor.Dense, tensor.Shape, error) {
	if len(vs) != o.k.arity() {
		return nil, nil, fmt.Errorf("%s: got %d inputs, want %d", o.k.name(), len(vs), o.k.arity())
	}
	in := make([]*tensor.Dense, len(vs))
	shapes := make([]tensor.Shape, len(vs))
	for i, v := range vs {
		d, ok := v.(*tensor.Dense)
		if !ok {
			return nil, nil, fmt.Errorf("%s: input %d is a %T, want *tensor.Dense", o.k.name(), i, v)
		}
		if d.IsMaterializable() {
			d = d.Materialize().(*tensor.Dense)
		}
		in[i] = d
		shapes[i] = d.Shape()
	}
	shape, err := o.k.shape(shapes)
	if err != nil {
		return nil, nil, err
	}
	return in, shape, nil
}

// run applies kernel k to in on a new output tensor.
func run(k kernel, in ...*tensor.Dense) (*tensor.Dense, error) {
	vs := make([]gorgonia.Value, len(in))
	for i, d := range in {
		vs[i] = d
	}
	v, err := opBase{k}.Do(vs...)
	if err != nil {
		return nil, err
	}
	return v.(*tensor.Dense), nil
}
func (o opBase) ReturnsPtr() bool      { return false }
func (o opBase) CallsExtern() bool     { return false }
func (o opBase) OverwritesInput() int  { return -1 }
func (o opBase) WriteHash(h hash.Hash) { fmt.Fprint(h, o.k.name()) }
func (o opBase) Hashcode() uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}
func (o opBase) String() string { return o.k.name() }

func (o opBase) DiffWRT(n int) []bool {
	specs := o.k.grads()
	out := make([]bool, n)
	for i := range out {
		out[i] = i < len(specs) && (specs[i].op != nil || specs[i].args != nil)
	}
	return out
}

// SymDiff builds, for each differentiable input, the node computing its
// gradient; the others get nil.
func (o opBase) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	specs := o.k.grads()
	out := make(gorgonia.Nodes, len(inputs))
	for i := range inputs {
		if i >= len(specs) {
			continue
		}
		s := specs[i]
		switch {
		case s.op == nil && s.args == nil:
			continue
		case s.op == nil:
			out[i] = grad
		default:
			args := make([]*gorgonia.Node, len(s.args))
			for j, a := range s.args {
				switch a {
				case argOut:
					args[j] = output
				case argGrad:
					args[j] = grad
				default:
					args[j] = inputs[a]
				}
			}
			n, err := gorgonia.ApplyOp(s.op, args...)
			if err != nil {
				return nil, fmt.Errorf("%s: building the gradient of input %d: %w", o.k.name(), i, err)
			}
			out[i] = n
		}
	}
	return out, nil
}

// DoDiff computes the same gradients as SymDiff on values and adds them to
// the inputs' gradients (the LispMachine's dual values).
func (o opBase) DoDiff(ctx gorgonia.ExecutionContext, inputs gorgonia.Nodes, output *gorgonia.Node) error {
	specs := o.k.grads()
	gout, err := output.Grad()
	if err != nil {
		return fmt.Errorf("%s: output has no gradient: %w", o.k.name(), err)
	}
	for i, in := range inputs {
		if i >= len(specs) || (specs[i].op == nil && specs[i].args == nil) {
			continue
		}
		s := specs[i]
		var g gorgonia.Value
		if s.op == nil {
			g = gout
		} else {
			vals := make([]gorgonia.Value, len(s.args))
			for j, a := range s.args {
				switch a {
				case argOut:
					vals[j] = output.Value()
				case argGrad:
					vals[j] = gout
				default:
					vals[j] = inputs[a].Value()
				}
			}
			if g, err = s.op.Do(vals...); err != nil {
				return fmt.Errorf("%s: gradient of input %d: %w", o.k.name(), i, err)
			}
		}
		dst, err := in.Grad()
		if err != nil {
			return fmt.Errorf("%s: input %d has no gradient slot: %w", o.k.name(), i, err)
		}
		if dn, gn := dst.Shape().TotalSize(), g.Shape().TotalSize(); dn != gn {
			return fmt.Errorf("%s: gradient of input %d has %d elements (shape %v), the input %d (shape %v)",
				o.k.name(), i, gn, g.Shape(), dn, dst.Shape())
		}
		if err := graph.AddInto(dst, g, 0); err != nil {
			return fmt.Errorf("%s: accumulating the gradient of input %d: %w", o.k.name(), i, err)
		}
	}
	return nil
}

// apply wraps ApplyOp for a kernel.
func apply(k kernel, children ...*gorgonia.Node) (*gorgonia.Node, error) {
	return gorgonia.ApplyOp(opBase{k}, children...)
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
