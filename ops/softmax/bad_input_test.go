package softmax

import (
	"fmt"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
)

// TestBadInput lists each misuse of the package, at graph-build time
// (Softmax, LogSoftmax, LogSumExp) and on the ops a machine or a caller
// runs by hand (Do, UsePreallocDo, InferShape, SymDiff, DoDiff), with what
// the error must say. None may panic.
func TestBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	x := graph.Input(g, "x", graph.NewTensor([]int{2, 3}, make([]float64, 6)))
	ints := gorgonia.NewMatrix(g, tensor.Int, gorgonia.WithShape(2, 3), gorgonia.WithName("ints"))
	bools := gorgonia.NewVector(g, tensor.Bool, gorgonia.WithShape(4), gorgonia.WithName("bools"))
	scalar := gorgonia.NewScalar(g, tensor.Float64, gorgonia.WithName("s"))
	empty := graph.Input(g, "e", graph.NewTensor([]int{3, 0}, []float32{}))
	for _, c := range []struct {
		name string
		x    *gorgonia.Node
		axis int
		want []string
	}{
		{"nil node", nil, 1, []string{"x is a nil node", "axis 1"}},
		{"int dtype", ints, 1, []string{`"ints"`, "(2, 3)", "axis 1", "dtype int", "want float32 or float64"}},
		{"bool dtype", bools, 0, []string{`"bools"`, "(4)", "axis 0", "bool"}},
		{"scalar", scalar, 0, []string{`"s"`, "is a scalar", "axis 0", "rank ≥ 1"}},
		{"axis too large", x, 2, []string{"axis 2 out of range", "(2, 3)", "rank 2"}},
		{"axis too negative", x, -3, []string{"axis -3 out of range", "(2, 3)"}},
		{"no elements", empty, 0, []string{`"e"`, "(3, 0)", "axis 0", "no elements"}},
	} {
		for _, k := range kinds {
			t.Run(fmt.Sprintf("%v/%s", k, c.name), func(t *testing.T) {
				err := noPanic(t, func() error { _, err := apply1(k, c.x, c.axis); return err })
				wantError(t, err, append([]string{"softmax." + k.String()}, c.want...)...)
			})
		}
	}

	// The ops' methods on arguments a caller might pass by hand.
	f64 := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(make([]float64, 6)))
	f32 := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(make([]float32, 6)))
	i64 := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(make([]int, 6)))
	r1 := tensor.New(tensor.WithShape(3), tensor.WithBacking(make([]float64, 3)))
	r2 := tensor.New(tensor.WithShape(2), tensor.WithBacking(make([]float64, 2)))
	t32 := tensor.New(tensor.WithShape(3, 2), tensor.WithBacking(make([]float64, 6)))
	sm, lsm, lse := fwdOp{kind: kindSoftmax, axis: 1, dims: 2}, fwdOp{kind: kindLogSoftmax, axis: 1, dims: 2}, fwdOp{kind: kindLogSumExp, axis: 1, dims: 2}
	do := func(d graph.OpDef, in ...gorgonia.Value) func() error {
		return func() error { _, err := graph.NewOp(d).Do(in...); return err }
	}
	for _, c := range []struct {
		name string
		call func() error
		want []string
	}{
		{"forward/no input", do(sm), []string{"Softmax{axis=1}", "0 inputs, want 1"}},
		{"forward/two inputs", do(sm, f64, f64), []string{"2 inputs, want 1"}},
		{"forward/nil input", do(sm, nil), []string{"x has no value"}},
		{"forward/nil dense", do(sm, (*tensor.Dense)(nil)), []string{"x has no value"}},
		{"forward/int input", do(sm, i64), []string{"x (shape (2, 3)) has dtype int", "want float32 or float64"}},
		{"forward/int scalar", do(fwdOp{kind: kindSoftmax, axis: 0, dims: 1}, gorgonia.NewI(3)), []string{"x is a *gorgonia.I", "want a dense tensor"}},
		{"forward/wrong rank", do(lse, r1), []string{"LogSumExp{axis=1}", "x has shape (3), want rank 2"}},
		{"forward/scalar input", do(fwdOp{kind: kindSoftmax, axis: 0, dims: 1}, gorgonia.NewF64(1)), []string{"x has shape (), want rank 1"}},
		{"forward prealloc/wrong rank", func() error { _, err := graph.NewOp(sm).UsePreallocDo(f64, r1); return err }, []string{"want rank 2"}},
		{"backward/dtype mismatch", do(bwdOp(sm), f64, f32), []string{"SoftmaxGrad{axis=1}", "dy has shape (2, 3) and dtype float32", "want shape (2, 3) and dtype float64"}},
		{"backward/shape mismatch", do(bwdOp(lsm), f64, t32), []string{"LogSoftmaxGrad{axis=1}", "dy has shape (3, 2)", "want shape (2, 3)"}},
		{"backward/arity", do(bwdOp(sm), f64), []string{"1 inputs, want 2"}},
		{"backward/nil dy", do(bwdOp(sm), f64, nil), []string{"dy has no value"}},
		{"backward lse/arity", do(bwdOp(lse), f64, f64), []string{"LogSumExpGrad{axis=1}", "2 inputs, want 3"}},
		{"backward lse/y shape", do(bwdOp(lse), f64, r1, r2), []string{"y has shape (3)", "want shape (2)"}},
		{"backward lse/dy shape", do(bwdOp(lse), f64, r2, r1), []string{"dy has shape (3)", "want shape (2)"}},
		{"backward lse/y rank", do(bwdOp(lse), f64, f64, r2), []string{"y has shape (2, 3), want rank 1"}},
		{"InferShape/no shapes", func() error { _, err := graph.NewOp(sm).InferShape(); return err }, []string{"0 inputs, want 1"}},
		{"InferShape/wrong rank", func() error { _, err := graph.NewOp(sm).InferShape(tensor.Shape{4}); return err }, []string{"x has shape (4), want rank 2"}},
		{"backward InferShape/arity", func() error { _, err := graph.NewOp(bwdOp(lse)).InferShape(tensor.Shape{2, 3}); return err }, []string{"1 inputs, want 3"}},
		{"SymDiff/no inputs", func() error { _, err := graph.NewOp(sm).SymDiff(nil, x, x); return err }, []string{"SymDiff with 0 inputs"}},
		{"SymDiff/nil input", func() error { _, err := graph.NewOp(sm).SymDiff(gorgonia.Nodes{nil}, x, x); return err }, []string{"SymDiff with 1 inputs", "an output and its gradient"}},
		{"DoDiff/nil output", func() error { return graph.NewOp(sm).DoDiff(gorgonia.ExecutionContext{}, gorgonia.Nodes{x}, nil) }, []string{"DoDiff with 1 inputs, want 1 and an output"}},
		{"DoDiff/nil input", func() error { return graph.NewOp(sm).DoDiff(gorgonia.ExecutionContext{}, gorgonia.Nodes{nil}, x) }, []string{"DoDiff with 1 inputs"}},
		{"DoDiff/no gradients", func() error { return graph.NewOp(sm).DoDiff(gorgonia.ExecutionContext{}, gorgonia.Nodes{x}, x) }, []string{"DoDiff: gradient of the output"}},
	} {
		t.Run(c.name, func(t *testing.T) { wantError(t, noPanic(t, c.call), c.want...) })
	}
}

// wantError fails t unless err holds every one of want.
func wantError(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one mentioning %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}
