package nn

import (
	"fmt"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/internal/kernels/vec"
	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// GELU's tanh approximation (GPT-2's "gelu_new"):
//
//	gelu(x) = ½·x·(1 + tanh(u)),  u = √(2/π)·(x + 0.044715·x³)
//
// computed as x·σ(2u) with σ(z) = 1/(1 + e^(−z)) (the same function, since
// ½(1 + tanh(u)) = σ(2u)), which needs one exponential instead of a tanh;
// its derivative is
//
//	gelu'(x) = s + 2·x·s·(1 − s)·√(2/π)·(1 + 3·0.044715·x²),   s = σ(2u)
//
// The kernels are internal/kernels/vec's GELU and GELUGrad.

// geluOp applies gelu elementwise; with grad set it is the gradient op,
// inputs x and g, output g∘gelu'(x).
type geluOp struct {
	grad bool
	dims int
}

func (k geluOp) name() string { return fmt.Sprintf("nnGELU{grad=%t,dims=%d}", k.grad, k.dims) }
func (k geluOp) arity() int {
	if k.grad {
		return 2
	}
	return 1
}
func (k geluOp) typ() hm.Type {
	t := graph.TensorType(k.dims)
	if k.grad {
		return hm.NewFnType(t, t, t)
	}
	return hm.NewFnType(t, t)
}
func (k geluOp) shape(in []tensor.Shape) (tensor.Shape, error) {
	if in[0].Dims() != k.dims {
		return nil, fmt.Errorf("%s: x has shape %v, want rank %d", k.name(), in[0], k.dims)
	}
	if k.grad && !in[1].Eq(in[0]) {
		return nil, fmt.Errorf("%s: x %v and gradient %v differ in shape", k.name(), in[0], in[1])
	}
	return in[0].Clone(), nil
}
func (k geluOp) do(out *tensor.Dense, in []*tensor.Dense) error {
	if err := sameDtype(k.name(), in...); err != nil {
		return err
	}
	switch out.Dtype() {
	case tensor.Float32:
		geluKernel(k.grad, floats[float32](out), in)
	default:
		geluKernel(k.grad, floats[float64](out), in)
	}
	return nil
}

// geluKernel computes y = gelu(x), or y = g∘gelu'(x) with grad, in blocks
// of geluGrain entries over the cores.
//
// float32 runs in float32 around vec's vectorized exponential: z = −2u
// (u = √(2/π)·(x + 0.044715·x³), rounded once), e = e^z within 2 ulp, then
// y = x/(1 + e) and, for the gradient, s = 1/(1 + e) with 1 − s taken as
// s·e (no cancellation as s → 1). Its error against float64 is a few ulp of
// the argument's rounding (TestGELUFloat32 bounds it). float64 stays exact:
// math.Exp. Each entry is computed on its own, so the result does not depend
// on the number of cores.
func geluKernel[T float](grad bool, y []T, in []*tensor.Dense) {
	x := floats[T](in[0])
	var g []T
	if grad {
		g = floats[T](in[1])
	}
	parallel.ForDynamic(len(x), geluGrain, func(lo, hi int) {
		if grad {
			vec.GELUGrad(y[lo:hi], x[lo:hi], g[lo:hi])
			return
		}
		vec.GELU(y[lo:hi], x[lo:hi])
	})
}

// geluGrain is the fewest entries worth a goroutine (~5 µs of one core).
const geluGrain = 16384

func (k geluOp) grads() []gradSpec {
	if k.grad {
		return nil
	}
	return []gradSpec{{op: opBase{geluOp{grad: true, dims: k.dims}}, args: []int{0, argGrad}}}
}

// GELU returns gelu(x) elementwise (tanh approximation, as in GPT-2):
//
//	y = ½·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
func GELU(x *gorgonia.Node) (*gorgonia.Node, error) {
	if x == nil {
		return nil, fmt.Errorf("nn.GELU: x is nil")
	}
	if !isFloat(x.Dtype()) {
		return nil, fmt.Errorf("nn.GELU: x %s has dtype %v, want float32 or float64", x.Name(), x.Dtype())
	}
	return apply(geluOp{dims: x.Dims()}, x)
}
