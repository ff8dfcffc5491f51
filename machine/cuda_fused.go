package machine

import (
	"strings"

	"gorgonia.org/gorgonia"

	"github.com/flashgorgon/flashgorgon/cuda"
)

// The CUDA backend's kernels for nn's fused ops, which nn builds only where a backend runs them
// on its device (Native): with these registered, a GPT's training graph on the GPU is the
// CPU's graph, the cross-entropy one op each way and each linear layer one product with its
// bias.

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
