package softmax

import (
	"math"
	"math/rand"
	"testing"
)

func TestExpAccuracy(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	worst, worstX := 0.0, 0.0
	check := func(x float64) {
		got, want := exp(x), math.Exp(x)
		if want == 0 || math.IsInf(want, 0) {
			if got != want {
				t.Fatalf("exp(%v) = %v, math.Exp gives %v", x, got, want)
			}
			return
		}
		if rel := math.Abs(got-want) / want; rel > worst {
			worst, worstX = rel, x
		}
	}
	for i := 0; i < 200000; i++ {
		check(-rng.Float64() * 40)          // where softmax arguments live
		check((rng.Float64() - 0.5) * 1500) // the whole range, both tails
	}
	for _, x := range []float64{0, -0.0, 1e-300, -1e-300, -708, 708.9, -707.99, -745, -746, 709.8, 710} {
		check(x)
	}
	const ulp = 0x1p-52
	if worst > 3*ulp {
		t.Errorf("exp: worst relative error %.3g (%.2f ulp) at x = %v, want ≤ 3 ulp", worst, worst/ulp, worstX)
	}
	for _, c := range []struct{ x, want float64 }{
		{math.Inf(-1), 0},
		{math.Inf(1), math.Inf(1)},
	} {
		if got := exp(c.x); got != c.want {
			t.Errorf("exp(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if got := exp(math.NaN()); !math.IsNaN(got) {
		t.Errorf("exp(NaN) = %v, want NaN", got)
	}
}

var expSink float64

func BenchmarkExp(b *testing.B) {
	xs := make([]float64, 4096)
	for i := range xs {
		xs[i] = -float64(i%97) * 0.173
	}
	for _, c := range []struct {
		name string
		f    func(float64) float64
	}{{"fast", exp}, {"math", math.Exp}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				s := 0.0
				for _, x := range xs {
					s += c.f(x)
				}
				expSink = s
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(xs)), "ns/exp")
		})
	}
}

func TestExpShiftSum(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	x := make([]float64, 1000)
	for i := range x {
		x[i] = rng.NormFloat64() * 300
	}
	x[3], x[4], x[5] = math.Inf(-1), math.NaN(), -800
	for _, m := range []float64{0, 400, -5} {
		dst := make([]float64, len(x))
		expShiftSum(dst, x, m)
		for i, v := range x {
			want := math.Exp(v - m)
			if !(math.Abs(dst[i]-want) <= 3*0x1p-52*want) && !(math.IsNaN(want) && math.IsNaN(dst[i])) && dst[i] != want {
				t.Fatalf("expShiftSum: e^(%v − %v) = %v, math.Exp gives %v", v, m, dst[i], want)
			}
		}
		x32 := make([]float32, 10)
		for i := range x32 {
			x32[i] = float32(x[i] / 100)
		}
		want := 0.0
		for _, v := range x32 {
			want += math.Exp(float64(v) - 1)
		}
		if got := expShiftSum(nil, x32, 1); math.Abs(got-want) > 1e-14*want {
			t.Errorf("expShiftSum(nil, float32 x, 1) = %v, want %v", got, want)
		}
	}
}
