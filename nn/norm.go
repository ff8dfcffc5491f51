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

// normOp normalizes each row of x over its last axis (length D):
//
//	center:  x̂ = (x − μ)/√(σ² + eps),  μ = mean(x),  σ² = mean((x − μ)²)   (LayerNorm)
//	!center: x̂ = x/√(mean(x²) + eps)                                     (RMSNorm)
//
// Its gradient op (normGradOp) recomputes the row statistics from x instead
// of storing them, so the op stays a pure function of its input.
type normOp struct {
	center bool
	eps    float64
	dims   int
}

func (k normOp) name() string {
	return fmt.Sprintf("nnNorm{center=%t,eps=%g,dims=%d}", k.center, k.eps, k.dims)
}
func (k normOp) arity() int { return 1 }
func (k normOp) typ() hm.Type {
	return hm.NewFnType(graph.TensorType(k.dims), graph.TensorType(k.dims))
}
func (k normOp) shape(in []tensor.Shape) (tensor.Shape, error) {
	if in[0].Dims() != k.dims || k.dims < 1 {
		return nil, fmt.Errorf("%s: x has shape %v, want rank %d", k.name(), in[0], k.dims)
	}
	return in[0].Clone(), nil
}
func (k normOp) do(out *tensor.Dense, in []*tensor.Dense) error { return normDo(k.name(), k, out, in) }
func (k normOp) grads() []gradSpec {
	return []gradSpec{{op: opBase{normGradOp(k)}, args: []int{0, argGrad}}}
}

// rowGrain is the fewest entries of a row kernel worth a goroutine (a few
// µs of one core); rowsGrain turns it into rows of length d.
const rowGrain = 8192

func rowsGrain(d int) int { return max(1, rowGrain/max(d, 1)) }

// normDo runs the forward (in = x: x̂ of each row, vec.NormRows) or the
// backward (in = x, g: ∂L/∂x, vec.NormGradRows) over the rows of x [..., d],
// split over the cores. The statistics are in float64, each row on its own,
// so the result does not depend on the number of cores.
func normDo(name string, k normOp, out *tensor.Dense, in []*tensor.Dense) error {
	if err := sameDtype(name, in...); err != nil {
		return err
	}
	if out.Dtype() == tensor.Float32 {
		normRows[float32](k, out, in)
	} else {
		normRows[float64](k, out, in)
	}
	return nil
}

func normRows[T float](k normOp, out *tensor.Dense, in []*tensor.Dense) {
	s := in[0].Shape()
	d := s[len(s)-1]
	y, x := floats[T](out), floats[T](in[0])
	var g []T
	if len(in) == 2 {
		g = floats[T](in[1])
	}
	parallel.ForDynamic(len(x)/d, rowsGrain(d), func(lo, hi int) {
		if g == nil {
			vec.NormRows(y[lo*d:hi*d], x[lo*d:hi*d], d, k.center, k.eps)
		} else {
			vec.NormGradRows(y[lo*d:hi*d], x[lo*d:hi*d], g[lo*d:hi*d], d, k.center, k.eps)
		}
	})
}

// normGradOp is the gradient of normOp: inputs x and g = ∂L/∂x̂, output
//
//	center:  ∂L/∂x = r·(g − mean(g) − x̂·mean(g∘x̂))
//	!center: ∂L/∂x = r·(g − x̂·mean(g∘x̂))
//
// with r = 1/√(var + eps) of the row.
type normGradOp normOp

func (k normGradOp) name() string {
	return fmt.Sprintf("nnNormGrad{center=%t,eps=%g,dims=%d}", k.center, k.eps, k.dims)
}
func (k normGradOp) arity() int { return 2 }
func (k normGradOp) typ() hm.Type {
	return hm.NewFnType(graph.TensorType(k.dims), graph.TensorType(k.dims), graph.TensorType(k.dims))
}
func (k normGradOp) shape(in []tensor.Shape) (tensor.Shape, error) {
	if in[0].Dims() != k.dims || !in[0].Eq(in[1]) {
		return nil, fmt.Errorf("%s: x %v and gradient %v must have one shape of rank %d", k.name(), in[0], in[1], k.dims)
	}
	return in[0].Clone(), nil
}
func (k normGradOp) do(out *tensor.Dense, in []*tensor.Dense) error {
	return normDo(k.name(), normOp(k), out, in)
}
func (k normGradOp) grads() []gradSpec { return nil }

