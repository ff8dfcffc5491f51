package nn

import (
	"fmt"
	"math"

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

// geluKernel computes y = gelu(x), or y = g∘gelu'(x) with grad, in blocks of
// 256 entries over the cores.
//
// float32 runs in float32 with the vectorized exponential of internal/kernels/vec:
// z = −2u (u = √(2/π)·(x + 0.044715·x³), rounded once), e = e^z within 2 ulp, then
// y = x/(1 + e) and, for the gradient, s = 1/(1 + e) with 1 − s taken as s·e (no
// cancellation as s → 1). Its error against float64 is a few ulp of the argument's
// rounding (TestGELUFloat32 bounds it). float64 stays exact: math.Exp through a float64
// buffer.
func geluKernel[T float](grad bool, y []T, in []*tensor.Dense) {
	x := floats[T](in[0])
	var g []T
	if grad {
		g = floats[T](in[1])
	}
	if x32, ok := any(x).([]float32); ok {
		var g32 []float32
		if grad {
			g32 = any(g).([]float32)
		}
		geluKernel32(grad, any(y).([]float32), x32, g32)
		return
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

func geluKernel32(grad bool, y, x, g []float32) {
	const (
		k2 = float32(2 * 0.7978845608028654) // 2·√(2/π)
		c  = float32(geluC)
		k3 = float32(0.7978845608028654 * 2 * 3 * geluC)
	)
	parallel.For(len(x), 4096, func(lo, hi int) {
		var buf [256]float32
		for c0 := lo; c0 < hi; c0 += len(buf) {
			n := min(len(buf), hi-c0)
			e, xs := buf[:n], x[c0:c0+n]
			for i, v := range xs {
				e[i] = -k2 * (v + c*v*v*v)
			}
			vec.Exp(e, e)
			if !grad {
				ys := y[c0 : c0+n]
				for i, v := range xs {
					ys[i] = v / (1 + e[i])
				}
				continue
			}
			ys, gs := y[c0:c0+n], g[c0:c0+n]
			for i, v := range xs {
				s := 1 / (1 + e[i])
				// s + 2·x·s(1−s)·√(2/π)·(1 + 3c·x²), with 1 − s = e/(1+e) = s·e.
				se := s * e[i]
				if e[i] > math.MaxFloat32 { // e/(1+e) → 1 (s·e would be 0·Inf)
					se = 1
				}
				ys[i] = gs[i] * (s + s*se*v*(k2+k3*v*v))
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
