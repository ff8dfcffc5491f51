package vec

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
	"unsafe"
)

// maxULP is the float32 exponentials' error bound, in ulps of the exact result.
const maxULP = 2

// expPoints returns the float32 arguments the exponential of base b is
// tested on: a dense sweep over the whole range where the result is
// neither 0 nor +Inf and past both ends, random float32 bit patterns in
// that range, the specials, and every float32 in a window around the
// boundaries (overflow, the smallest normal result, the smallest subnormal,
// rounding to 0).
func expPoints(b base, n int) []float32 {
	lo, hi := -110.0, 95.0
	bounds := []float64{88.72283935546875, math.Log(0x1p-126), math.Log(0x1p-149), math.Log(0x1p-150), 0}
	if b == base2 {
		lo, hi = -160, 135
		bounds = []float64{128, -126, -149, -150, 0}
	}
	var xs []float32
	for i := range n {
		xs = append(xs, float32(lo+(hi-lo)*float64(i)/float64(n)))
	}
	rng := rand.New(rand.NewSource(int64(b) + 1))
	for range n {
		xs = append(xs, float32(lo+(hi-lo)*rng.Float64()))
	}
	for _, c := range bounds {
		x := float32(c)
		for range 500 {
			x = math.Nextafter32(x, float32(math.Inf(-1)))
		}
		for range 1000 {
			xs = append(xs, x)
			x = math.Nextafter32(x, float32(math.Inf(1)))
		}
	}
	return append(xs, specials32...)
}

func sweepLen(t *testing.T) int {
	if testing.Short() {
		return 1 << 15
	}
	return 1 << 20
}

// TestExpAccuracy holds Exp and Exp2 on float32 to 2 ulp of the float64
// math.Exp / math.Exp2 of the same argument over the whole range,
// subnormal results, overflow and the specials included.
func TestExpAccuracy(t *testing.T) {
	for _, b := range []base{baseE, base2} {
		xs := expPoints(b, sweepLen(t))
		name, ref := "Exp", math.Exp
		if b == base2 {
			name, ref = "Exp2", math.Exp2
		}
		forEachLevel(t, func(t *testing.T) {
			y := make([]float32, len(xs))
			if b == base2 {
				Exp2(y, xs)
			} else {
				Exp(y, xs)
			}
			worst, at := 0.0, float32(0)
			for i, x := range xs {
				if e := ulps32(y[i], ref(float64(x))); e > worst || math.IsNaN(e) {
					worst, at = e, x
				}
			}
			t.Logf("%s: worst %.3f ulp at x = %v over %d points", name, worst, at, len(xs))
			if !(worst <= maxULP) {
				t.Errorf("%s(%v) = %v, want %v: %.3f ulp, over %d", name, at, y[indexOf(xs, at)], ref(float64(at)), worst, maxULP)
			}
		})
	}
}

func indexOf(xs []float32, x float32) int {
	for i, v := range xs {
		if v == x || (v != v && x != x) {
			return i
		}
	}
	return -1
}

// TestExpSpecials spells out the special values.
func TestExpSpecials(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	cases := []struct {
		x, scale, shift, want float32
	}{
		{float32(math.Inf(-1)), 1, 0, 0},
		{inf, 1, 0, inf},
		{nan, 1, 0, nan},
		{0, 1, 0, 1},
		{float32(math.Copysign(0, -1)), 1, 0, 1},
		{-200, 1, 0, 0},
		{-1e30, 1, 0, 0},
		{-math.MaxFloat32, 1, 0, 0},
		{200, 1, 0, inf},
		{math.MaxFloat32, 1, 0, inf},
		{-103.279, 1, 0, math.SmallestNonzeroFloat32}, // e^{−103.279} ≈ 2^{−149}
		{5, 1, float32(math.Inf(1)), 0},               // −Inf argument
		{float32(math.Inf(-1)), 2, 3, 0},              // scale applies to −Inf
		{1e4, 1, 1e4, 1},                              // large equal logits
		{1e30, 1, 1e30, 1},                            // huge equal logits
		{-1e30, 1, 1e30, 0},                           // −2e30
		{3, 0, 0, 1},                                  // scale 0
		{float32(math.Inf(-1)), -1, 0, inf},           // −(−Inf)
		{nan, 0, 0, nan},                              // NaN·0
		{1, 1, nan, nan},                              // NaN shift
	}
	for _, c := range cases {
		forEachLevel(t, func(t *testing.T) {
			for n := 1; n <= 33; n += 16 { // the tail path and the vector path
				x := make([]float32, n)
				for i := range x {
					x[i] = c.x
				}
				y := make([]float32, n)
				s := ExpShiftSum(y, x, c.scale, c.shift)
				for i, v := range y {
					if v != c.want && !(v != v && c.want != c.want) {
						t.Fatalf("ExpShiftSum(x=%v, scale %v, shift %v)[%d of %d] = %v, want %v", c.x, c.scale, c.shift, i, n, v, c.want)
					}
				}
				want := float64(c.want) * float64(n)
				if s != want && !(s != s && want != want) {
					t.Fatalf("ExpShiftSum(x=%v, scale %v, shift %v) sum over %d = %v, want %v", c.x, c.scale, c.shift, n, s, want)
				}
			}
		})
	}
}

