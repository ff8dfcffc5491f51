package graph

import (
	"fmt"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// panicked is the error that noPanic returns for a call that panicked.
type panicked struct{ v any }

func (p panicked) Error() string { return fmt.Sprintf("panic: %v", p.v) }

// noPanic runs f and returns its error, or a panicked error if it panicked.
func noPanic(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicked{r}
		}
	}()
	return f()
}

// wantError fails t unless err is an error, not a panic, whose message
// holds every one of want.
func wantError(t *testing.T, err error, want ...string) {
	t.Helper()
	if _, ok := err.(panicked); ok {
		t.Fatalf("%v; want an error", err)
	}
	if err == nil {
		t.Fatalf("no error; want one mentioning %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

// TestBadInput lists each misuse of the package's functions and what the
// error must say. None may panic.
func TestBadInput(t *testing.T) {
	id := func(g *gorgonia.ExprGraph, in []*gorgonia.Node) (*gorgonia.Node, error) { return in[0], nil }
	f32 := NewTensor([]int{2}, []float32{1, 2})
	f64 := func() *tensor.Dense { return NewTensor([]int{2}, []float64{1, 2}) }
	empty := NewTensor([]int{2, 0}, []float64{})
	ints := tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{1, 2}))
	m := NewTensor([]int{2, 2}, []float64{1, 2, 3, 4})
	col, err := m.Slice(nil, tensor.S(1))
	if err != nil {
		t.Fatal(err)
	}
	view := col.(*tensor.Dense)

	g := gorgonia.NewGraph()
	x := Input(g, "x", f64())
	noValue := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("unbound"))
	scalarLoss, err := gorgonia.Sum(x)
	if err != nil {
		t.Fatal(err)
	}
	check := func(build Builder, inputs []*tensor.Dense, opts CheckOptions) func() error {
		return func() error { _, err := CheckGradient(build, inputs, opts); return err }
	}
	for _, c := range []struct {
		name string
		call func() error
		want []string
	}{
		{"CheckGradient/nil builder", check(nil, []*tensor.Dense{f64()}, CheckOptions{}), []string{"nil builder"}},
		{"CheckGradient/nil input", check(id, []*tensor.Dense{nil}, CheckOptions{}), []string{"input 0 is nil"}},
		{"CheckGradient/float32 input", check(id, []*tensor.Dense{f32}, CheckOptions{}), []string{"input 0", "(2)", "float32", "float64"}},
		{"CheckGradient/no inputs", check(id, nil, CheckOptions{}), []string{"no input to check"}},
		{"CheckGradient/empty Wrt", check(id, []*tensor.Dense{f64()}, CheckOptions{Wrt: []int{}}), []string{"no input to check", "Wrt []"}},
		{"CheckGradient/Wrt out of range", check(id, []*tensor.Dense{f64()}, CheckOptions{Wrt: []int{3}}), []string{"Wrt names input 3 of 1"}},
		{"CheckGradient/Wrt negative", check(id, []*tensor.Dense{f64()}, CheckOptions{Wrt: []int{-1}}), []string{"Wrt names input -1 of 1"}},
		{"CheckGradient/Wrt twice", check(id, []*tensor.Dense{f64()}, CheckOptions{Wrt: []int{0, 0}}), []string{"Wrt names input 0 twice"}},
		{"CheckGradient/view input", check(id, []*tensor.Dense{view}, CheckOptions{}), []string{"input 0 is a view"}},
		{"CheckGradient/empty input", check(id, []*tensor.Dense{empty}, CheckOptions{}), []string{"input 0 has shape (2, 0)", "no elements"}},
		{"CheckGradient/builder error", check(func(*gorgonia.ExprGraph, []*gorgonia.Node) (*gorgonia.Node, error) {
			return nil, fmt.Errorf("no such op")
		}, []*tensor.Dense{f64()}, CheckOptions{}), []string{"building the expression", "no such op"}},
		{"CheckGradient/builder returns nil", check(func(*gorgonia.ExprGraph, []*gorgonia.Node) (*gorgonia.Node, error) {
			return nil, nil
		}, []*tensor.Dense{f64()}, CheckOptions{}), []string{"nil node"}},
		{"CheckGradient/float32 output", check(func(g *gorgonia.ExprGraph, _ []*gorgonia.Node) (*gorgonia.Node, error) {
			return Input(g, "f", f32), nil
		}, []*tensor.Dense{f64()}, CheckOptions{}), []string{"output f", "(2)", "float32", "want float64"}},

		{"Values/nil node", func() error { _, err := Values[float64](nil); return err }, []string{"graph.Values", "nil node"}},
		{"Values/no value", func() error { _, err := Values[float64](noValue); return err }, []string{"unbound", "not computed"}},
		{"Values/wrong dtype", func() error { _, err := Values[float32](x); return err }, []string{"value of x", "dtype float64", "asked for float32"}},
		{"Grads/nil node", func() error { _, err := Grads[float64](nil); return err }, []string{"graph.Grads", "nil node"}},
		{"Grads/no gradient", func() error { _, err := Grads[float64](noValue); return err }, []string{"unbound", "no gradient"}},

		{"Forward/nil graph", func() error { return Forward(nil) }, []string{"graph.Forward", "nil graph"}},
		{"ForwardBackward/nil loss", func() error { return ForwardBackward(nil, x) }, []string{"nil loss"}},
		{"ForwardBackward/non-scalar loss", func() error { return ForwardBackward(x, x) }, []string{"loss x", "scalar", "(2)"}},
		{"ForwardBackward/nil wrt", func() error { return ForwardBackward(scalarLoss, x, nil) }, []string{"wrt[1] is a nil node"}},

		{"AddInto/not dense", func() error { return AddInto(gorgonia.NewF64(1), f64(), 0) }, []string{"want dense tensors", "*gorgonia.F64"}},
		{"AddInto/nil", func() error { return AddInto(nil, f64(), 0) }, []string{"want dense tensors", "<nil>"}},
		{"AddInto/nil dense", func() error { return AddInto((*tensor.Dense)(nil), f64(), 0) }, []string{"want dense tensors"}},
		{"AddInto/too long", func() error { return AddInto(f64(), NewTensor([]int{3}, []float64{1, 2, 3}), 0) },
			[]string{"cannot add float64(3) into float64(2) at 0"}},
		{"AddInto/past the end", func() error { return AddInto(f64(), NewTensor([]int{1}, []float64{1}), 2) },
			[]string{"cannot add float64(1) into float64(2) at 2"}},
		{"AddInto/negative offset", func() error { return AddInto(f64(), NewTensor([]int{1}, []float64{1}), -1) },
			[]string{"at -1"}},
		{"AddInto/dtypes", func() error { return AddInto(f64(), f32, 0) }, []string{"cannot add float32(2) into float64(2)"}},
		{"AddInto/into a view", func() error { return AddInto(view, f64(), 0) }, []string{"into a view", "(2)"}},
		{"AddInto/ints", func() error { return AddInto(ints, ints, 0) }, []string{"int", "not float32 or float64"}},
		{"AddInto/into an empty tensor", func() error { return AddInto(empty, NewTensor([]int{1}, []float64{1}), 0) },
			[]string{"cannot add float64(1) into float64(2, 0)"}},
	} {
		t.Run(c.name, func(t *testing.T) { wantError(t, noPanic(c.call), c.want...) })
	}
}

