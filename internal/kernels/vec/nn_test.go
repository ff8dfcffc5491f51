package vec

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// forEachNNLevel is forEachLevel with nn's kernels switched too.
func forEachNNLevel(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	for _, l := range isa.Supported() {
		t.Run(l.String(), func(t *testing.T) {
			defer useLevel(l)()
			old := nk32
			nk32 = nnKernelsFor(l)
			defer func() { nk32 = old }()
			f(t)
		})
	}
}

// nnLengths are row lengths around the vector widths and blocks.
var nnLengths = []int{1, 7, 16, 17, 64, 127, 129, 256, 300}

func randF32(rng *rand.Rand, n int, scale, offset float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64()*scale + offset)
	}
	return x
}

func to64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// geluRef is GPT-2's formula in float64, ½·x·(1 + tanh u), and its
// derivative, with ½(1 + tanh u) and 1 − tanh² u taken from e^{−2|u|}
// (no cancellation in 1 + tanh u for u ≪ 0).
func geluRef(v float64) (y, dy float64) {
	k := math.Sqrt(2 / math.Pi)
	u := k * (v + 0.044715*v*v*v)
	a := math.Exp(-2 * math.Abs(u))
	half := 1 / (1 + a)
	if u < 0 {
		half = a / (1 + a)
	}
	sech2 := 4 * a / ((1 + a) * (1 + a))
	return v * half, half + 0.5*v*sech2*k*(1+3*0.044715*v*v)
}

func TestGELURows(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	forEachNNLevel(t, func(t *testing.T) {
		for _, n := range []int{1, 15, 16, 17, 255, 256, 257, 1025} {
			x := randF32(rng, n, 3, 0)
			x[0] = -20 // e^{−2u} overflows: gelu = −0, gelu' = 0
			g := randF32(rng, n, 1, 0)
			y, dy := make([]float32, n), make([]float32, n)
			GELU(y, x)
			GELUGrad(dy, x, g)
			x64, g64 := to64(x), to64(g)
			y64, dy64 := make([]float64, n), make([]float64, n)
			GELU(y64, x64)
			GELUGrad(dy64, x64, g64)
			for i, v := range x64 {
				want, dwant := geluRef(v)
				dwant *= g64[i]
				if math.Abs(y64[i]-want) > 1e-14*(1+math.Abs(want)) || math.Abs(dy64[i]-dwant) > 1e-13*(1+math.Abs(dwant)) {
					t.Fatalf("n=%d float64 x=%g: gelu %g (want %g), g·gelu' %g (want %g)", n, v, y64[i], want, dy64[i], dwant)
				}
				// float32: a few ulp of the argument's rounding (see nn's TestGELUFloat32).
				u := math.Abs(0.8 * (v + 0.044715*v*v*v))
				tol := 4e-7 * (1 + 2*u)
				if math.Abs(float64(y[i])-want) > tol*(math.Abs(want)+1e-30) || math.Abs(float64(dy[i])-dwant) > tol*(math.Abs(dwant)+math.Abs(g64[i])*1e-3)+1e-7*math.Abs(g64[i]) {
					t.Fatalf("n=%d float32 x=%g: gelu %g (want %g), g·gelu' %g (want %g)", n, v, y[i], want, dy[i], dwant)
				}
			}
		}
	})
}

// normRef is LayerNorm / RMSNorm of one row and its gradient for upstream
// g, in float64 by the textbook formulas.
func normRef(x, g []float64, center bool, eps float64) (y, dx []float64) {
	n := float64(len(x))
	mu := 0.0
	if center {
		for _, v := range x {
			mu += v
		}
		mu /= n
	}
	vr := 0.0
	for _, v := range x {
		vr += (v - mu) * (v - mu)
	}
	r := 1 / math.Sqrt(vr/n+eps)
	y = make([]float64, len(x))
	mg, mgy := 0.0, 0.0
	for i, v := range x {
		y[i] = (v - mu) * r
		mg += g[i] / n
		mgy += g[i] * y[i] / n
	}
	if !center {
		mg = 0
	}
	dx = make([]float64, len(x))
	for i := range x {
		dx[i] = r * (g[i] - mg - y[i]*mgy)
	}
	return y, dx
}