// TestExpShiftSumAccuracy holds ExpShiftSum and Exp2ShiftSum to 2 ulp of
// the exact e^{scale·x − shift}, for shifts that make the float32 rounding
// of the argument large (the kernel must carry it), and the returned sum
// to the float64 sum of the stored values.
func TestExpShiftSumAccuracy(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	n := sweepLen(t) / 16
	for _, c := range []struct{ scale, shift, spread float32 }{
		{1, 0, 30},
		{1, 3.7, 30},
		{1, -5.25, 60},
		{1, 1e4, 80}, // logits near 1e4: x − shift needs far more than 24 bits of x
		{1, -1e4, 80},
		{1, 88, 180},
		{0.125, 2.3, 200},    // 1/√64
		{0.18033688, 7, 150}, // 1/√d·log₂e
		{1.4426950, 5, 100},
		{-1, 0, 80},
		{3e-5, 1, 1e6},
	} {
		xs := make([]float32, n)
		for i := range xs {
			// Arguments scale·x − shift across (−spread, spread)/… around 0.
			a := (2*rng.Float64() - 1) * float64(c.spread)
			xs[i] = float32((a + float64(c.shift)) / float64(c.scale))
		}
		for _, b := range []base{baseE, base2} {
			ref := math.Exp
			if b == base2 {
				ref = math.Exp2
			}
			name := fmt.Sprintf("base%v/scale%v/shift%v", map[base]string{baseE: "e", base2: "2"}[b], c.scale, c.shift)
			t.Run(name, func(t *testing.T) {
				forEachLevel(t, func(t *testing.T) {
					y := make([]float32, n)
					s := expShiftSum(y, xs, nil, c.scale, c.shift, b)
					worst, at := 0.0, 0
					for i, x := range xs {
						arg := math.FMA(float64(c.scale), float64(x), -float64(c.shift))
						if e := ulps32(y[i], ref(arg)); e > worst || math.IsNaN(e) {
							worst, at = e, i
						}
					}
					if !(worst <= maxULP) {
						t.Errorf("x = %v: got %v, want %v: %.3f ulp", xs[at], y[at], ref(math.FMA(float64(c.scale), float64(xs[at]), -float64(c.shift))), worst)
					}
					if err := checkExpSum(s, y); err != nil {
						t.Error(err)
					}
					if s2 := expShiftSum(nil, xs, xs, c.scale, c.shift, b); s2 != s && math.Abs(s2-s) > 1e-15*math.Abs(s) {
						t.Errorf("sum without dst %v, with dst %v", s2, s)
					}
				})
			})
		}
	}
}

