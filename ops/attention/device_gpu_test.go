//go:build gpu

package attention

import (
	"math"
	"math/rand"
	"testing"

	"github.com/flashgorgon/flashgorgon/cuda"
)

// TestDeviceVersusCPU runs the forward and backward of the whole forward grid through the
// device branch of forwardCompute and backwardCompute and through the CPU kernels, and
// compares both with the float64 oracle: float64 to 1e-12 (max error relative to the largest
// entry); float32 to a 2-norm error within max(4× the CPU kernels' own, 2e-6) and a max error
// within max(8× the CPU kernels' own, 4e-6). The float32 device kernels accumulate scores,
// outputs and gradients in float32 registers (dP and delta in float64), where the CPU kernels
// sum in float64, so they are several times less accurate than the CPU op: on this grid (H100,
// 2026-11-22) up to 7× in the 2-norm and 11× in the max norm, errors at most 1.3e-6 and 2.8e-6.
// The absolute floors are 30–70 float32 roundings; a wrong mask or index gives errors above
// 1e-3. It skips unless a device is in use (a gpu build on a machine with a GPU); the rest of
// this package's tests then exercise the device path too.
func TestDeviceVersusCPU(t *testing.T) {
	if !cuda.Enabled() {
		t.Skipf("no CUDA device in use (%s)", cuda.Device())
	}
	rng := rand.New(rand.NewSource(11))
	var worst64, worstRatio, worstRatio2, worst32, worst32n2 float64
	for _, pr := range gridProblems() {
		p := &params{B: pr.B, H: pr.H, Hkv: pr.Hkv, Nq: pr.Nq, Nk: pr.Nk, D: pr.D, Scale: pr.scale(),
			Causal: pr.Opts.Causal, KeyLengths: pr.Opts.KeyLengths}
		q, k, v := pr.inputs(rng)
		do, dl := randn(rng, pr.qLen()), randn(rng, pr.lLen())
		for _, f64 := range []bool{true, false} {
			var e [2][2][5]float64 // [device, cpu][max, 2-norm][O, L, dQ, dK, dV] errors against the oracle
			if f64 {
				e[0], e[1] = deviceAndCPU(t, p, q, k, v, do, dl)
			} else {
				q32, k32, v32 := convert[float32](q), convert[float32](k), convert[float32](v)
				do32, dl32 := convert[float32](do), convert[float32](dl)
				e[0], e[1] = deviceAndCPU(t, p, q32, k32, v32, do32, dl32)
			}
			for i, name := range []string{"O", "L", "dQ", "dK", "dV"} {
				dev, cpu := e[0][0][i], e[1][0][i]
				dev2, cpu2 := e[0][1][i], e[1][1][i]
				switch {
				case f64 && dev > 1e-12:
					t.Errorf("%v float64 %s: device error %.3g > 1e-12 (CPU %.3g)", pr, name, dev, cpu)
				case !f64 && dev > math.Max(8*cpu, 4e-6):
					t.Errorf("%v float32 %s: device max error %.3g > max(8× CPU's %.3g, 4e-6)", pr, name, dev, cpu)
				case !f64 && dev2 > math.Max(4*cpu2, 2e-6):
					t.Errorf("%v float32 %s: device 2-norm error %.3g > max(4× CPU's %.3g, 2e-6)", pr, name, dev2, cpu2)
				}
				if f64 {
					worst64 = math.Max(worst64, dev)
				} else if cpu > 0 {
					worstRatio = math.Max(worstRatio, dev/cpu)
				}
				if !f64 && cpu2 > 0 {
					worstRatio2 = math.Max(worstRatio2, dev2/cpu2)
				}
				if !f64 {
					worst32, worst32n2 = math.Max(worst32, dev), math.Max(worst32n2, dev2)
				}
			}
		}
	}
	t.Logf("%d problems on %s: worst float64 error %.3g; worst float32 error %.3g (max norm), %.3g (2-norm); worst float32 device/CPU error ratio %.3g (max norm), %.3g (2-norm)",
		len(gridProblems()), cuda.Device(), worst64, worst32, worst32n2, worstRatio, worstRatio2)
}

// deviceAndCPU runs one problem through the device branch and through the CPU kernels and
// returns their errors against the float64 oracle (evaluated on the same, possibly
// float32-rounded, inputs) for O, L, dQ, dK, dV: the max error relative to the largest entry
// and the 2-norm error.
func deviceAndCPU[T Float](t *testing.T, p *params, q, k, v, do, dl []T) (dev, cpu [2][5]float64) {
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
	dev = errs(packed, grads, oLen, lLen, kLen, wantO, wantL, wantDQ, wantDK, wantDV)
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
	cpu = errs(cPacked, cGrads, oLen, lLen, kLen, wantO, wantL, wantDQ, wantDK, wantDV)
	return dev, cpu
}

// errs measures packed [O | L | …] and grads [dQ | dK | dV] against the oracle.
func errs[T Float](packed, grads []T, oLen, lLen, kLen int, o, l, dq, dk, dv []float64) (e [2][5]float64) {
	got := [][]T{packed[:oLen], packed[oLen : oLen+lLen], grads[:oLen], grads[oLen : oLen+kLen], grads[oLen+kLen:]}
	want := [][]float64{o, l, dq, dk, dv}
	for i := range got {
		e[0][i], e[1][i] = relErr(got[i], want[i]), rmsErr(got[i], want[i])
	}
	e[0][1] = maxAbsErr(got[1], l) / math.Max(1, maxAbs(l)) // L: absolute, as the package's tests measure it
	return e
}
