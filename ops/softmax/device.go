package softmax

import (
	"github.com/flashgorgon/flashgorgon/cuda"
	"github.com/flashgorgon/flashgorgon/graph"
)

// The device branch of forward and backward. When the cuda package has a device in use (a
// machine with an NVIDIA GPU and its driver, FLASHGORGON_DEVICE not "cpu"; every build has
// the backend, cuda.Device names the device and logs the choice once), the softmax-family
// kernels run there with the CPU kernels' semantics (edge cases included, statistics in
// float64). Failures follow the one device policy (DESIGN.md, cuda.Offloaded): no device or a
// problem the kernels do not cover runs on the CPU; any other device failure is the op's error.

// cpuOnly, set by tests, keeps forward and backward on the CPU while a device is in use, so
// that both paths can be compared in one process.
var cpuOnly bool

// device holds the launchers the device branch calls: the cuda package's. Tests replace them
// (a device that fails, one that does not cover the problem) to check the failure policy
// without a GPU.
var device = struct {
	enabled           func() bool
	forward, backward func(cuda.SoftmaxParams) error
}{cuda.Enabled, cuda.SoftmaxForward, cuda.SoftmaxBackward}

func deviceKind(k kind) cuda.SoftmaxKind {
	switch k {
	case kindLogSoftmax:
		return cuda.LogSoftmax
	case kindLogSumExp:
		return cuda.LogSumExp
	}
	return cuda.Softmax
}

// deviceForward runs forward on the device; it reports whether it did (false: the CPU runs
// it) and the device's error.
func deviceForward[T graph.Float](k kind, x, y []T, l layout) (bool, error) {
	if cpuOnly || !device.enabled() {
		return false, nil
	}
	return cuda.Offloaded(device.forward(cuda.SoftmaxParams{Kind: deviceKind(k),
		Outer: l.outer, N: l.n, Inner: l.inner, X: x, Y: y}))
}

// deviceBackward runs backward on the device; it reports whether it did and the device's
// error.
func deviceBackward[T graph.Float](k kind, x, y, dy, dx []T, l layout) (bool, error) {
	if cpuOnly || !device.enabled() {
		return false, nil
	}
	p := cuda.SoftmaxParams{Kind: deviceKind(k), Outer: l.outer, N: l.n, Inner: l.inner, Y: y, DY: dy, DX: dx}
	if k == kindLogSumExp {
		p.X = x
	}
	return cuda.Offloaded(device.backward(p))
}
