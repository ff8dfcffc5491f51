package nn

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
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
const geluC = 0.044715

var geluK = math.Sqrt(2 / math.Pi)

func gelu(x float64) float64 {
	return x / (1 + math.Exp(-2*geluK*(x+geluC*x*x*x)))
}

func geluPrime(x float64) float64 {
	s := 1 / (1 + math.Exp(-2*geluK*(x+geluC*x*x*x)))
	return s + 2*x*s*(1-s)*geluK*(1+3*geluC*x*x)
}

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
func (k geluOp) do(in []*tensor.Dense) (*tensor.Dense, error) {
	if err := sameDtype(k.name(), in...); err != nil {
		return nil, err
	}
	out := newDense(in[0].Dtype(), in[0].Shape().Clone()...)
	switch out.Dtype() {
	case tensor.Float32:
		geluKernel(k.grad, floats[float32](out), in)
	default:
		geluKernel(k.grad, floats[float64](out), in)
	}
	return out, nil
}

// geluKernel works through a float64 buffer of 256 entries at a time: a
// loop that widens each float32 just before the exponential is about 4×
// slower on amd64 (CVTSS2SD writes only part of its register, which chains
// every iteration to the previous one and serializes the exponentials).
func geluKernel[T float](grad bool, y []T, in []*tensor.Dense) {
	x := floats[T](in[0])
	var g []T
	if grad {
		g = floats[T](in[1])
	}
	parallel.For(len(x), 4096, func(lo, hi int) {
		var buf [256]float64
		for c0 := lo; c0 < hi; c0 += len(buf) {
			c := buf[:min(len(buf), hi-c0)]
			for i := range c {
				c[i] = float64(x[c0+i])
			}
			if grad {
				for i, v := range c {
					c[i] = geluPrime(v)
				}
				for i, v := range c {
					y[c0+i] = T(float64(g[c0+i]) * v)
				}
				continue
			}
			for i, v := range c {
				c[i] = gelu(v)
			}
			for i, v := range c {
				y[c0+i] = T(v)
			}
		}
	})
}

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
