package machine

import (
	"strings"

	"gorgonia.org/gorgonia"

	"github.com/flashgorgon/flashgorgon/cuda"
)

// The CUDA backend's kernels for nn's fused ops, which nn builds only where a backend runs them
// on its device (Native): with these registered, a GPT's training graph on the GPU is the
// CPU's graph, the cross-entropy one op each way and each linear layer with a bias one
// product.

// xent: nn's cross-entropy fused with its log-softmax (xentOp: logits x [M, V] and targets
// t [M] → the mean loss [1]) and its gradient (xentGradOp: x, t and g [1] → dx [M, V]), on
// cuda.CrossEntropyForward and CrossEntropyBackward (log-sum-exps in float64, the loss's sum
// over rows in a fixed order). Targets are stored as int32; the host checked them against V
// and the ignore index where they were set (nn.CrossEntropy.SetTargets).
func (c *cudaBackend) xent(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	sp, ok := nnSpec(op)
	grad := strings.HasSuffix(OpKind(op), "GradOp")
	if !ok || len(in) != 2+btoi(grad) || len(in[0].Shape) != 2 || !floats(out, in[0]) || (grad && !floats(out, in[2])) {
		return nil, nil
	}
	if st, ok := storage(in[1].Buf.Dtype()); !ok || st != cuda.Int32 {
		return nil, nil
	}
	y, x, err := operands(out, in)
	if err != nil {
		return nil, err
	}
	m, v := in[0].Shape[0], in[0].Shape[1]
	work, err := c.alloc(cuda.Float64, cuda.CrossEntropyWorkspace(m))
	if err != nil {
		return nil, err
	}
	p := cuda.CrossEntropyParams{M: m, V: v, IgnoreIndex: sp.Ignore, Logits: x[0], Targets: x[1], Work: work}
	if grad {
		p.DLoss, p.DLogits = x[2], y
		return func() error { return cuda.CrossEntropyBackward(p) }, nil
	}
	p.Loss = y
	return func() error { return cuda.CrossEntropyForward(p) }, nil
}

// linear: nn's linear layer with its bias (linearOp: x [M, In], W [In, Out], b [Out] →
// y = x·W + b [M, Out]) as one product with the bias added in its epilogue (cuda.GemmBias on
// cuBLASLt, float32 in float32): no pass over y for the bias. Its gradients are nn's matrix
// products and column sums, which have kernels of their own.
func (c *cudaBackend) linear(op gorgonia.Op, out Operand, in []Operand) (Kernel, error) {
	if len(in) != 3 || !floats(out, in...) || len(in[0].Shape) != 2 || len(in[1].Shape) != 2 || len(in[2].Shape) != 1 || len(out.Shape) != 2 {
		return nil, nil
	}
	m, k, n := in[0].Shape[0], in[0].Shape[1], in[1].Shape[1]
	if in[1].Shape[0] != k || in[2].Shape[0] != n || out.Shape[0] != m || out.Shape[1] != n {
		return nil, nil
	}
	y, x, err := operands(out, in)
	if err != nil {
		return nil, err
	}
	p := cuda.GemmBiasParams{M: m, N: n, K: k, A: x[0], B: x[1], Bias: x[2], C: y}
	return func() error { return cuda.GemmBias(p) }, nil
}