func TestNormRows(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	forEachNNLevel(t, func(t *testing.T) {
		for _, d := range nnLengths {
			for _, center := range []bool{true, false} {
				t.Run(fmt.Sprintf("d=%d/center=%t", d, center), func(t *testing.T) {
					const rows = 3
					x := randF32(rng, rows*d, 2, 3)
					g := randF32(rng, rows*d, 1, 0)
					y, dx := make([]float32, len(x)), make([]float32, len(x))
					NormRows(y, x, d, center, 1e-5)
					NormGradRows(dx, x, g, d, center, 1e-5)
					x64, g64 := to64(x), to64(g)
					y64, dx64 := make([]float64, len(x)), make([]float64, len(x))
					NormRows(y64, x64, d, center, 1e-5)
					NormGradRows(dx64, x64, g64, d, center, 1e-5)
					for r := 0; r < rows; r++ {
						wy, wdx := normRef(x64[r*d:(r+1)*d], g64[r*d:(r+1)*d], center, 1e-5)
						for j := range wy {
							i := r*d + j
							if math.Abs(y64[i]-wy[j]) > 1e-12 || math.Abs(dx64[i]-wdx[j]) > 1e-12*(1+math.Abs(wdx[j])) {
								t.Fatalf("float64 row %d col %d: y %g (want %g), dx %g (want %g)", r, j, y64[i], wy[j], dx64[i], wdx[j])
							}
							// float32: the result rounded once, plus float64 noise.
							if math.Abs(float64(y[i])-wy[j]) > 1e-7*(1+math.Abs(wy[j])) || math.Abs(float64(dx[i])-wdx[j]) > 2e-7*(1+math.Abs(wdx[j])) {
								t.Fatalf("float32 row %d col %d: y %g (want %g), dx %g (want %g)", r, j, y[i], wy[j], dx[i], wdx[j])
							}
						}
					}
				})
			}
		}
	})
}

func TestAffineRows(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	forEachNNLevel(t, func(t *testing.T) {
		for _, d := range nnLengths {
			const rows = 3
			x := randF32(rng, rows*d, 1, 0)
			gamma, beta := randF32(rng, d, 1, 1), randF32(rng, d, 1, 0)
			for _, tc := range []struct{ g, b []float32 }{{gamma, beta}, {gamma, nil}, {nil, beta}} {
				y := make([]float32, len(x))
				AffineRows(y, x, tc.g, tc.b)
				for i, v := range x {
					want := v
					if tc.g != nil {
						want *= tc.g[i%d]
					}
					if tc.b != nil {
						want += tc.b[i%d]
					}
					if y[i] != want {
						t.Fatalf("d=%d γ=%t β=%t entry %d: %g, want %g", d, tc.g != nil, tc.b != nil, i, y[i], want)
					}
				}
			}
		}
	})
}

func TestColSums(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	forEachNNLevel(t, func(t *testing.T) {
		for _, d := range append(nnLengths, 192, 1024) {
			for _, rows := range []int{1, 5} {
				x, y := randF32(rng, rows*d, 1, 0), randF32(rng, rows*d, 1, 0)
				for _, prod := range []bool{false, true} {
					acc := make([]float64, d)
					want := make([]float64, d)
					for j := range acc {
						acc[j] = float64(j) // added to, not overwritten
						want[j] = float64(j)
					}
					var ys []float32
					if prod {
						ys = y
					}
					ColSums(acc, x, ys, d)
					// Each column summed from 0 in row order, products exact
					// in float64, then added: the same bits on every level.
					for j := 0; j < d; j++ {
						s := 0.0
						for r := 0; r < rows; r++ {
							v := float64(x[r*d+j])
							if prod {
								v *= float64(y[r*d+j])
							}
							s += v
						}
						want[j] += s
					}
					for j := range acc {
						if acc[j] != want[j] {
							t.Fatalf("d=%d rows=%d prod=%t column %d: %g, want %g", d, rows, prod, j, acc[j], want[j])
						}
					}
				}
			}
		}
	})
}

