package machine_test

import (
	"math/rand"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// scalar returns the constant v in dt.
func scalar(dt tensor.Dtype, v float64) *gorgonia.Node {
	if dt == tensor.Float32 {
		return gorgonia.NewConstant(float32(v))
	}
	return gorgonia.NewConstant(v)
}

// The builders below use Gorgonia's own general-purpose ops, the kind a Gorgonia user writes
// by hand, so that the CUDA backend's kernels for them are checked against the CPU machine
// and the TapeMachine, gradients included (Gorgonia derives those from sliceIncr, transposes,
// scalar arithmetic and repeats). Some combinations fail inside Gorgonia v0.9.18's Grad (a
// vector used by a matrix-vector product and reshaped into a matrix; the outer product), so
// each input is used once.

// gorgoniaMLP: matrix × matrix and × vector, tanh, sigmoid, exp, ln, negation, addition,
// subtraction and division with scalars on either side, a concatenation and a column slice.
func gorgoniaMLP(g *gorgonia.ExprGraph, dt tensor.Dtype) (*gorgonia.Node, []*gorgonia.Node, error) {
	rng := rand.New(rand.NewSource(11))
	x := randInput(g, dt, rng, "x", 4, 6)
	w := randInput(g, dt, rng, "w", 6, 5)
	v := randInput(g, dt, rng, "v", 5)
	z := randInput(g, dt, rng, "z", 1, 5)
	m := gorgonia.Must
	h := m(gorgonia.Mul(x, w)) // [4,5]
	h1, h2 := m(gorgonia.Tanh(h)), m(gorgonia.Sigmoid(h))
	c := m(gorgonia.Concat(1, h1, h2))               // [4,10]
	s := m(gorgonia.Slice(c, nil, gorgonia.S(2, 7))) // [4,5]
	e := m(gorgonia.Exp(m(gorgonia.Neg(s))))
	l := m(gorgonia.Log(m(gorgonia.Add(e, scalar(dt, 1)))))
	d := m(gorgonia.Div(m(gorgonia.Sub(l, h1)), scalar(dt, 2)))
	mv := m(gorgonia.Mul(d, v))                                          // A × b: [4]
	o := m(gorgonia.Mul(m(gorgonia.Reshape(mv, tensor.Shape{4, 1})), z)) // [4,5]
	r := m(gorgonia.Div(scalar(dt, 1), m(gorgonia.Add(m(gorgonia.Square(o)), scalar(dt, 1)))))
	return m(gorgonia.Sum(m(gorgonia.Sub(r, m(gorgonia.Square(d)))))), []*gorgonia.Node{x, w, v, z}, nil
}

// gorgoniaBatched: a batched product of a 3-axis transpose with a reshaped concatenation of
// row slices.
func gorgoniaBatched(g *gorgonia.ExprGraph, dt tensor.Dtype) (*gorgonia.Node, []*gorgonia.Node, error) {
	rng := rand.New(rand.NewSource(12))
	u := randInput(g, dt, rng, "u", 3, 4, 2)
	p := randInput(g, dt, rng, "p", 6, 5)
	m := gorgonia.Must
	r := m(gorgonia.Concat(0, m(gorgonia.Slice(p, gorgonia.S(1, 5))), m(gorgonia.Slice(p, gorgonia.S(0, 4)))))       // [8,5]
	b := m(gorgonia.BatchedMatMul(m(gorgonia.Transpose(u, 1, 0, 2)), m(gorgonia.Reshape(r, tensor.Shape{4, 2, 5})))) // [4,3,5]
	return m(gorgonia.Sum(m(gorgonia.Tanh(b)))), []*gorgonia.Node{u, p}, nil
}