// TestConstructorPanics: NewTensor, RandTensor and Input return no error, so
// a programming error panics there, as in tensor.New, with a message that
// names the function and the shape.
func TestConstructorPanics(t *testing.T) {
	g := gorgonia.NewGraph()
	for _, c := range []struct {
		name string
		call func()
		want []string
	}{
		{"NewTensor/wrong length", func() { NewTensor([]int{2, 3}, make([]float64, 5)) }, []string{"graph.NewTensor", "[2 3]", "6 elements", "5"}},
		{"NewTensor/negative dimension", func() { NewTensor([]int{-2, -3}, make([]float64, 6)) }, []string{"graph.NewTensor", "[-2 -3]", "negative"}},
		{"NewTensor/scalar without data", func() { NewTensor(nil, []float64{}) }, []string{"graph.NewTensor", "1 elements", "0"}},
		{"RandTensor/negative dimension", func() { RandTensor[float64](nil, 2, -1) }, []string{"graph.RandTensor", "[2 -1]", "negative"}},
		{"Input/nil tensor", func() { Input(g, "x", nil) }, []string{"graph.Input", "x", "nil"}},
		{"Input/int scalar", func() { Input(g, "s", tensor.New(tensor.FromScalar(3))) }, []string{"graph.Input", "s", "int"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := noPanic(func() error { c.call(); return nil })
			p, ok := err.(panicked)
			if !ok {
				t.Fatalf("no panic")
			}
			for _, w := range c.want {
				if !strings.Contains(fmt.Sprint(p.v), w) {
					t.Errorf("panic %q does not mention %q", p.v, w)
				}
			}
		})
	}
}