// TestExpShiftsAccuracy holds ExpShifts and Exp2Shifts to 2 ulp of the
// exact e^{(x − hi) − lo} with hi + lo a float64 shift split in two
// float32s, as attention's backward does with the log-sum-exp.
func TestExpShiftsAccuracy(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	n := sweepLen(t)/16 + 13
	x, hi, lo := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		l := (2*rng.Float64() - 1) * 20
		hi[i] = float32(l)
		lo[i] = float32(l - float64(hi[i]))
		x[i] = float32(l + (rng.Float64()*2-1.8)*60)
	}
	copy(x[n-len(specials32):], specials32)
	for _, b := range []base{baseE, base2} {
		ref := math.Exp
		if b == base2 {
			ref = math.Exp2
		}
		forEachLevel(t, func(t *testing.T) {
			y := make([]float32, n)
			expShifts(y, x, hi, lo, b)
			for i := range x {
				want := ref((float64(x[i]) - float64(hi[i])) - float64(lo[i]))
				if e := ulps32(y[i], want); !(e <= maxULP) {
					t.Fatalf("base %d: e^((%v − %v) − %v) = %v, want %v: %.3f ulp", b, x[i], hi[i], lo[i], y[i], want, e)
				}
			}
		})
	}
}

// TestExpLengths runs the exponentials on every length up to 70 and on
// 1025, at several offsets into a guarded buffer, in place and not: the
// tails and the vector bodies give the same accuracy and nothing outside
// the slice is touched.
func TestExpLengths(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	lengths := []int{1025}
	for n := range 71 {
		lengths = append(lengths, n)
	}
	forEachLevel(t, func(t *testing.T) {
		for _, n := range lengths {
			for _, off := range []int{0, 1, 3} {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(rng.NormFloat64() * 10)
				}
				y, check := guarded(n, off)
				s := ExpShiftSum(y, x, 1, 2)
				check(t, "ExpShiftSum")
				for i, v := range x {
					ref := math.Exp(float64(v) - 2)
					if e := ulps32(y[i], ref); !(e <= maxULP) {
						t.Fatalf("n=%d off=%d: e^(%v−2) = %v, want %v (%.2f ulp)", n, off, v, y[i], ref, e)
					}
				}
				if err := checkExpSum(s, y); err != nil {
					t.Fatalf("n=%d off=%d: %v", n, off, err)
				}
				// In place, on an unaligned slice.
				z, check := guarded(n, off)
				copy(z, x)
				Exp2(z, z)
				check(t, "Exp2 in place")
				for i, v := range x {
					if e := ulps32(z[i], math.Exp2(float64(v))); !(e <= maxULP) {
						t.Fatalf("n=%d off=%d: 2^%v = %v (%.2f ulp)", n, off, v, z[i], e)
					}
				}
				hi, lo := make([]float32, n), make([]float32, n)
				for i := range hi {
					hi[i] = 1.5
					lo[i] = 1e-8
				}
				w, check := guarded(n, off)
				ExpShifts(w, x, hi, lo)
				check(t, "ExpShifts")
				for i, v := range x {
					if e := ulps32(w[i], math.Exp(float64(v)-1.5-1e-8)); !(e <= maxULP) {
						t.Fatalf("n=%d off=%d: ExpShifts e^(%v−1.5−1e-8) = %v (%.2f ulp)", n, off, v, w[i], e)
					}
				}
			}
		}
	})
}

// TestExpFloat64 holds the float64 kernels to 3 ulp of math.Exp / Exp2 of
// the same float64 argument, subnormal and overflowing results included.
func TestExpFloat64(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	n := sweepLen(t)
	x := make([]float64, n)
	for i := range x {
		x[i] = (rng.Float64()*2 - 1) * 760
	}
	x = append(x, math.Inf(1), math.Inf(-1), math.NaN(), 0, -745.2, -745.1, -708.4, 709.7, 709.8, 1e-300, -1e-300)
	for _, c := range []struct {
		name       string
		f          func(dst, x []float64, scale, shift float64) float64
		ref        func(float64) float64
		scale, off float64
	}{
		{"ExpShiftSum", ExpShiftSum[float64], math.Exp, 1, 0},
		{"ExpShiftSum/scaled", ExpShiftSum[float64], math.Exp, 0.37, 3.25},
		{"Exp2ShiftSum", Exp2ShiftSum[float64], math.Exp2, 1.4, 0},
		{"Exp2ShiftSum/shifted", Exp2ShiftSum[float64], math.Exp2, 1, -17.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			y := make([]float64, len(x))
			s := c.f(y, x, c.scale, c.off)
			var sum float64
			for i, v := range x {
				want := c.ref(c.scale*v - c.off)
				if e := ulps64(y[i], want); !(e <= 3) {
					t.Fatalf("x = %v: %v, want %v (%.2f ulp)", v, y[i], want, e)
				}
				sum += y[i]
			}
			if s != sum && !(math.IsNaN(s) && math.IsNaN(sum)) {
				t.Errorf("sum %v, want %v", s, sum)
			}
		})
	}
	hi, lo, y := make([]float64, len(x)), make([]float64, len(x)), make([]float64, len(x))
	for i := range hi {
		hi[i], lo[i] = 3.5, 1e-17
	}
	ExpShifts(y, x, hi, lo)
	for i, v := range x {
		if e := ulps64(y[i], math.Exp((v-3.5)-1e-17)); !(e <= 3) {
			t.Fatalf("ExpShifts float64: e^(%v − 3.5 − 1e-17) = %v (%.2f ulp)", v, y[i], e)
		}
	}
}

