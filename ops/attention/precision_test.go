package attention

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/flashgorgon/flashgorgon/cuda"
)

// Tests of Options.Precision: it reaches the device launchers in both directions, the CPU
// kernels ignore it, an unknown value is refused, and on a GPU it selects the arithmetic.

var allPrecisions = []cuda.Precision{cuda.PrecisionFMA, cuda.PrecisionExact, cuda.PrecisionTF32, cuda.PrecisionBF16}

// TestPrecisionReachesDevice runs the op with stand-in launchers (no GPU needed) that record
// the precision they are given and report no device, so the CPU computes the result.
func TestPrecisionReachesDevice(t *testing.T) {
	saved, was := device, cpuOnly
	defer func() { device, cpuOnly = saved, was }()
	cpuOnly = false
	pr := problem{B: 1, H: 2, Hkv: 1, Nq: 4, Nk: 6, D: 8, Opts: Options{Causal: true}}
	rng := rand.New(rand.NewSource(21))
	q, k, v := pr.inputs(rng)
	do := randn(rng, pr.qLen())
	for _, prec := range allPrecisions {
		var fwd, bwd []cuda.Precision
		device.enabled = func() bool { return true }
		device.forward = func(p cuda.AttentionParams) error { fwd = append(fwd, p.Precision); return cuda.ErrNoDevice }
		device.backward = func(p cuda.AttentionParams) error { bwd = append(bwd, p.Precision); return cuda.ErrNoDevice }
		pr.Opts.Precision = prec
		if _, _, _, err := gradients(pr, fused, convert[float32](q), convert[float32](k), convert[float32](v), convert[float32](do), nil); err != nil {
			t.Fatal(err)
		}
		if len(fwd) != 1 || len(bwd) != 1 || fwd[0] != prec || bwd[0] != prec {
			t.Errorf("Precision %v: the forward launcher got %v, the backward %v", prec, fwd, bwd)
		}
	}
}

// TestPrecisionCPUIgnored checks that every precision gives the CPU kernels' result bit for
// bit, in float32 and float64 (the CPU always computes in the element type).
func TestPrecisionCPUIgnored(t *testing.T) {
	was := cpuOnly
	defer func() { cpuOnly = was }()
	cpuOnly = true
	pr := problem{B: 2, H: 2, Hkv: 1, Nq: 17, Nk: 23, D: 64, Opts: Options{Causal: true, KeyLengths: []int{23, 9}}}
	rng := rand.New(rand.NewSource(22))
	q, k, v := pr.inputs(rng)
	do, dl := randn(rng, pr.qLen()), randn(rng, pr.lLen())
	run := func(prec cuda.Precision, f64 bool) [5][]float64 {
		pr := pr
		pr.Opts.Precision = prec
		if f64 {
			o, l, err := forward(pr, fused, q, k, v)
			if err != nil {
				t.Fatal(err)
			}
			dq, dk, dv, err := gradients(pr, fused, q, k, v, do, dl)
			if err != nil {
				t.Fatal(err)
			}
			return [5][]float64{o, l, dq, dk, dv}
		}
		q32, k32, v32 := convert[float32](q), convert[float32](k), convert[float32](v)
		o, l, err := forward(pr, fused, q32, k32, v32)
		if err != nil {
			t.Fatal(err)
		}
		dq, dk, dv, err := gradients(pr, fused, q32, k32, v32, convert[float32](do), convert[float32](dl))
		if err != nil {
			t.Fatal(err)
		}
		return [5][]float64{convert[float64](o), convert[float64](l), convert[float64](dq), convert[float64](dk), convert[float64](dv)}
	}
	for _, f64 := range []bool{false, true} {
		want := run(cuda.PrecisionFMA, f64)
		for _, prec := range allPrecisions[1:] {
			got := run(prec, f64)
			for i, name := range []string{"o", "lse", "dq", "dk", "dv"} {
				for j := range want[i] {
					if math.Float64bits(got[i][j]) != math.Float64bits(want[i][j]) {
						t.Fatalf("f64=%t %v: %s[%d] = %v, %v with PrecisionFMA", f64, prec, name, j, got[i][j], want[i][j])
					}
				}
			}
		}
	}
	pr.Opts.Precision = 9
	if _, _, err := forward(pr, fused, q, k, v); err == nil || !strings.Contains(err.Error(), "Precision(9)") {
		t.Errorf("Precision 9: error %v, want one naming Precision(9)", err)
	}
}

// TestPrecisionDevice runs a float32 problem the tensor-core kernels cover (d = 64) through the
// op on the device in every precision and checks o and the gradients against the float64
// oracle: FMA and Exact within float32-level errors (2e-5 relative to the largest entry),
// TF32 and BF16 within their roundings (1e-2, 5e-2) but above 1e-5: had the option not reached
// the kernels, TF32 and BF16 would show FMA's errors (~1e-6). It skips without a device.
func TestPrecisionDevice(t *testing.T) {
	if !cuda.Enabled() {
		t.Skipf("no CUDA device in use (%s)", cuda.Device())
	}
	pr := problem{B: 2, H: 4, Hkv: 2, Nq: 70, Nk: 90, D: 64, Opts: Options{Causal: true, KeyLengths: []int{90, 41}}}
	rng := rand.New(rand.NewSource(23))
	q, k, v := pr.inputs(rng)
	do := randn(rng, pr.qLen())
	q32, k32, v32, do32 := convert[float32](q), convert[float32](k), convert[float32](v), convert[float32](do)
	oracle := pr.naive(convert[float64](q32), convert[float64](k32), convert[float64](v32))
	wantO, _ := oracle.forward()
	wq, wk, wv := oracle.backward(convert[float64](do32), nil)
	bounds := map[cuda.Precision][2]float64{ // [lower, upper] bound of the largest error
		cuda.PrecisionFMA: {0, 2e-5}, cuda.PrecisionExact: {0, 2e-5}, cuda.PrecisionTF32: {1e-5, 1e-2}, cuda.PrecisionBF16: {1e-5, 5e-2}}
	for _, prec := range allPrecisions {
		pr.Opts.Precision = prec
		o, _, err := forward(pr, fused, q32, k32, v32)
		if err != nil {
			t.Fatal(err)
		}
		dq, dk, dv, err := gradients(pr, fused, q32, k32, v32, do32, nil)
		if err != nil {
			t.Fatal(err)
		}
		b := bounds[prec]
		for _, x := range []struct {
			name string
			got  []float32
			want []float64
		}{{"o", o, wantO}, {"dq", dq, wq}, {"dk", dk, wk}, {"dv", dv, wv}} {
			e := relErr(x.got, x.want)
			if e < b[0] || e > b[1] {
				t.Errorf("%v %s: error %.3g against the float64 oracle, want it in [%g, %g]", prec, x.name, e, b[0], b[1])
			}
			t.Logf("%v %s: error %.3g", prec, x.name, e)
		}
	}
}
