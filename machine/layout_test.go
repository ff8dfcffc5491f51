package machine

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// applyMoves is a host twin of the strided copies the CUDA backend launches for moves
// (cuda.Strided's definition, written out).
func applyMoves(moves []move, in [][]float64, n int) []float64 {
	y := make([]float64, n)
	for i := range y {
		y[i] = -1e300 // unwritten
	}
	for _, m := range moves {
		for i0 := range m.Shape[0] {
			for i1 := range m.Shape[1] {
				for i2 := range m.Shape[2] {
					for i3 := range m.Shape[3] {
						ix := [4]int{i0, i1, i2, i3}
						xo, yo := m.XOff, m.YOff
						for k := range 4 {
							xo += ix[k] * m.XStride[k]
							yo += ix[k] * m.YStride[k]
						}
						v := 0.0
						if m.Input >= 0 {
							v = in[m.Input][xo]
						}
						y[yo] = v
					}
				}
			}
		}
	}
	return y
}

// inputsOf returns the input nodes of n in order (a multi-axis Slice is a chain of one-axis
// slices: the last one's input is the one before).
func inputsOf(g *gorgonia.ExprGraph, n *gorgonia.Node) []*gorgonia.Node {
	var ins []*gorgonia.Node
	for it := g.From(n.ID()); it.Next(); {
		ins = append(ins, it.Node().(*gorgonia.Node))
	}
	return ins
}

