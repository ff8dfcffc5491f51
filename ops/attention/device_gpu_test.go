//go:build gpu

package attention

import (
	"math"
	"math/rand"
	"testing"

	"github.com/flashgorgon/flashgorgon/cuda"
)

// TestDeviceVersusCPU runs the forward and backward of the whole forward grid through the
// device branch of forwardCompute and backwardCompute and through the CPU kernels directly,
// and compares both with the float64 oracle: float64 to 1e-12 (normwise), float32 within 4×
// the CPU kernels' own error (plus a few roundings). It also requires the device to be the
// one running (the gpu build on a machine with a GPU); otherwise it skips. The rest of this
// package's tests, run in a gpu build on such a machine, exercise the device path too.
func TestDeviceVersusCPU(t *testing.T) {
	if !cuda.Enabled() {
		t.Skipf("no CUDA device in use (%s)", cuda.Device())
	}
	rng := rand.New(rand.NewSource(11))
	var worst64, worstRatio float64
	for _, pr := range gridProblems() {
		p := &params{B: pr.B, H: pr.H, Hkv: pr.Hkv, Nq: pr.Nq, Nk: pr.Nk, D: pr.D, Scale: pr.scale(),
			Causal: pr.Opts.Causal, KeyLengths: pr.Opts.KeyLengths}
		q, k, v := pr.inputs(rng)
		do, dl := randn(rng, pr.qLen()), randn(rng, pr.lLen())
		for _, f64 := range []bool{true, false} {
			var e [2][5]float64 // [device, cpu][O, L, dQ, dK, dV] errors against the oracle
			if f64 {
				e[0], e[1] = deviceAndCPU(t, p, q, k, v, do, dl)
			} else {
				q32, k32, v32 := convert[float32](q), convert[float32](k), convert[float32](v)
				do32, dl32 := convert[float32](do), convert[float32](dl)
				e[0], e[1] = deviceAndCPU(t, p, q32, k32, v32, do32, dl32)
			}
			for i, name := range []string{"O", "L", "dQ", "dK", "dV"} {
				dev, cpu := e[0][i], e[1][i]
				switch {
				case f64 && dev > 1e-12:
					t.Errorf("%v float64 %s: device error %.3g > 1e-12 (CPU %.3g)", pr, name, dev, cpu)
				case !f64 && dev > 4*cpu+floor32:
					t.Errorf("%v float32 %s: device error %.3g > 4× CPU error %.3g", pr, name, dev, cpu)
				}
				if f64 {
					worst64 = math.Max(worst64, dev)
				} else if cpu > 0 {
					worstRatio = math.Max(worstRatio, dev/cpu)
				}
			}
		}
	}
	t.Logf("%d problems on %s: worst float64 error %.3g; worst float32 device/CPU error ratio %.3g",
		len(gridProblems()), cuda.Device(), worst64, worstRatio)
}

// deviceAndCPU runs one problem through the device branch and through the CPU kernels and
// returns their normwise errors against the float64 oracle (evaluated on the same, possibly
// float32-rounded, inputs) for O, L, dQ, dK, dV.
func deviceAndCPU[T Float](t *testing.T, p *params, q, k, v, do, dl []T) (dev, cpu [5]float64) {
	t.Helper()
	oLen, lLen, kLen := p.B*p.H*p.Nq*p.D, p.B*p.H*p.Nq, p.B*p.Hkv*p.Nk*p.D
	n := &naiveProblem{B: p.B, H: p.H, Hkv: p.Hkv, Nq: p.Nq, Nk: p.Nk, D: p.D, Scale: p.Scale, Causal: p.Causal,
		KeyLengths: p.KeyLengths, Q: convert[float64](q), K: convert[float64](k), V: convert[float64](v)}
	wantO, wantL := n.forward()
	wantDQ, wantDK, wantDV := n.backward(convert[float64](do), convert[float64](dl))

	// Device: through the device branch, as forwardCompute and backwardCompute take it.
	packed := make([]T, oLen+2*lLen)
	if done, err := deviceForward(p, q, k, v, packed); !done || err != nil {
		t.Fatalf("%+v: device forward ran %v: %v", *p, done, err)
	}
	dPacked := append(append(append([]T(nil), do...), dl...), make([]T, lLen)...)
	grads := make([]T, oLen+2*kLen)
	if done, err := deviceBackward(p, q, k, v, packed, dPacked, grads); !done || err != nil {
		t.Fatalf("%+v: device backward ran %v: %v", *p, done, err)
	}
	dev = [5]float64{relErr(packed[:oLen], wantO), maxAbsErr(packed[oLen:oLen+lLen], wantL) / math.Max(1, maxAbs(wantL)),
		relErr(grads[:oLen], wantDQ), relErr(grads[oLen:oLen+kLen], wantDK), relErr(grads[oLen+kLen:], wantDV)}
	if !sameInf(packed[oLen:oLen+lLen], wantL) {
		t.Errorf("%+v: device L is −Inf at other rows than the oracle's", *p)
	}

	// CPU kernels, through the same entry points with the device branch off.
	cpuOnly = true
	defer func() { cpuOnly = false }()
	cPacked, cGrads := make([]T, len(packed)), make([]T, len(grads))
	if err := forwardCompute(p, q, k, v, cPacked); err != nil {
		t.Fatal(err)
	}
	if err := backwardCompute(p, q, k, v, cPacked, dPacked, cGrads); err != nil {
		t.Fatal(err)
	}
	cpu = [5]float64{relErr(cPacked[:oLen], wantO), maxAbsErr(cPacked[oLen:oLen+lLen], wantL) / math.Max(1, maxAbs(wantL)),
		relErr(cGrads[:oLen], wantDQ), relErr(cGrads[oLen:oLen+kLen], wantDK), relErr(cGrads[oLen+kLen:], wantDV)}
	return dev, cpu
}
