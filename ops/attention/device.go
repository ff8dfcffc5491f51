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

// deviceParams returns the cuda description of p over the flat slices.
func deviceParams(p *params) cuda.AttentionParams {
	return cuda.AttentionParams{B: p.B, H: p.H, Hkv: p.Hkv, Nq: p.Nq, Nk: p.Nk, D: p.D,
		Scale: p.Scale, Causal: p.Causal, KeyLengths: p.KeyLengths}
}

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

// deviceForward runs forwardCompute on the device; it reports whether it did (false: the CPU
// runs it) and the device's error.
func deviceForward(p *params, q, k, v, packed any) (bool, error) {
	if cpuOnly || !device.enabled() {
		return false, nil
	}
	oLen, lLen := p.B*p.H*p.Nq*p.D, p.B*p.H*p.Nq
	parts, err := cut(packed, oLen, lLen, lLen)
	if err != nil {
		return true, err
	}
	dp := deviceParams(p)
	dp.Q, dp.K, dp.V = q, k, v
	dp.O, dp.L, dp.LRes = parts[0], parts[1], parts[2]
	return cuda.Offloaded(device.forward(dp))
}

// deviceBackward runs backwardCompute on the device; it reports whether it did and the
// device's error.
func deviceBackward(p *params, q, k, v, packed, dPacked, grads any) (bool, error) {
	if cpuOnly || !device.enabled() {
		return false, nil
	}
	oLen, lLen, kLen := p.B*p.H*p.Nq*p.D, p.B*p.H*p.Nq, p.B*p.Hkv*p.Nk*p.D
	pk, err := cut(packed, oLen, lLen, lLen)
	if err != nil {
		return true, err
	}
	dpk, err := cut(dPacked, oLen, lLen)
	if err != nil {
		return true, err
	}
	g, err := cut(grads, oLen, kLen, kLen)
	if err != nil {
		return true, err
	}
	dp := deviceParams(p)
	dp.Q, dp.K, dp.V = q, k, v
	dp.O, dp.L, dp.LRes = pk[0], pk[1], pk[2]
	dp.DO, dp.DL = dpk[0], dpk[1]
	dp.DQ, dp.DK, dp.DV = g[0], g[1], g[2]
	return cuda.Offloaded(device.backward(dp))
}
