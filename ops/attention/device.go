package attention

import (
	"fmt"

	"github.com/flashgorgon/flashgorgon/cuda"
)

// The device branch of forwardCompute and backwardCompute. When the cuda package has a device
// in use (a machine with an NVIDIA GPU and its driver, FLASHGORGON_DEVICE not "cpu"; every
// build has the backend, cuda.Device names the device and logs the choice once), the fused
// attention runs on it with the same layouts and the same packed results as the CPU kernels,
// L's rounding residual included. Failures follow the one device policy (DESIGN.md,
// cuda.Offloaded): no device or a problem the kernels do not cover (d > 256) runs on the CPU;
// any other device failure is the op's error.

// cpuOnly, set by tests, keeps forwardCompute and backwardCompute on the CPU while a device is
// in use, so that both paths can be compared in one process.
var cpuOnly bool

// device holds the launchers the device branch calls: the cuda package's. Tests replace them
// (a device that fails, one that does not cover the problem) to check the failure policy
// without a GPU.
var device = struct {
	enabled           func() bool
	forward, backward func(cuda.AttentionParams) error
}{cuda.Enabled, cuda.AttentionForward, cuda.AttentionBackward}

// cut splits a []float32 or []float64 into consecutive pieces of the given lengths.
func cut(x any, lens ...int) ([]any, error) {
	out := make([]any, len(lens))
	off := 0
	for i, n := range lens {
		switch s := x.(type) {
		case []float32:
			if off+n > len(s) {
				return nil, fmt.Errorf("packed slice of %d elements, want at least %d", len(s), off+n)
			}
			out[i] = s[off : off+n]
		case []float64:
			if off+n > len(s) {
				return nil, fmt.Errorf("packed slice of %d elements, want at least %d", len(s), off+n)
			}
			out[i] = s[off : off+n]
		default:
			return nil, fmt.Errorf("unsupported element type %T", x)
		}
		off += n
	}
	return out, nil
}

// deviceLaunch runs launch on the device with p's description over q, k, v and the forward's
// packed [O | L | LRes]; more adds the direction's other slices. It reports whether the device
// ran it (false: the CPU runs it) and the device's error.
func deviceLaunch(p *params, q, k, v, packed any, launch func(cuda.AttentionParams) error, more func(dp *cuda.AttentionParams) error) (bool, error) {
	if cpuOnly || !device.enabled() {
		return false, nil
	}
	pk, err := cut(packed, p.QLen(), p.LLen(), p.LLen())
	if err != nil {
		return true, err
	}
	dp := cuda.AttentionParams{B: p.B, H: p.H, Hkv: p.Hkv, Nq: p.Nq, Nk: p.Nk, D: p.D, Scale: p.Scale, Causal: p.Causal,
		KeyLengths: p.KeyLengths, Precision: p.Precision, Q: q, K: k, V: v, O: pk[0], L: pk[1], LRes: pk[2]}
	if more != nil {
		if err := more(&dp); err != nil {
			return true, err
		}
	}
	return cuda.Offloaded(launch(dp))
}

// deviceForward runs forwardCompute on the device (see deviceLaunch).
func deviceForward(p *params, q, k, v, packed any) (bool, error) {
	return deviceLaunch(p, q, k, v, packed, device.forward, nil)
}

// deviceBackward runs backwardCompute on the device (see deviceLaunch): dPacked is [dO | dL | 0],
// grads [dQ | dK | dV].
func deviceBackward(p *params, q, k, v, packed, dPacked, grads any) (bool, error) {
	return deviceLaunch(p, q, k, v, packed, device.backward, func(dp *cuda.AttentionParams) error {
		dpk, err := cut(dPacked, p.QLen(), p.LLen())
		if err != nil {
			return err
		}
		g, err := cut(grads, p.QLen(), p.KLen(), p.KLen())
		if err != nil {
			return err
		}
		dp.DO, dp.DL = dpk[0], dpk[1]
		dp.DQ, dp.DK, dp.DV = g[0], g[1], g[2]
		return nil
	})
}
