package softmax

import (
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/cuda"
)

// DeviceSpec returns the kernel description of the op over an input of shape x (the machine's
// CUDA backend fills in the buffers).
func (op fwdOp) DeviceSpec(x tensor.Shape) cuda.SoftmaxBuffers {
	l := layoutOf(x, op.axis)
	return cuda.SoftmaxBuffers{Kind: deviceKind(op.kind), Outer: l.outer, N: l.n, Inner: l.inner}
}

// DeviceSpec returns the kernel description of the gradient over a forward input of shape x.
func (op bwdOp) DeviceSpec(x tensor.Shape) cuda.SoftmaxBuffers { return fwdOp(op).DeviceSpec(x) }
