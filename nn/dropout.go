package nn

import (
	"fmt"
	"math/rand"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// dropoutMask is one mask input of a scope.
type dropoutMask struct {
	node *gorgonia.Node
	p    float64
}

// Dropout returns x∘mask in a training scope, where mask is an input node of
// x's shape whose entries ResampleDropout draws before each run:
//
//	mask[i] = 0 with probability p, 1/(1 − p) otherwise
//
// so that E[y] = x. In an evaluation scope (s.Train false) or with p = 0 it
// returns x unchanged: dropout is active only in training. p must be in
// [0, 1).
func (s *Scope) Dropout(x *gorgonia.Node, p float64) (*gorgonia.Node, error) {
	if s == nil || x == nil {
		return nil, fmt.Errorf("nn.Dropout: scope %v or x %v is nil", s, x)
	}
	if !(p >= 0 && p < 1) {
		return nil, fmt.Errorf("nn.Dropout: probability %g is outside [0, 1)", p)
	}
	if !s.Train || p == 0 {
		return x, nil
	}
	shape := x.Shape().Clone()
	m := gorgonia.NewTensor(s.G, x.Dtype(), x.Dims(), gorgonia.WithShape(shape...),
		gorgonia.WithName(s.uniqueName("dropout.mask")), gorgonia.WithValue(newDense(x.Dtype(), shape...)))
	s.masks = append(s.masks, dropoutMask{node: m, p: p})
	y, err := gorgonia.HadamardProd(x, m)
	if err != nil {
		return nil, fmt.Errorf("nn.Dropout: x %v: %w", x.Shape(), err)
	}
	return y, nil
}

// ResampleDropout draws fresh dropout masks from rng (call it before each
// training run; a scope without dropout ignores it). A scope with dropout
// needs an rng.
func (s *Scope) ResampleDropout(rng *rand.Rand) error {
	if s == nil {
		return fmt.Errorf("nn.ResampleDropout: the scope is nil")
	}
	if len(s.masks) > 0 && rng == nil {
		return fmt.Errorf("nn.ResampleDropout: the scope has %d dropout masks and the random source is nil", len(s.masks))
	}
	for _, m := range s.masks {
		keep := 1 / (1 - m.p)
		switch d := m.node.Value().Data().(type) {
		case []float32:
			for i := range d {
				d[i] = 0
				if rng.Float64() >= m.p {
					d[i] = float32(keep)
				}
			}
		case []float64:
			for i := range d {
				d[i] = 0
				if rng.Float64() >= m.p {
					d[i] = keep
				}
			}
		}
	}
	return nil
}

// DropoutMasks returns the scope's mask tensors (for tests and inspection).
func (s *Scope) DropoutMasks() []*tensor.Dense {
	out := make([]*tensor.Dense, len(s.masks))
	for i, m := range s.masks {
		out[i] = m.node.Value().(*tensor.Dense)
	}
	return out
}
