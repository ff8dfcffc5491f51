package softmax

import (
	"errors"
	"log"

	"github.com/flashgorgon/flashgorgon/cuda"
	"github.com/flashgorgon/flashgorgon/graph"
)

// The device branch of forward and backward. When the cuda package has a device in use (a
// machine with an NVIDIA GPU and its driver, FLASHGORGON_DEVICE not "cpu"; every build has
// the backend, cuda.Device names the device and logs the choice once), the softmax-family
// kernels run there with the CPU kernels' semantics (edge cases included, statistics in
// float64). forward and backward return no error, so a device failure is logged and the CPU computes the result.

// cpuOnly, set by tests, keeps forward and backward on the CPU while a device is in use, so
// that both paths can be compared in one process.
var cpuOnly bool

func deviceKind(k kind) cuda.SoftmaxKind {
	switch k {
	case kindLogSoftmax:
		return cuda.LogSoftmax
	case kindLogSumExp:
		return cuda.LogSumExp
	}
	return cuda.Softmax
}

// deviceForward runs forward on the device and reports whether it did.
func deviceForward[T graph.Float](k kind, x, y []T, l layout) bool {
	if cpuOnly || !cuda.Enabled() {
		return false
	}
	return deviceDone(k, "forward", cuda.SoftmaxForward(cuda.SoftmaxParams{Kind: deviceKind(k),
		Outer: l.outer, N: l.n, Inner: l.inner, X: x, Y: y}))
}

// deviceBackward runs backward on the device and reports whether it did.
func deviceBackward[T graph.Float](k kind, x, y, dy, dx []T, l layout) bool {
	if cpuOnly || !cuda.Enabled() {
		return false
	}
	p := cuda.SoftmaxParams{Kind: deviceKind(k), Outer: l.outer, N: l.n, Inner: l.inner, Y: y, DY: dy, DX: dx}
	if k == kindLogSumExp {
		p.X = x
	}
	return deviceDone(k, "backward", cuda.SoftmaxBackward(p))
}

func deviceDone(k kind, dir string, err error) bool {
	if err != nil && !errors.Is(err, cuda.ErrUnsupported) {
		log.Printf("flashgorgon: %v %s on %s failed, computing it on the CPU: %v", k, dir, cuda.Device(), err)
	}
	return err == nil
}