func TestAdamWRows(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	h := &AdamWStep{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, LR: 1e-3, Decay: 1e-4, C1: 1 - 0.9*0.9, C2: 1 - 0.95*0.95}
	forEachNNLevel(t, func(t *testing.T) {
		for _, n := range nnLengths {
			p, g := randF32(rng, n, 1, 0), randF32(rng, n, 1, 0)
			m, v := randF32(rng, n, 0.1, 0), randF32(rng, n, 0.1, 0)
			for i := range v {
				v[i] *= v[i]
			}
			// wp is the update as written in AdamW's doc; wq as computed,
			// with A = LR·√C2/C1 and E = Eps·√C2 (the same value up to
			// float64 rounding), which every variant must give bit for bit.
			wp, wq, wm, wv := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
			a, e := h.LR*math.Sqrt(h.C2)/h.C1, h.Eps*math.Sqrt(h.C2)
			for i := range p {
				gi := float64(g[i])
				mi := h.Beta1*float64(m[i]) + (1-h.Beta1)*gi
				vi := h.Beta2*float64(v[i]) + (1-h.Beta2)*gi*gi
				wm[i], wv[i] = mi, vi
				wp[i] = float64(p[i])*(1-h.Decay) - h.LR*(mi/h.C1)/(math.Sqrt(vi/h.C2)+h.Eps)
				wq[i] = float64(p[i])*(1-h.Decay) - (a*mi)/(math.Sqrt(vi)+e)
			}
			AdamW(p, g, m, v, h)
			for i := range p {
				if p[i] != float32(wq[i]) || m[i] != float32(wm[i]) || v[i] != float32(wv[i]) {
					t.Fatalf("n=%d entry %d: p, m, v = %g, %g, %g; want %g, %g, %g", n, i, p[i], m[i], v[i], wq[i], wm[i], wv[i])
				}
				if math.Abs(wq[i]-wp[i]) > 1e-15*math.Abs(wp[i]) {
					t.Fatalf("n=%d entry %d: p %g as computed, %g as written", n, i, wq[i], wp[i])
				}
			}
		}
	})
}

// TestAdamWFlush: float32 AdamW stores the moments m and v as 0, not as
// subnormals, where they fall below 2⁻¹²⁶ in magnitude (a zero gradient
// decaying m by β1 and v by β2 across 2⁻¹²⁶), at every level; the moments
// at or above it and the parameters are those of TestAdamWRows' formula
// bit for bit (the update reads the unrounded moments). float64 keeps its
// moments below 2⁻¹²⁶.
func TestAdamWFlush(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	h := &AdamWStep{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, LR: 1e-3, Decay: 1e-4, C1: 1 - math.Pow(0.9, 900), C2: 1 - math.Pow(0.95, 900)}
	a, e := h.LR*math.Sqrt(h.C2)/h.C1, h.Eps*math.Sqrt(h.C2)
	forEachNNLevel(t, func(t *testing.T) {
		const n = 301
		p, g, m, v := randF32(rng, n, 1, 0), make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range m {
			// m·β1 and v·β2 straddle 2⁻¹²⁶: below it for about half.
			m[i] = float32(0x1p-126 * (1 + 0.2*rng.Float64()))
			if i%2 == 1 {
				m[i] = -m[i]
			}
			v[i] = float32(0x1p-126 * (1 + 0.1*rng.Float64()))
			if i%7 == 3 { // a gradient: normal moments
				g[i] = float32(rng.NormFloat64() * 1e-3)
			}
		}
		wp, wm, wv := make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range p {
			gi := float64(g[i])
			wm[i] = h.Beta1*float64(m[i]) + (1-h.Beta1)*gi
			wv[i] = h.Beta2*float64(v[i]) + (1-h.Beta2)*gi*gi
			wp[i] = float64(p[i])*(1-h.Decay) - (a*wm[i])/(math.Sqrt(wv[i])+e)
		}
		AdamW(p, g, m, v, h)
		var flushed, kept [2]int
		for i := range p {
			if p[i] != float32(wp[i]) {
				t.Fatalf("entry %d: p = %g, want %g", i, p[i], wp[i])
			}
			for j, x := range []struct {
				got  float32
				want float64
			}{{m[i], wm[i]}, {v[i], wv[i]}} {
				switch {
				case math.Abs(x.want) < 0x1p-126:
					if x.got != 0 {
						t.Fatalf("entry %d: moment %d = %g, want 0 (%g is below 2^-126)", i, j, x.got, x.want)
					}
					flushed[j]++
				case x.got != float32(x.want):
					t.Fatalf("entry %d: moment %d = %g, want %g", i, j, x.got, float32(x.want))
				default:
					kept[j]++
				}
			}
		}
		if min(flushed[0], flushed[1], kept[0], kept[1]) == 0 {
			t.Fatalf("flushed %v, kept %v (m, v): the moments do not straddle 2^-126", flushed, kept)
		}
	})
	p, g, m, v := []float64{1}, []float64{0}, []float64{0x1p-130}, []float64{0x1p-140}
	AdamW(p, g, m, v, h)
	if m[0] != 0.9*0x1p-130 || v[0] != 0.95*0x1p-140 {
		t.Fatalf("float64 m, v = %g, %g; want %g, %g", m[0], v[0], 0.9*0x1p-130, 0.95*0x1p-140)
	}
}

