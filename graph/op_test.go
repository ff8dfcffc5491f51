package graph

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestAddInto(t *testing.T) {
	dst := NewTensor([]int{2, 3}, []float64{1, 2, 3, 4, 5, 6})
	src := NewTensor([]int{2}, []float64{10, 20})
	if err := AddInto(dst, src, 3); err != nil {
		t.Fatal(err)
	}
	want := []float64{1, 2, 3, 14, 25, 6}
	for i, v := range dst.Data().([]float64) {
		if v != want[i] {
			t.Fatalf("dst = %v, want %v", dst.Data(), want)
		}
	}
	// A view as src: the second column of a 2×2 matrix.
	m := NewTensor([]int{2, 2}, []float32{1, 2, 3, 4})
	col, err := m.Slice(nil, tensor.S(1))
	if err != nil {
		t.Fatal(err)
	}
	d32 := NewTensor([]int{2}, []float32{0, 0})
	if err := AddInto(d32, col, 0); err != nil {
		t.Fatal(err)
	}
	if got := d32.Data().([]float32); got[0] != 2 || got[1] != 4 {
		t.Fatalf("adding a column view gave %v, want [2 4]", got)
	}
}

// cubeDef is a test op made with NewOp: y = c·x∘x∘x (any shape, float64),
// with the gradient dx = 3c·x∘x∘dy by an op of its own (cubeGradDef).
type cubeDef struct{ c float64 }

func (d cubeDef) String() string { return fmt.Sprintf("cube{c=%v}", d.c) }
func (d cubeDef) Arity() int     { return 1 }
func (d cubeDef) Type() hm.Type  { return hm.NewFnType(TensorType(2), TensorType(2)) }
func (d cubeDef) Shape(in []tensor.Shape) (tensor.Shape, error) {
	return in[0].Clone(), nil
}
func (d cubeDef) Forward(out *tensor.Dense, in []*tensor.Dense) error {
	y, x := out.Float64s(), in[0].Float64s()
	for i, v := range x {
		y[i] = d.c * v * v * v
	}
	return nil
}
func (d cubeDef) InputNames() []string { return []string{"x"} }
func (d cubeDef) Grad(in []*Expr, out, dout *Expr) []*Expr {
	return []*Expr{Apply(NewOp(cubeGradDef(d)), in[0], dout)}
}

// cubeGradDef is (x, dy) → 3c·x∘x∘dy; it has no gradient of its own.
type cubeGradDef cubeDef

func (d cubeGradDef) String() string { return fmt.Sprintf("cubeGrad{c=%v}", d.c) }
func (d cubeGradDef) Arity() int     { return 2 }
func (d cubeGradDef) Type() hm.Type {
	return hm.NewFnType(TensorType(2), TensorType(2), TensorType(2))
}
func (d cubeGradDef) Shape(in []tensor.Shape) (tensor.Shape, error) {
	if !in[0].Eq(in[1]) {
		return nil, fmt.Errorf("%v: x %v and dy %v differ", d, in[0], in[1])
	}
	return in[0].Clone(), nil
}
func (d cubeGradDef) Forward(out *tensor.Dense, in []*tensor.Dense) error {
	dx, x, dy := out.Float64s(), in[0].Float64s(), in[1].Float64s()
	for i, v := range x {
		dx[i] = 3 * d.c * v * v * dy[i]
	}
	return nil
}

// TestNewOp runs an op made with NewOp through what a machine calls: Do,
// DoInto into a dirty buffer, the gradient by central differences on the
// TapeMachine (SymDiff) and on the LispMachine (DoDiff), against the naive
// formulas, and checks that its hash and String follow its parameter.
func TestNewOp(t *testing.T) {
	x := []float64{0.5, -1, 2, 0.25, -0.75, 1.5}
	xt := NewTensor([]int{2, 3}, x)
	for _, c := range []float64{1, -2.5} {
		op := NewOp(cubeDef{c})
		t.Run(op.String(), func(t *testing.T) {
			want := make([]float64, len(x))
			for i, v := range x {
				want[i] = c * v * v * v
			}
			y, err := op.Do(xt)
			if err != nil {
				t.Fatal(err)
			}
			dirty := NewTensor([]int{2, 3}, []float64{9, 9, 9, 9, 9, 9})
			if err := op.DoInto(dirty, xt); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if g := y.Data().([]float64)[i]; math.Abs(g-want[i]) > 1e-15 {
					t.Errorf("Do: y[%d] = %v, want %v", i, g, want[i])
				}
				if g := dirty.Data().([]float64)[i]; math.Abs(g-want[i]) > 1e-15 {
					t.Errorf("DoInto: y[%d] = %v, want %v", i, g, want[i])
				}
			}
			if d := op.DiffWRT(1); !d[0] {
				t.Errorf("DiffWRT = %v, want [true]", d)
			}
			if d := NewOp(cubeGradDef{c}).DiffWRT(2); d[0] || d[1] {
				t.Errorf("gradient op: DiffWRT = %v, want [false false]", d)
			}
			rep, err := CheckGradient(func(g *gorgonia.ExprGraph, in []*gorgonia.Node) (*gorgonia.Node, error) {
				return gorgonia.ApplyOp(op, in[0])
			}, []*tensor.Dense{xt}, CheckOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK {
				t.Errorf("TapeMachine gradient: %v", rep)
			}
			// LispMachine: DoDiff with dy = 1 gives dx = 3c·x².
			g := gorgonia.NewGraph()
			xn := Input(g, "x", NewTensor([]int{2, 3}, append([]float64(nil), x...)))
			yn, err := gorgonia.ApplyOp(op, xn)
			if err != nil {
				t.Fatal(err)
			}
			loss, err := gorgonia.Sum(yn)
			if err != nil {
				t.Fatal(err)
			}
			m := gorgonia.NewLispMachine(g)
			defer m.Close()
			if err := m.RunAll(); err != nil {
				t.Fatal(err)
			}
			_ = loss
			dx, err := Grads[float64](xn)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range x {
				if w := 3 * c * v * v; math.Abs(dx[i]-w) > 1e-12 {
					t.Errorf("LispMachine: dx[%d] = %v, want %v", i, dx[i], w)
				}
			}
		})
	}
	// Hash and String: equal parameters alike, different ones apart.
	a, b, a2 := NewOp(cubeDef{1}), NewOp(cubeDef{2}), NewOp(cubeDef{1})
	if a.Hashcode() == b.Hashcode() || a.String() == b.String() {
		t.Errorf("ops with c = 1 and c = 2: hashes %x, %x, strings %q, %q; want different", a.Hashcode(), b.Hashcode(), a, b)
	}
	if a.Hashcode() != a2.Hashcode() {
		t.Errorf("two ops with c = 1 hash to %x and %x", a.Hashcode(), a2.Hashcode())
	}
	if NewOp(cubeGradDef{1}).Hashcode() == a.Hashcode() {
		t.Errorf("an op and its gradient op (the same fields, another type) hash alike")
	}
	// Bad input names the input.
	if _, err := a.Do(gorgonia.NewI(3)); err == nil || !strings.Contains(err.Error(), "x is a *gorgonia.I") {
		t.Errorf("Do(int scalar): error %v, want one naming x and its type", err)
	}
}
