package nn

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/ops/softmax"
)

// CrossEntropy is the mean negative log-likelihood of integer targets under
// logits [M, V], computed through log-softmax (ops/softmax) so that no logit
// overflows:
//
//	loss = −(1/n)·Σ_{m : t[m] ≠ ignore} logsoftmax(logits[m, :])[t[m]],   n = #{m : t[m] ≠ ignore}
//
// Rows whose target is IgnoreIndex (padding) count neither in the sum nor in
// n; with every row ignored the loss is 0. The targets are an input of the
// graph, set before each run by SetTargets, so one graph serves every batch:
// internally loss = −Σ logp∘W with W[m, v] = 1/n where v = t[m] (and t[m] is
// not ignored), 0 elsewhere.
//
// NewFusedCrossEntropy computes the same loss with one op (xentOp) that
// reads the logits once forward and once backward; its targets are an int
// input of the graph.
type CrossEntropy struct {
	Loss        *gorgonia.Node // scalar
	LogProbs    *gorgonia.Node // [M, V] (nil when fused)
	IgnoreIndex int

	weights     *gorgonia.Node // W (not fused)
	targets     *gorgonia.Node // t [M] (fused)
	rows, vocab int
}

// NewCrossEntropy builds the loss over logits [M, V] in logits' graph.
// ignoreIndex is usually negative (e.g. −1) so that it cannot be a class.
func NewCrossEntropy(logits *gorgonia.Node, ignoreIndex int) (*CrossEntropy, error) {
	if logits == nil {
		return nil, fmt.Errorf("nn.CrossEntropy: logits are nil")
	}
	if logits.Dims() != 2 {
		return nil, fmt.Errorf("nn.CrossEntropy: logits have shape %v, want [M, V]", logits.Shape())
	}
	m, v := logits.Shape()[0], logits.Shape()[1]
	logp, err := softmax.LogSoftmax(logits, 1)
	if err != nil {
		return nil, fmt.Errorf("nn.CrossEntropy: %w", err)
	}
	w := gorgonia.NewMatrix(logits.Graph(), logits.Dtype(), gorgonia.WithShape(m, v),
		gorgonia.WithName(fmt.Sprintf("ce.weights#%d", logits.ID())), gorgonia.WithValue(newDense(logits.Dtype(), m, v)))
	prod, err := gorgonia.HadamardProd(logp, w)
	if err != nil {
		return nil, fmt.Errorf("nn.CrossEntropy: %w", err)
	}
	sum, err := gorgonia.Sum(prod)
	if err != nil {
		return nil, fmt.Errorf("nn.CrossEntropy: %w", err)
	}
	loss, err := gorgonia.Neg(sum)
	if err != nil {
		return nil, fmt.Errorf("nn.CrossEntropy: %w", err)
	}
	return &CrossEntropy{Loss: loss, LogProbs: logp, IgnoreIndex: ignoreIndex, weights: w, rows: m, vocab: v}, nil
}

// NewFusedCrossEntropy builds the loss of CrossEntropy over logits [M, V]
// as one fused op (log-softmax, the picked log-probabilities and their mean
// in one pass, the gradient in one more), whose device implementation a
// backend may lack: Runner uses it where machine.Native says the backend
// runs it (the CPU).
func NewFusedCrossEntropy(logits *gorgonia.Node, ignoreIndex int) (*CrossEntropy, error) {
	if logits == nil {
		return nil, fmt.Errorf("nn.CrossEntropy: logits are nil")
	}
	if logits.Dims() != 2 || !isFloat(logits.Dtype()) {
		return nil, fmt.Errorf("nn.CrossEntropy: logits have shape %v and dtype %v, want [M, V] float32 or float64", logits.Shape(), logits.Dtype())
	}
	m, v := logits.Shape()[0], logits.Shape()[1]
	t, err := IndexInput(logits.Graph(), fmt.Sprintf("ce.targets#%d", logits.ID()), m)
	if err != nil {
		return nil, fmt.Errorf("nn.CrossEntropy: %w", err)
	}
	mean, err := apply(xentOp{ignore: ignoreIndex}, logits, t)
	if err != nil {
		return nil, fmt.Errorf("nn.CrossEntropy: %w", err)
	}
	loss, err := gorgonia.Sum(mean) // [1] → scalar
	if err != nil {
		return nil, fmt.Errorf("nn.CrossEntropy: %w", err)
	}
	return &CrossEntropy{Loss: loss, IgnoreIndex: ignoreIndex, targets: t, rows: m, vocab: v}, nil
}

// SetTargets sets the targets t[m] of the next run and returns n, the number
// of rows not ignored. Each target must be in [0, V) or equal IgnoreIndex.
func (c *CrossEntropy) SetTargets(targets []int) (int, error) {
	if len(targets) != c.rows {
		return 0, fmt.Errorf("nn.CrossEntropy.SetTargets: %d targets for %d rows of logits", len(targets), c.rows)
	}
	n := 0
	for m, t := range targets {
		if t == c.IgnoreIndex {
			continue
		}
		if t < 0 || t >= c.vocab {
			return 0, fmt.Errorf("nn.CrossEntropy.SetTargets: target %d at row %d is outside [0, %d) and is not the ignore index %d", t, m, c.vocab, c.IgnoreIndex)
		}
		n++
	}
	if c.targets != nil {
		return n, SetIndices(c.targets, targets)
	}
	w := c.weights.Value().(*tensor.Dense)
	switch d := w.Data().(type) {
	case []float32:
		setWeights(d, targets, c.IgnoreIndex, c.vocab, n)
	case []float64:
		setWeights(d, targets, c.IgnoreIndex, c.vocab, n)
	}
	return n, nil
}

func setWeights[T float](w []T, targets []int, ignore, v, n int) {
	clear(w)
	if n == 0 {
		return
	}
	inv := T(1 / float64(n))
	for m, t := range targets {
		if t != ignore {
			w[m*v+t] = inv
		}
	}
}