func BenchmarkNNRows(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	const rows, d = 512, 256
	x, g := randF32(rng, rows*d, 1, 0), randF32(rng, rows*d, 1, 0)
	y := make([]float32, rows*d)
	gamma, beta := randF32(rng, d, 1, 1), randF32(rng, d, 1, 0)
	acc := make([]float64, d)
	for _, bc := range []struct {
		name string
		f    func()
	}{
		{"GELU", func() { GELU(y, x) }},
		{"GELUGrad", func() { GELUGrad(y, x, g) }},
		{"LayerNorm", func() { NormRows(y, x, d, true, 1e-5) }},
		{"LayerNormGrad", func() { NormGradRows(y, x, g, d, true, 1e-5) }},
		{"Affine", func() { AffineRows(y, x, gamma, beta) }},
		{"ColSumsProd", func() { ColSums(acc, x, g, d) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				bc.f()
			}
			b.ReportMetric(float64(b.N*rows*d)/b.Elapsed().Seconds()/1e6, "Melem/s")
		})
	}
}

func TestCopyRows(t *testing.T) {
	forEachNNLevel(t, func(t *testing.T) {
		for _, d := range nnLengths {
			for _, st := range [][2]int{{d, d + 3}, {2*d + 5, d}} {
				const rows = 3
				ds, ss := st[0], st[1]
				src32 := make([]float32, (rows-1)*ss+d)
				src64 := make([]float64, len(src32))
				for i := range src32 {
					src32[i], src64[i] = float32(i)+0.5, float64(i)+0.25
				}
				dst32 := make([]float32, (rows-1)*ds+d)
				dst64 := make([]float64, len(dst32))
				for i := range dst32 {
					dst32[i], dst64[i] = -1, -1
				}
				CopyRows(dst32, src32, rows, d, ds, ss)
				CopyRows(dst64, src64, rows, d, ds, ss)
				for i := range dst32 {
					r, j := i/ds, i%ds
					want32, want64 := float32(-1), -1.0 // the gaps between rows stay
					if j < d {
						want32, want64 = src32[r*ss+j], src64[r*ss+j]
					}
					if dst32[i] != want32 || dst64[i] != want64 {
						t.Fatalf("d=%d ds=%d ss=%d entry %d: %g, %g; want %g, %g", d, ds, ss, i, dst32[i], dst64[i], want32, want64)
					}
				}
			}
		}
	})
}

// TestGELUGradFlush: float32 GELUGrad gives 0, not a subnormal, where
// g·gelu'(x) falls below float32's smallest normal 2⁻¹²⁶ (x far below 0,
// where e^{−2u} is still finite, times a small upstream gradient), at every
// level; the normal results keep their accuracy (TestGELURows' bound).
func TestGELUGradFlush(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	forEachNNLevel(t, func(t *testing.T) {
		const n = 4099
		x, g := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i] = float32(-10.5 + 1.5*rng.Float64())        // −10.5…−9: gelu' about 1e-26…1e-45
			g[i] = float32(math.Pow(10, -1-4*rng.Float64())) // 1e-5…1e-1
			if i%2 == 1 {
				g[i] = -g[i]
			}
		}
		dy := make([]float32, n)
		GELUGrad(dy, x, g)
		flushed, kept := 0, 0
		for i, v := range dy {
			a := math.Abs(float64(v))
			if a != 0 && a < 0x1p-126 {
				t.Fatalf("x=%g g=%g: g·gelu' = %g, a subnormal", x[i], g[i], v)
			}
			_, d := geluRef(float64(x[i]))
			want := d * float64(g[i])
			switch {
			case v == 0 && math.Abs(want) < 0x1p-126:
				flushed++
			case v == 0:
				// Near 2⁻¹²⁶ the float32 formula itself loses bits (its s =
				// σ(2u) is near the subnormal range too): 0 is allowed up
				// to 2⁻¹¹⁸.
				if math.Abs(want) >= 0x1p-118 {
					t.Fatalf("x=%g g=%g: g·gelu' = 0, want %g", x[i], g[i], want)
				}
			default:
				kept++
				if math.Abs(float64(v)-want) > 1e-4*math.Abs(want) {
					t.Fatalf("x=%g g=%g: g·gelu' = %g, want %g", x[i], g[i], v, want)
				}
			}
		}
		if flushed == 0 || kept == 0 {
			t.Fatalf("%d results flushed, %d kept: the inputs do not straddle 2^-126", flushed, kept)
		}
	})
}
