package nn

import (
	"fmt"

	"github.com/chewxy/hm"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/internal/kernels/gemm"
)

// linearOp is a linear layer with its bias as one op:
//
//	y[m, o] = Σ_i x[m, i]·w[i, o] + b[o]      x [M, In], w [In, Out], b [Out], y [M, Out]
//
// on gemm.GemmBias, which adds the bias to each strip of y as soon as the
// strip is computed: the bits of matmulOp followed by affineOp's shift, one
// pass over y less. Its gradients are those of the two: dx = g·wᵀ, dw = xᵀ·g,
// db = Σ_m g[m, :].
type linearOp struct{}

func (k linearOp) name() string { return "nnLinear" }
func (k linearOp) arity() int   { return 3 }
func (k linearOp) typ() hm.Type {
	return hm.NewFnType(graph.TensorType(2), graph.TensorType(2), graph.TensorType(1), graph.TensorType(2))
}
func (k linearOp) shape(in []tensor.Shape) (tensor.Shape, error) {
	x, w, b := in[0], in[1], in[2]
	if x.Dims() != 2 || w.Dims() != 2 || b.Dims() != 1 || x[1] != w[0] || b[0] != w[1] {
		return nil, fmt.Errorf("%s: x %v, weight %v and bias %v: want x [M, In], weight [In, Out], bias [Out]", k.name(), x, w, b)
	}
	return tensor.Shape{x[0], w[1]}, nil
}
func (k linearOp) do(out *tensor.Dense, in []*tensor.Dense) error {
	if err := sameDtype(k.name(), in...); err != nil {
		return err
	}
	x, w := in[0], in[1]
	m, kk, n := x.Shape()[0], x.Shape()[1], w.Shape()[1]
	var err error
	switch x.Dtype() {
	case tensor.Float32:
		err = gemm.GemmBias(false, false, m, n, kk, floats[float32](x), kk, floats[float32](w), n, floats[float32](in[2]), floats[float32](out), n)
	default:
		err = gemm.GemmBias(false, false, m, n, kk, floats[float64](x), kk, floats[float64](w), n, floats[float64](in[2]), floats[float64](out), n)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", k.name(), err)
	}
	return nil
}
func (k linearOp) grads() []gradSpec {
	return []gradSpec{
		{op: opBase{matmulOp{tB: true}}, args: []int{argGrad, 1}},
		{op: opBase{matmulOp{tA: true}}, args: []int{0, argGrad}},
		{op: opBase{colSumOp{dims: 2}}, args: []int{argGrad}},
	}
}
