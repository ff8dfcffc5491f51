package nn

import (
	"fmt"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/internal/kernels/gemm"
)

// matmulOp is the matrix product of two matrices, either of them transposed:
//
//	C = op(A)·op(B)    op(X) = X, or Xᵀ when the flag is set;  op(A) [m, k], op(B) [k, n]
//
// Both float32 and float64 run on internal/kernels/gemm's GemmDepth (split over
// cores, AVX-512 / AVX2 micro-kernels, one FMA chain per depth block as in BLAS:
// float32 error that of a naive loop's chain, or less). Its gradients are
// matrix products again:
//
//	∂A = g·op(B)ᵀ (or its transpose, op(B)·gᵀ, when tA),  ∂B = op(A)ᵀ·g (or gᵀ·op(A) when tB)
type matmulOp struct{ tA, tB bool }

func (k matmulOp) name() string { return fmt.Sprintf("nnMatMul{tA=%t,tB=%t}", k.tA, k.tB) }
func (k matmulOp) arity() int   { return 2 }
func (k matmulOp) typ() hm.Type {
	return hm.NewFnType(graph.TensorType(2), graph.TensorType(2), graph.TensorType(2))
}

// dims returns m, n, k of the product for stored shapes a and b.
func (k matmulOp) dims(a, b tensor.Shape) (m, n, kk int, err error) {
	if a.Dims() != 2 || b.Dims() != 2 {
		return 0, 0, 0, fmt.Errorf("%s: operands %v and %v must be matrices", k.name(), a, b)
	}
	m, kk = a[0], a[1]
	if k.tA {
		m, kk = kk, m
	}
	kb, n := b[0], b[1]
	if k.tB {
		kb, n = n, kb
	}
	if kk != kb {
		return 0, 0, 0, fmt.Errorf("%s: operands %v and %v do not multiply (inner sizes %d and %d)", k.name(), a, b, kk, kb)
	}
	return m, n, kk, nil
}

func (k matmulOp) shape(in []tensor.Shape) (tensor.Shape, error) {
	m, n, _, err := k.dims(in[0], in[1])
	if err != nil {
		return nil, err
	}
	return tensor.Shape{m, n}, nil
}

func (k matmulOp) do(out *tensor.Dense, in []*tensor.Dense) error {
	if err := sameDtype(k.name(), in...); err != nil {
		return err
	}
	a, b := in[0], in[1]
	m, n, kk, _ := k.dims(a.Shape(), b.Shape())
	lda, ldb := a.Shape()[1], b.Shape()[1]
	var err error
	// GemmDepth: a small product over a long depth (a weight gradient,
	// xᵀ·g over batch·context rows) is split along the depth, so that
	// every core has a part; any other product is Gemm's.
	switch a.Dtype() {
	case tensor.Float32:
		err = gemm.GemmDepth(k.tA, k.tB, m, n, kk, floats[float32](a), lda, floats[float32](b), ldb, floats[float32](out), n)
	default:
		err = gemm.GemmDepth(k.tA, k.tB, m, n, kk, floats[float64](a), lda, floats[float64](b), ldb, floats[float64](out), n)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", k.name(), err)
	}
	return nil
}

func (k matmulOp) grads() []gradSpec {
	var da, db gradSpec
	if !k.tA {
		da = gradSpec{op: opBase{matmulOp{tA: false, tB: !k.tB}}, args: []int{argGrad, 1}}
	} else {
		da = gradSpec{op: opBase{matmulOp{tA: k.tB, tB: true}}, args: []int{1, argGrad}}
	}
	if !k.tB {
		db = gradSpec{op: opBase{matmulOp{tA: !k.tA, tB: false}}, args: []int{0, argGrad}}
	} else {
		db = gradSpec{op: opBase{matmulOp{tA: true, tB: k.tA}}, args: []int{argGrad, 0}}
	}
	return []gradSpec{da, db}
}

// MatMul returns op(a)·op(b) for matrices a and b, transposing a when tA and
// b when tB:
//
//	y[i, j] = Σ_p op(a)[i, p]·op(b)[p, j]
func MatMul(a, b *gorgonia.Node, tA, tB bool) (*gorgonia.Node, error) {
	k := matmulOp{tA: tA, tB: tB}
	if _, _, _, err := k.dims(a.Shape(), b.Shape()); err != nil {
		return nil, fmt.Errorf("nn.MatMul: %w", err)
	}
	if a.Dtype() != b.Dtype() || !isFloat(a.Dtype()) {
		return nil, fmt.Errorf("nn.MatMul: dtypes %v and %v: want both float32 or both float64", a.Dtype(), b.Dtype())
	}
	return apply(k, a, b)
}
