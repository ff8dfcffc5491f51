package nn

import (
	"fmt"
	"math/rand"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LinearNode returns y = x·W + b for x [M, In], w [In, Out] and b [Out]
// (b may be nil):
//
//	y[m, o] = Σ_i x[m, i]·w[i, o] + b[o]
//
// The product is nn's MatMul (internal/kernels/gemm, SIMD micro-kernels); the bias is
// nn's row-broadcast add, whose gradient is the column sum of ∂L/∂y.
func LinearNode(x, w, b *gorgonia.Node) (*gorgonia.Node, error) {
	if err := checkLinear(x, w, b); err != nil {
		return nil, err
	}
	y, err := MatMul(x, w, false, false)
	if err != nil {
		return nil, fmt.Errorf("nn.Linear: x %v · weight %v: %w", x.Shape(), w.Shape(), err)
	}
	if b == nil {
		return y, nil
	}
	return applyAffine(y, nil, b)
}

// checkLinear returns an error naming the shapes or dtypes of x, w and b
// (may be nil) that do not make a linear layer.
func checkLinear(x, w, b *gorgonia.Node) error {
	if x == nil || w == nil {
		return fmt.Errorf("nn.Linear: x %v or weight %v is nil", x, w)
	}
	if x.Dims() != 2 || w.Dims() != 2 || x.Shape()[1] != w.Shape()[0] {
		return fmt.Errorf("nn.Linear: x %v and weight %v do not multiply (want x [M, In], weight [In, Out])", x.Shape(), w.Shape())
	}
	if b != nil && (b.Dims() != 1 || b.Shape()[0] != w.Shape()[1]) {
		return fmt.Errorf("nn.Linear: bias has shape %v, want [%d] for weight %v", b.Shape(), w.Shape()[1], w.Shape())
	}
	if x.Dtype() != w.Dtype() {
		return fmt.Errorf("nn.Linear: x has dtype %v, weight %v", x.Dtype(), w.Dtype())
	}
	return nil
}

// Linear is a fully connected layer y = x·W + b with W [In, Out] and an
// optional bias b [Out], named "<name>.weight" and "<name>.bias".
type Linear struct {
	W *Param
	B *Param // nil without bias
}

// NewLinear returns a Linear layer with W [in, out] drawn from N(0, std²)
// and b = 0. Sizes must be positive, dt float32 or float64, rng not nil and
// std finite and ≥ 0.
func NewLinear(name string, in, out int, bias bool, dt tensor.Dtype, rng *rand.Rand, std float64) (*Linear, error) {
	if err := checkInit("nn.NewLinear "+name, dt, rng, std, in, out); err != nil {
		return nil, err
	}
	l := &Linear{W: newParam(name+".weight", dt, true, in, out)}
	l.W.fillNormal(rng, std)
	if bias {
		l.B = newParam(name+".bias", dt, false, out)
	}
	return l, nil
}

// Params returns W and, if present, b.
func (l *Linear) Params() []*Param {
	if l.B == nil {
		return []*Param{l.W}
	}
	return []*Param{l.W, l.B}
}

// Forward returns x·W + b for x [M, In] in scope s.
func (l *Linear) Forward(s *Scope, x *gorgonia.Node) (*gorgonia.Node, error) {
	if err := s.check("nn.Linear"); err != nil {
		return nil, err
	}
	if l == nil || l.W == nil {
		return nil, fmt.Errorf("nn.Linear: the layer is nil or was not made by NewLinear")
	}
	var b *gorgonia.Node
	if l.B != nil {
		b = s.Node(l.B)
		if s.fuses(linearOp{}) {
			if err := checkLinear(x, s.Node(l.W), b); err != nil {
				return nil, err
			}
			return apply(linearOp{}, x, s.Node(l.W), b)
		}
	}
	return LinearNode(x, s.Node(l.W), b)
}