// TestMovesOf checks the strided copies that movesOf derives for Gorgonia's data-movement ops
// against the ops themselves: on random inputs, the copies (applied by applyMoves) give what
// op.Do gives, element for element, float32 and float64.
func TestMovesOf(t *testing.T) {
	type mk func(g *gorgonia.ExprGraph, dt tensor.Dtype) *gorgonia.Node
	node := func(g *gorgonia.ExprGraph, dt tensor.Dtype, name string, s ...int) *gorgonia.Node {
		return gorgonia.NewTensor(g, dt, len(s), gorgonia.WithShape(s...), gorgonia.WithName(name))
	}
	unary := func(f func(*gorgonia.Node) (*gorgonia.Node, error), s ...int) mk {
		return func(g *gorgonia.ExprGraph, dt tensor.Dtype) *gorgonia.Node {
			x := node(g, dt, "x", s...)
			return gorgonia.Must(f(x))
		}
	}
	// sliceGrad returns the sliceIncr node of the gradient of sum(slice(x)).
	sliceGrad := func(sl []tensor.Slice, s ...int) mk {
		return func(g *gorgonia.ExprGraph, dt tensor.Dtype) *gorgonia.Node {
			x := node(g, dt, "x", s...)
			y := gorgonia.Must(gorgonia.Slice(x, sl...))
			if _, err := gorgonia.Grad(gorgonia.Must(gorgonia.Sum(y)), x); err != nil {
				t.Fatal(err)
			}
			for _, n := range g.AllNodes() {
				if n.Op() != nil && OpKind(n.Op()) == "gorgonia.sliceIncrOp" {
					return n
				}
			}
			t.Fatal("no sliceIncrOp in the gradient")
			return nil
		}
	}
	cases := []struct {
		name string
		make mk
	}{
		{"transpose 2-D", unary(func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Transpose(x) }, 5, 7)},
		{"transpose 3-D 1,0,2", unary(func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Transpose(x, 1, 0, 2) }, 3, 4, 5)},
		{"transpose 4-D 0,2,1,3", unary(func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Transpose(x, 0, 2, 1, 3) }, 2, 3, 4, 5)},
		{"transpose 4-D 3,1,0,2", unary(func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Transpose(x, 3, 1, 0, 2) }, 2, 3, 4, 5)},
		{"slice rows", unary(func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Slice(x, gorgonia.S(2, 5)) }, 7, 6)},
		{"slice columns", unary(func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Slice(x, nil, gorgonia.S(1, 4)) }, 7, 6)},
		{"slice step", unary(func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Slice(x, nil, gorgonia.S(0, 6, 2)) }, 7, 6)},
		{"slice 3-D middle", unary(func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Slice(x, nil, gorgonia.S(1, 3), nil) }, 3, 4, 5)},
		{"slice one row", unary(func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Slice(x, gorgonia.S(3)) }, 7, 6)},
		{"concat axis 0", func(g *gorgonia.ExprGraph, dt tensor.Dtype) *gorgonia.Node {
			a, b := node(g, dt, "a", 2, 5), node(g, dt, "b", 3, 5)
			return gorgonia.Must(gorgonia.Concat(0, a, b))
		}},
		{"concat axis 1 of three", func(g *gorgonia.ExprGraph, dt tensor.Dtype) *gorgonia.Node {
			a, b, c := node(g, dt, "a", 4, 2), node(g, dt, "b", 4, 3), node(g, dt, "c", 4, 1)
			return gorgonia.Must(gorgonia.Concat(1, a, b, c))
		}},
		{"concat 3-D axis 2", func(g *gorgonia.ExprGraph, dt tensor.Dtype) *gorgonia.Node {
			a, b := node(g, dt, "a", 2, 3, 4), node(g, dt, "b", 2, 3, 2)
			return gorgonia.Must(gorgonia.Concat(2, a, b))
		}},
		{"slice gradient rows", sliceGrad([]tensor.Slice{gorgonia.S(2, 5)}, 7, 6)},
		{"slice gradient columns", sliceGrad([]tensor.Slice{nil, gorgonia.S(1, 4)}, 7, 6)},
	}
	rng := rand.New(rand.NewSource(1))
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%v/%s", dt, c.name), func(t *testing.T) {
				g := gorgonia.NewGraph()
				out := c.make(g, dt)
				ins := inputsOf(g, out)
				shapes := make([]tensor.Shape, len(ins))
				for i, n := range ins {
					shapes[i] = n.Shape()
				}
				moves, ok, err := movesOf(out.Op(), dt, shapes, out.Shape())
				if err != nil || !ok {
					t.Fatalf("movesOf: ok=%v err=%v", ok, err)
				}
				args, host := make([]gorgonia.Value, len(ins)), make([][]float64, len(ins))
				for i, s := range shapes {
					v, err := newHostValue(dt, s)
					if err != nil {
						t.Fatal(err)
					}
					host[i] = make([]float64, size(s))
					for j := range host[i] {
						host[i][j] = float64(float32(rng.NormFloat64()))
						switch d := v.Data().(type) {
						case []float32:
							d[j] = float32(host[i][j])
						case []float64:
							d[j] = host[i][j]
						}
					}
					args[i] = v
				}
				res, err := out.Op().Do(args...)
				if err != nil {
					t.Fatal(err)
				}
				want, err := float64s(res, dt)
				if err != nil {
					t.Fatal(err)
				}
				got := applyMoves(moves, host, size(out.Shape()))
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("element %d: moves give %v, %v gives %v (moves %v)", i, got[i], out.Op(), want[i], moves)
					}
				}
			})
		}
	}
}

// TestMovesOfRefuses: ops that are not moves, or whose moves have no strided form, are left
// to the host.
func TestMovesOfRefuses(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 4), gorgonia.WithName("x"))
	for _, n := range []*gorgonia.Node{
		gorgonia.Must(gorgonia.Tanh(x)),   // computes
		gorgonia.Must(gorgonia.Sum(x, 1)), // sums
		gorgonia.Must(gorgonia.Square(x)), // computes
	} {
		if _, ok, err := movesOf(n.Op(), tensor.Float64, []tensor.Shape{x.Shape()}, n.Shape()); ok || err != nil {
			t.Errorf("%v: movesOf ok=%v err=%v, want not a move", n.Op(), ok, err)
		}
	}
	// Five axes of length > 1 do not fit the 4-axis copies.
	y := gorgonia.NewTensor(g, tensor.Float64, 5, gorgonia.WithShape(2, 2, 2, 2, 2), gorgonia.WithName("y"))
	tr := gorgonia.Must(gorgonia.Transpose(y, 4, 3, 2, 1, 0))
	if _, ok, _ := movesOf(tr.Op(), tensor.Float64, []tensor.Shape{y.Shape()}, tr.Shape()); ok {
		t.Errorf("a 5-axis transpose gave moves")
	}
}