// TestScalarExp holds ScalarExp and scalarExp2 to 3 ulp of math.Exp and
// math.Exp2 over both tails and the specials.
func TestScalarExp(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	worst, worst2 := 0.0, 0.0
	check := func(x float64) {
		if e := ulps64(ScalarExp(x), math.Exp(x)); e > worst || math.IsNaN(e) {
			worst = e
		}
		if e := ulps64(scalarExp2(x*1.5), math.Exp2(x*1.5)); e > worst2 || math.IsNaN(e) {
			worst2 = e
		}
	}
	for range 200000 {
		check(-rng.Float64() * 40)
		check((rng.Float64() - 0.5) * 1500)
	}
	for _, x := range []float64{0, -0.0, 1e-300, -1e-300, -708, 708.9, -707.99, -745, -746, 709.8, 710, math.Inf(1), math.Inf(-1), math.NaN()} {
		check(x)
	}
	if !(worst <= 3) || !(worst2 <= 3) {
		t.Errorf("ScalarExp: worst %.2f ulp, scalarExp2: %.2f ulp; want ≤ 3", worst, worst2)
	}
}

// TestExpShiftSumStream checks the fused softmax step against its two
// parts' definitions: dst = e^{x − shift} within 2 ulp, the sum, and
// out = c·prev exactly as a float32 product, on lengths and alignments
// that take the fused loop (whole vectors, out 64-byte aligned) and the
// fallback, nothing written outside the slices.
func TestExpShiftSumStream(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	forEachLevel(t, func(t *testing.T) {
		for _, n := range []int{16, 48, 64, 80, 1024, 4096, 17, 1025} {
			for _, shiftOff := range []int{0, 1} {
				x, prev, next := randRow(rng, n, 4), randRow(rng, n, 1), randRow(rng, n, 1)
				// out at a 64-byte boundary plus shiftOff floats.
				buf := make([]float32, n+64)
				a := int((64-uintptr(unsafe.Pointer(&buf[0]))%64)%64) / 4
				out, check := guardedAt(buf, a+shiftOff, n)
				dst := make([]float32, n)
				s := ExpShiftSumStream(dst, x, next, 0.75, out, prev, 1.5)
				check(t, "ExpShiftSumStream out")
				for i := range x {
					if e := ulps32(dst[i], math.Exp(float64(x[i])-0.75)); !(e <= maxULP) {
						t.Fatalf("n=%d: dst[%d] = %v, want e^(%v − 0.75) (%.2f ulp)", n, i, dst[i], x[i], e)
					}
					if want := 1.5 * prev[i]; out[i] != want {
						t.Fatalf("n=%d offset %d: out[%d] = %v, want %v", n, shiftOff, i, out[i], want)
					}
				}
				if err := checkExpSum(s, dst); err != nil {
					t.Fatalf("n=%d: %v", n, err)
				}
				// No previous row.
				if s2 := ExpShiftSumStream(dst, x, nil, 0.75, nil, nil, 1.5); math.Abs(s2-s) > 1e-6*s {
					t.Fatalf("n=%d: sum without out %v, with %v", n, s2, s)
				}
			}
		}
	})
}