// DefaultNormEps is the eps of LayerNorm and RMSNorm when none is given.
const DefaultNormEps = 1e-5

// LayerNormNode returns y = (x − μ)/√(σ² + eps)·γ + β over the last axis of x
// (x [..., D], gamma and beta [D]; beta may be nil).
func LayerNormNode(x, gamma, beta *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	return normNode("LayerNorm", true, x, gamma, beta, eps)
}

// RMSNormNode returns y = x/√(mean(x²) + eps)·γ over the last axis of x
// (x [..., D], gamma [D]).
func RMSNormNode(x, gamma *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	return normNode("RMSNorm", false, x, gamma, nil, eps)
}

func normNode(what string, center bool, x, gamma, beta *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	if x == nil {
		return nil, fmt.Errorf("nn.%s: x is nil", what)
	}
	if x.Dims() < 1 {
		return nil, fmt.Errorf("nn.%s: x must have at least one axis, has shape %v", what, x.Shape())
	}
	if !(eps > 0) || math.IsInf(eps, 1) {
		return nil, fmt.Errorf("nn.%s: eps must be positive and finite, got %g", what, eps)
	}
	d := x.Shape()[x.Dims()-1]
	for _, p := range []*gorgonia.Node{gamma, beta} {
		if p != nil && (p.Dims() != 1 || p.Shape()[0] != d) {
			return nil, fmt.Errorf("nn.%s: parameter %s has shape %v, want [%d] for x %v", what, p.Name(), p.Shape(), d, x.Shape())
		}
	}
	xh, err := apply(normOp{center: center, eps: eps, dims: x.Dims()}, x)
	if err != nil {
		return nil, fmt.Errorf("nn.%s: %w", what, err)
	}
	if gamma == nil && beta == nil {
		return xh, nil
	}
	return applyAffine(xh, gamma, beta)
}

// Norm is a normalization layer over the last axis: LayerNorm (gain and
// bias) or RMSNorm (gain only). Gains start at 1 and biases at 0.
type Norm struct {
	RMS   bool
	Eps   float64
	Gain  *Param // [D], "<name>.weight"
	Shift *Param // [D], "<name>.bias"; nil for RMSNorm
}

// NewLayerNorm returns a LayerNorm over width d > 0 with parameters named
// "<name>.weight" and "<name>.bias".
func NewLayerNorm(name string, d int, dt tensor.Dtype) (*Norm, error) {
	if err := checkInit("nn.NewLayerNorm "+name, dt, nil, 0, d); err != nil {
		return nil, err
	}
	n := &Norm{Eps: DefaultNormEps, Gain: newParam(name+".weight", dt, false, d), Shift: newParam(name+".bias", dt, false, d)}
	n.Gain.fillConst(1)
	return n, nil
}

// NewRMSNorm returns an RMSNorm over width d > 0 with its gain named
// "<name>.weight".
func NewRMSNorm(name string, d int, dt tensor.Dtype) (*Norm, error) {
	if err := checkInit("nn.NewRMSNorm "+name, dt, nil, 0, d); err != nil {
		return nil, err
	}
	n := &Norm{RMS: true, Eps: DefaultNormEps, Gain: newParam(name+".weight", dt, false, d)}
	n.Gain.fillConst(1)
	return n, nil
}

// Params returns the norm's parameters.
func (n *Norm) Params() []*Param {
	if n.Shift == nil {
		return []*Param{n.Gain}
	}
	return []*Param{n.Gain, n.Shift}
}

// Forward normalizes x [..., D] in scope s.
func (n *Norm) Forward(s *Scope, x *gorgonia.Node) (*gorgonia.Node, error) {
	if err := s.check("nn.Norm"); err != nil {
		return nil, err
	}
	if n == nil || n.Gain == nil || (!n.RMS && n.Shift == nil) {
		return nil, fmt.Errorf("nn.Norm: the layer is nil or was not made by NewLayerNorm or NewRMSNorm")
	}
	if n.RMS {
		return RMSNormNode(x, s.Node(n.Gain), n.Eps)
	}
	return LayerNormNode(x, s.Node(n.Gain), s.Node(n.Shift), n.Eps)
}
