package machine

import (
	"strings"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/cuda"
)

// The CUDA backend's kernels for Gorgonia's own general-purpose ops, so that a graph a
// Gorgonia user writes (an MLP with tanh or sigmoid, a transpose, a slice, a concatenation,
// and the gradients Gorgonia derives from them) stays on the device: elementwise arithmetic
// (cuda.Unary, cuda.Binary), products (cuBLAS through cuda.Gemm) and data movement
// (cuda.Strided copies derived by movesOf).

// pointwise: Gorgonia's elementwise unary ops (tanh, exp, …) and arithmetic binary ops
// (+, −, ⊙, ÷, ^) of two same-size operands or a scalar and a tensor. Comparisons, whose
// results Gorgonia types differently, run on the host.
func (c *cudaBackend) pointwise(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	name := op.String()
	if OpKind(op) == "gorgonia.elemBinOp" {
		name, _, _ = strings.Cut(name, " ") // "+ false": the operator and retSame
	}
	f, ok := cuda.PointwiseByName(name)
	if !ok || !floats(out, in...) || len(in) != 1+btoi(f.Binary()) {
		return nil, nil
	}
	n := out.Size()
	for _, o := range in {
		if o.Size() != n && o.Size() != 1 {
			return nil, nil
		}
	}
	y, x, err := operands(out, in)
	if err != nil {
		return nil, err
	}
	if !f.Binary() {
		if x[0].Len() != n {
			return nil, nil
		}
		return func() error { return cuda.Unary(f, y, x[0]) }, nil
	}
	if x[0].Len() != n && x[1].Len() != n {
		return nil, nil // two scalars into a larger output: not an elementwise op
	}
	// Sums and products of two whole tensors (residual connections and the gradients that
	// meet at them) on nn's kernels, which move 16 bytes at a time.
	if x[0].Len() == n && x[1].Len() == n {
		switch name {
		case "+":
			return func() error { return cuda.Add(y, x[0], x[1]) }, nil
		case "⊙":
			return func() error { return cuda.Mul(y, x[0], x[1]) }, nil
		}
	}
	return func() error { return cuda.Binary(f, y, x[0], x[1]) }, nil
}

// linAlg: Gorgonia's products on cuBLAS, row-major, from the op's String (A × B, Aᵀ × B,
// A × Bᵀ, A × b, a ⊗ b, A ××× B):
//
//	matrix × matrix   C [M,N] = op(A) op(B)
//	matrix × vector   c [M]   = op(A) b           (b as a [K,1] matrix)
//	outer             C [M,N] = a bᵀ               ([M,1] × [1,N]; Gorgonia's Mul of a column
//	                                               and a row)
//	batched           C [B,M,N] = op(A_i) op(B_i)  (the last two axes; strided-batched)
//
// Dot products of vectors run on the host.
func (c *cudaBackend) linAlg(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	if len(in) != 2 || !floats(out, in...) {
		return nil, nil
	}
	s := op.String()
	a, b, o := in[0].Shape, in[1].Shape, out.Shape
	p := cuda.GemmParams{Alpha: 1}
	lhs, rhs, _ := strings.Cut(s, " ")
	p.TransA = strings.HasSuffix(lhs, "ᵀ")
	p.TransB = strings.HasSuffix(rhs, "ᵀ")
	switch {
	case strings.Contains(s, "×××"): // batched
		if len(a) != 3 || len(b) != 3 || len(o) != 3 || a[0] != o[0] || b[0] != o[0] {
			return nil, nil
		}
		p.Batch, p.M, p.N = o[0], o[1], o[2]
		p.K = pick(p.TransA, a[1], a[2])
		p.StrideA, p.StrideB, p.StrideC = a[1]*a[2], b[1]*b[2], o[1]*o[2]
	case strings.Contains(s, "× B"): // matrix × matrix
		if len(a) != 2 || len(b) != 2 || len(o) != 2 {
			return nil, nil
		}
		p.M, p.N, p.K = o[0], o[1], pick(p.TransA, a[0], a[1])
	case strings.Contains(s, "× b"): // matrix × vector
		if len(a) != 2 || len(b) != 1 || len(o) != 1 || p.TransB {
			return nil, nil
		}
		p.M, p.N, p.K = o[0], 1, b[0]
	case strings.Contains(s, "⊗"): // outer: a [M] (or [M,1]) with b [N] (or [1,N])
		if len(o) != 2 || in[0].Size() != o[0] || in[1].Size() != o[1] {
			return nil, nil
		}
		p.M, p.N, p.K, p.TransA, p.TransB = o[0], o[1], 1, false, false
	default:
		return nil, nil
	}
	y, x, err := operands(out, in)
	if err != nil {
		return nil, err
	}
	p.A, p.B, p.C = x[0], x[1], y
	return func() error { return cuda.Gemm(p) }, nil
}

// pick returns the inner dimension of a stored [r, c] operand: c, or r when transposed.
func pick(trans bool, r, c int) int {
	if trans {
		return r
	}
	return c
}

// move: Gorgonia's data-movement ops (transpose, slice, concat, sliceIncr) as the strided
// copies movesOf derives from the op itself.
func (c *cudaBackend) move(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	if !floats(out, in...) {
		return nil, nil
	}
	shapes := make([]tensor.Shape, len(in))
	for i, o := range in {
		shapes[i] = o.Shape
	}
	moves, ok, err := movesOf(op, out.Buf.Dtype(), shapes, out.Shape)
	if err != nil || !ok {
		return nil, err
	}
	y, x, err := operands(out, in)
	if err != nil {
		return nil, err
	}
	ps := make([]cuda.StridedParams, len(moves))
	for i, m := range moves {
		ps[i] = cuda.StridedParams{Shape: m.Shape, Y: y, YOff: m.YOff, YStride: m.YStride, XOff: m.XOff, XStride: m.XStride, Alpha: 1}
		if m.Input >= 0 {
			ps[i].X = x[m.Input]
		}
	}
	return func() error {
		for _, p := range ps {
			if err := cuda.Strided(p); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// sumAny: Gorgonia's sums on the device, over every axis or leading axes (sum, the column
// sums) or over trailing axes, a product with a vector of ones:
//
//	y [rows] = X [rows, d] · 1 [d]      rows: the kept leading axes, d: the summed ones
//
// Sums over other sets of axes run on the host.
func (c *cudaBackend) sumAny(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	if k, err := c.sum(op, out, in); k != nil || err != nil {
		return k, err
	}
	if len(in) != 1 || !floats(out, in...) {
		return nil, nil
	}
	xs := in[0].Shape
	axes, ok := sumAxes(op.String())
	if !ok || len(axes) >= len(xs) {
		return nil, nil
	}
	first := len(xs) - len(axes)
	for i, a := range axes { // trailing axes first..len(xs)−1 only
		if a != first+i {
			return nil, nil
		}
	}
	rows := size(xs[:first])
	d := size(in[0].Shape) / rows
	if rows != out.Size() {
		return nil, nil
	}
	y, x, err := operands(out, in)
	if err != nil {
		return nil, err
	}
	dt, _ := storage(out.Buf.Dtype())
	ones, err := c.alloc(dt, d)
	if err != nil {
		return nil, err
	}
	shape, stride := flat(d)
	if err := cuda.Strided(cuda.StridedParams{Shape: shape, Y: ones, YStride: stride, Fill: 1}); err != nil {
		return nil, err
	}
	p := cuda.GemmParams{M: rows, N: 1, K: d, Alpha: 1, A: x[0], B: ones, C: y}
	return func() error { return cuda.Gemm(p) }, nil
}
