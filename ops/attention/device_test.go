package attention

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/flashgorgon/flashgorgon/cuda"
)

// TestDeviceVersusCPU runs the forward and backward of the whole forward grid (shortGridProblems
// under -short) through the device branch of forwardCompute and backwardCompute and through the CPU kernels, and
// compares both with the float64 oracle: float64 to 1e-12 (max error relative to the largest
// entry); float32 to a 2-norm error within max(4× the CPU kernels' own, 2e-6) and a max error
// within max(8× the CPU kernels' own, 4e-6). The float32 device kernels accumulate scores,
// outputs and gradients in float32 registers (the tensor-core kernels of the default Exact
// precision in float32 chains of 16), where the CPU kernels sum in float64, so they are
// several times less accurate than the CPU op: on this grid (H100, 2026-11-23, Exact default)
// up to 9.5× in the 2-norm and 20× in the max norm, errors at most 1.5e-6 and 3.0e-6 (FMA
// kernels, 2026-11-22: 7× and 11×, 1.3e-6 and 2.8e-6).
// The absolute floors are 30–70 float32 roundings; a wrong mask or index gives errors above
// 1e-3. It skips unless a device is in use (a machine with a GPU); the rest of
// this package's tests then exercise the device path too.
func TestDeviceVersusCPU(t *testing.T) {
	if !cuda.Enabled() {
		t.Skipf("no CUDA device in use (%s)", cuda.Device())
	}
	rng := rand.New(rand.NewSource(11))
	var worst64, worstRatio, worstRatio2, worst32, worst32n2 float64
	// The inputs are drawn in order, then the float64 oracles (the naive loops: most of the
	// test's time) of every problem, on its float64 and on its float32-rounded inputs, are
	// computed over all cores; the device and CPU runs go one after another.
	type inputs struct {
		q, k, v, do, dl []float64
		want            [2]oracle // [float64, float32] inputs
	}
	probs := testGrid()
	in := make([]inputs, len(probs))
	for i, pr := range probs {
		q, k, v := pr.inputs(rng)
		in[i] = inputs{q: q, k: k, v: v, do: randn(rng, pr.qLen()), dl: randn(rng, pr.lLen())}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.NumCPU())
	for i, pr := range probs {
		p := deviceParams(pr)
		for j, round := range []func([]float64) []float64{nil, roundTo32} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				x := in[i]
				if round != nil {
					x.q, x.k, x.v, x.do, x.dl = round(x.q), round(x.k), round(x.v), round(x.do), round(x.dl)
				}
				in[i].want[j] = oracleOf(p, x.q, x.k, x.v, x.do, x.dl)
			}()
		}
	}
	wg.Wait()
	for i, pr := range probs {
		p := deviceParams(pr)
		q, k, v, do, dl := in[i].q, in[i].k, in[i].v, in[i].do, in[i].dl
		for _, f64 := range []bool{true, false} {
			var e [2][2][5]float64 // [device, cpu][max, 2-norm][O, L, dQ, dK, dV] errors against the oracle
			if f64 {
				e[0], e[1] = deviceAndCPU(t, p, in[i].want[0], q, k, v, do, dl)
			} else {
				q32, k32, v32 := convert[float32](q), convert[float32](k), convert[float32](v)
				do32, dl32 := convert[float32](do), convert[float32](dl)
				e[0], e[1] = deviceAndCPU(t, p, in[i].want[1], q32, k32, v32, do32, dl32)
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
		len(testGrid()), cuda.Device(), worst64, worst32, worst32n2, worstRatio, worstRatio2)
}

// roundTo32 returns x rounded to float32, in float64.
func roundTo32(x []float64) []float64 { return convert[float64](convert[float32](x)) }

// deviceParams is pr as the compute seam takes it.
func deviceParams(pr problem) *params {
	return &params{B: pr.B, H: pr.H, Hkv: pr.Hkv, Nq: pr.Nq, Nk: pr.Nk, D: pr.D, Scale: pr.scale(),
		Causal: pr.Opts.Causal, KeyLengths: pr.Opts.KeyLengths}
}

// oracle holds the float64 oracle's O, L, dQ, dK, dV of one problem.
type oracle struct{ o, l, dq, dk, dv []float64 }

// oracleOf evaluates the naive float64 loops on the inputs (converted to float64).
func oracleOf[T Float](p *params, q, k, v, do, dl []T) (w oracle) {
	n := &naiveProblem{B: p.B, H: p.H, Hkv: p.Hkv, Nq: p.Nq, Nk: p.Nk, D: p.D, Scale: p.Scale, Causal: p.Causal,
		KeyLengths: p.KeyLengths, Q: convert[float64](q), K: convert[float64](k), V: convert[float64](v)}
	w.o, w.l = n.forward()
	w.dq, w.dk, w.dv = n.backward(convert[float64](do), convert[float64](dl))
	return w
}

// deviceAndCPU runs one problem through the device branch and through the CPU kernels and
// returns their errors against the float64 oracle want (oracleOf the same, possibly
// float32-rounded, inputs) for O, L, dQ, dK, dV: the max error relative to the largest entry
// and the 2-norm error.
func deviceAndCPU[T Float](t *testing.T, p *params, want oracle, q, k, v, do, dl []T) (dev, cpu [2][5]float64) {
	t.Helper()
	oLen, lLen, kLen := p.B*p.H*p.Nq*p.D, p.B*p.H*p.Nq, p.B*p.Hkv*p.Nk*p.D
	wantO, wantL, wantDQ, wantDK, wantDV := want.o, want.l, want.dq, want.dk, want.dv

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

// TestDeviceMaskedKeysInert runs the problems of TestPaddedKeysInert (issue 8's reproduction,
// lengths 1, 17, 127, 129 around the tiles, GQA, causal with padding, batch elements without a
// key) through the device branch of forwardCompute and backwardCompute with NaN, +Inf, -Inf or
// a mix of those and ±1e30 in every padded key of k and v. Padded keys must never be read: O,
// L, dQ, dK, dV must be bit-identical to the device run with ordinary random padding, within
// TestDeviceVersusCPU's limits of the float64 oracle (which only reads visible keys) — which
// also rules out NaN and Inf — and dK, dV of the padded keys exactly 0. The CPU kernels are
// held to the same limits on the same poisoned inputs.
func TestDeviceMaskedKeysInert(t *testing.T) {
	if !cuda.Enabled() {
		t.Skipf("no CUDA device in use (%s)", cuda.Device())
	}
	rng := rand.New(rand.NewSource(23))
	for n, pr := range paddingProblems {
		p := &params{B: pr.B, H: pr.H, Hkv: pr.Hkv, Nq: pr.Nq, Nk: pr.Nk, D: pr.D, Scale: pr.scale(),
			Causal: pr.Opts.Causal, KeyLengths: pr.Opts.KeyLengths}
		padded := func(b, j int) bool { return j >= pr.Opts.KeyLengths[b] }
		q, k, v := pr.inputs(rng)
		do, dl := randn(rng, pr.qLen()), randn(rng, pr.lLen())
		for _, kind := range poisons {
			kp, vp, _ := poisonKeys(pr, k, v, kind, rng, padded)
			t.Run(fmt.Sprintf("%d/%v/%s", n, pr, kind), func(t *testing.T) {
				checkDeviceInert(t, p, q, k, v, kp, vp, do, dl, padded)
				checkDeviceInert(t, p, convert[float32](q), convert[float32](k), convert[float32](v),
					convert[float32](kp), convert[float32](vp), convert[float32](do), convert[float32](dl), padded)
			})
		}
	}
}

// checkDeviceInert is TestDeviceMaskedKeysInert for one element type.
func checkDeviceInert[T Float](t *testing.T, p *params, q, k, v, kp, vp, do, dl []T, masked func(b, j int) bool) {
	t.Helper()
	var elem T
	f64 := sizeOf(elem) == 8
	clean, cleanGrads := deviceRun(t, p, q, k, v, do, dl)
	got, grads := deviceRun(t, p, q, kp, vp, do, dl)
	for i := range got {
		if math.Float64bits(float64(got[i])) != math.Float64bits(float64(clean[i])) {
			t.Fatalf("packed [O | L | residual][%d] = %v with poisoned padding, %v without", i, got[i], clean[i])
		}
	}
	for i := range grads {
		if math.Float64bits(float64(grads[i])) != math.Float64bits(float64(cleanGrads[i])) {
			t.Fatalf("[dQ | dK | dV][%d] = %v with poisoned padding, %v without", i, grads[i], cleanGrads[i])
		}
	}
	e := [2][2][5]float64{}
	e[0], e[1] = deviceAndCPU(t, p, oracleOf(p, q, kp, vp, do, dl), q, kp, vp, do, dl)
	for i, name := range []string{"O", "L", "dQ", "dK", "dV"} {
		dev, cpu, dev2, cpu2 := e[0][0][i], e[1][0][i], e[0][1][i], e[1][1][i]
		switch {
		case math.IsInf(dev, 0) || math.IsInf(cpu, 0):
			t.Errorf("%s: non-finite where the oracle is finite (device error %v, CPU %v)", name, dev, cpu)
		case f64 && (dev > 1e-12 || cpu > 1e-12):
			t.Errorf("float64 %s: device error %.3g, CPU %.3g (limit 1e-12)", name, dev, cpu)
		case !f64 && dev > math.Max(8*cpu, 4e-6):
			t.Errorf("float32 %s: device max error %.3g > max(8× CPU's %.3g, 4e-6)", name, dev, cpu)
		case !f64 && dev2 > math.Max(4*cpu2, 2e-6):
			t.Errorf("float32 %s: device 2-norm error %.3g > max(4× CPU's %.3g, 2e-6)", name, dev2, cpu2)
		}
	}
	kLen := p.B * p.Hkv * p.Nk * p.D
	dk, dv := grads[len(grads)-2*kLen:len(grads)-kLen], grads[len(grads)-kLen:]
	for b := 0; b < p.B; b++ {
		for g := 0; g < p.Hkv; g++ {
			for j := 0; j < p.Nk; j++ {
				if !masked(b, j) {
					continue
				}
				at := ((b*p.Hkv+g)*p.Nk + j) * p.D
				for c := 0; c < p.D; c++ {
					if dk[at+c] != 0 || dv[at+c] != 0 {
						t.Fatalf("padded key (b %d, g %d, j %d): dK = %v, dV = %v, want 0", b, g, j, dk[at:at+p.D], dv[at:at+p.D])
					}
				}
			}
		}
	}
}

// deviceRun runs the device branch forward and backward and returns packed [O | L | residual]
// and grads [dQ | dK | dV].
func deviceRun[T Float](t *testing.T, p *params, q, k, v, do, dl []T) (packed, grads []T) {
	t.Helper()
	oLen, lLen, kLen := p.B*p.H*p.Nq*p.D, p.B*p.H*p.Nq, p.B*p.Hkv*p.Nk*p.D
	packed = make([]T, oLen+2*lLen)
	if done, err := deviceForward(p, q, k, v, packed); !done || err != nil {
		t.Fatalf("%+v: device forward ran %v: %v", *p, done, err)
	}
	dPacked := append(append(append([]T(nil), do...), dl...), make([]T, lLen)...)
	grads = make([]T, oLen+2*kLen)
	if done, err := deviceBackward(p, q, k, v, packed, dPacked, grads); !done || err != nil {
		t.Fatalf("%+v: device backward ran %v: %v", *p, done, err)
	}
	return packed, grads
}

// TestDeviceFailurePolicy checks the one device-failure policy (cuda.Offloaded) through the
// op on a TapeMachine, with stand-in launchers (no GPU needed): a device failure in the
// forward or the backward is the op's error, naming the op and the CUDA error, and is not
// computed again on the CPU; no device or a problem the kernels do not cover gives the CPU's
// result, checked against the float64 oracle.
func TestDeviceFailurePolicy(t *testing.T) {
	fault := &cuda.Error{Op: "attention forward", Call: "cuLaunchKernel(fg_attn_fwd_v2_f64_d32_m32_n32_r8_c16)", Code: 719,
		Name: "CUDA_ERROR_LAUNCH_FAILED", Msg: "unspecified launch failure"}
	unsupported := fmt.Errorf("cuda: attention forward: D=300 over the kernels' limit 256: %w", cuda.ErrUnsupported)
	saved, was := device, cpuOnly
	defer func() { device, cpuOnly = saved, was }()
	cpuOnly = false
	pr := problem{B: 2, H: 2, Hkv: 1, Nq: 5, Nk: 7, D: 3, Opts: Options{Causal: true, KeyLengths: []int{7, 4}}}
	rng := rand.New(rand.NewSource(8))
	q, k, v := pr.inputs(rng)
	do := randn(rng, pr.qLen())
	// Each case: what the forward's and the backward's launchers return, and
	// whether the op must fail (else it gives the CPU's result).
	for _, c := range []struct {
		name     string
		fwd, bwd error
		fails    bool
	}{
		{"forward fault", fault, nil, true},
		{"backward fault after an unsupported forward", unsupported, fault, true},
		{"no device, then lost", cuda.ErrNoDevice, fmt.Errorf("lost: %w", cuda.ErrNoDevice), false},
		{"unsupported both ways", unsupported, unsupported, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var fwdCalls, bwdCalls int
			device.enabled = func() bool { return true }
			device.forward = func(cuda.AttentionParams) error { fwdCalls++; return c.fwd }
			device.backward = func(cuda.AttentionParams) error { bwdCalls++; return c.bwd }
			dq, dk, dv, err := gradients(pr, fused, q, k, v, do, nil)
			if fwdCalls != 1 || bwdCalls != map[bool]int{true: 0, false: 1}[c.fwd == fault] {
				t.Fatalf("the device launchers were called %d (forward) and %d (backward) times", fwdCalls, bwdCalls)
			}
			if c.fails {
				// Gorgonia's VM wraps errors without Unwrap: the text is what reaches the caller.
				if err == nil || !strings.Contains(err.Error(), fault.Name) || !strings.Contains(err.Error(), "attention") {
					t.Fatalf("error %v, want the op's error naming it and the CUDA error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wq, wk, wv := pr.naive(q, k, v).backward(do, nil)
			for _, g := range []struct {
				name      string
				got, want []float64
			}{{"dq", dq, wq}, {"dk", dk, wk}, {"dv", dv, wv}} {
				if e := maxAbsErr(g.got, g.want); e > 1e-12 {
					t.Errorf("%s: max error %g against the float64 oracle", g.name, e)
				}
			}
		})
	}
	// Below the VM, the compute returns the *cuda.Error itself.
	device.forward = func(cuda.AttentionParams) error { return fault }
	p := &params{B: pr.B, H: pr.H, Hkv: pr.Hkv, Nq: pr.Nq, Nk: pr.Nk, D: pr.D, Scale: pr.scale(),
		Causal: pr.Opts.Causal, KeyLengths: pr.Opts.KeyLengths}
	err := forwardCompute(p, q, k, v, make([]float64, pr.qLen()+2*pr.lLen()))
	if ce := (*cuda.Error)(nil); !errors.As(err, &ce) || ce != fault {
		t.Errorf("forwardCompute: error %v, want the *cuda.Error", err)
	}
}
