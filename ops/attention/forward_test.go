package attention

import (
	"math"
	"math/rand"
	"testing"
)

// The forward grid of FlashAttention's tests: head dimensions, (Nq, Nk)
// pairs, causal or not, H/Hkv ratios, and key lengths that include 0 (a
// batch element with no key at all) and Nk (no padding).
var (
	gridD     = []int{8, 32, 40, 59, 64, 80, 96, 111, 128}
	gridShort = [][2]int{{1, 1}, {1, 239}, {3, 799}, {17, 17}, {113, 203}, {127, 128}, {128, 127}, {129, 129}}
	// The long pairs cost ~Nq·Nk·d per head in the float64 oracle, about a
	// second per case on 2 cores: they run for every d with B = 1.
	gridLong = [][2]int{{1023, 1024}, {1025, 1025}}
	// (H, Hkv): multi-head with two kv heads, grouped (H/Hkv = 2), and
	// H/Hkv = 4 with one kv head (multi-query).
	gridHeads = [][2]int{{2, 2}, {4, 2}, {4, 1}}
)

// gridKeyLengths gives, for B = 2, the key-length variants: none, {0, Nk}
// (an all-padded batch element next to a full one) and two partial lengths.
func gridKeyLengths(nk int) [][]int {
	return [][]int{nil, {0, nk}, {max(nk/3, 1), max(nk-1, 1)}}
}

// gridProblems lists the forward grid. Every (d, pair, causal, heads)
// combination appears once; the key-length variant cycles along the list so
// that each variant meets every d, pair and head layout. The long pairs use
// B = 1 and cycle through the head layouts.
func gridProblems() []problem {
	var out []problem
	n := 0
	for _, d := range gridD {
		for _, nn := range gridShort {
			for _, causal := range []bool{false, true} {
				for _, hh := range gridHeads {
					kl := gridKeyLengths(nn[1])[n%3]
					n++
					out = append(out, problem{B: 2, H: hh[0], Hkv: hh[1], Nq: nn[0], Nk: nn[1], D: d,
						Opts: Options{Causal: causal, KeyLengths: kl}})
				}
			}
		}
	}
	for _, d := range gridD {
		for _, nn := range gridLong {
			for _, causal := range []bool{false, true} {
				hh := gridHeads[n%3]
				var kl []int
				if n%2 == 1 {
					kl = []int{nn[1] - 300}
				}
				n++
				out = append(out, problem{B: 1, H: hh[0], Hkv: hh[1], Nq: nn[0], Nk: nn[1], D: d,
					Opts: Options{Causal: causal, KeyLengths: kl}})
			}
		}
	}
	return out
}

// shortGridProblems is the grid of -short runs (CI's go test -race -short):
// d = 8, 59 (odd) and 128, the lengths on both sides of the 64-row tiles
// (1, 17, 127, 128, 129, and a short query over long keys), causal or not,
// with the head layout and the key-length variant cycling along the list so
// that every option meets every length and d; and one long problem
// (N = 1025) with every mask.
func shortGridProblems() []problem {
	var out []problem
	n := 0
	for _, d := range []int{8, 59, 128} {
		for _, nn := range [][2]int{{1, 1}, {1, 239}, {17, 17}, {127, 128}, {128, 127}, {129, 129}, {3, 799}} {
			for _, causal := range []bool{false, true} {
				hh := gridHeads[n%3]
				kl := gridKeyLengths(nn[1])[(n/3)%3]
				n++
				out = append(out, problem{B: 2, H: hh[0], Hkv: hh[1], Nq: nn[0], Nk: nn[1], D: d,
					Opts: Options{Causal: causal, KeyLengths: kl}})
			}
		}
	}
	return append(out, problem{B: 2, H: 2, Hkv: 1, Nq: 1025, Nk: 1025, D: 8,
		Opts: Options{Causal: true, KeyLengths: []int{1025, 700}}})
}

// testGrid returns the forward grid, or its short form under -short.
func testGrid() []problem {
	if testing.Short() {
		return shortGridProblems()
	}
	return gridProblems()
}

// TestForwardGrid compares o and L of the fused op and of Reference with
// the float64 oracle and with each other: float64 to 1e-12 (normwise
// relative), L to 1e-12 absolute (the issue asks 1e-5) and −Inf on the same
// rows; in float32 the fused op's error must stay within twice the
// decomposed path's, and L within 1e-5 (relative to max(1, |L|)). Under
// -short it runs shortGridProblems.
func TestForwardGrid(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	probs := testGrid()
	var worst64, worstL, worstRatio float64
	for _, pr := range probs {
		q, k, v := pr.inputs(rng)
		wantO, wantL := pr.naive(q, k, v).forward()

		o64, l64, err := forward(pr, fused, q, k, v)
		if err != nil {
			t.Fatalf("%v: fused: %v", pr, err)
		}
		r64, rl64, err := forward(pr, decomposed, q, k, v)
		if err != nil {
			t.Fatalf("%v: decomposed: %v", pr, err)
		}
		e, er := relErr(o64, wantO), relErr(r64, wantO)
		el, erl := maxAbsErr(l64, wantL), maxAbsErr(rl64, wantL)
		if e > 1e-12 || er > 1e-12 || el > 1e-12 || erl > 1e-12 {
			t.Errorf("%v float64: o error fused %.3g decomposed %.3g; L error fused %.3g decomposed %.3g (limit 1e-12)",
				pr, e, er, el, erl)
		}
		if e := relErr(o64, r64); e > 1e-12 {
			t.Errorf("%v float64: fused and decomposed o differ by %.3g", pr, e)
		}
		if !sameInf(l64, wantL) || !sameInf(rl64, wantL) {
			t.Errorf("%v: L is −Inf at other rows than the oracle's", pr)
		}
		worst64, worstL = math.Max(worst64, e), math.Max(worstL, el)

		q32, k32, v32 := convert[float32](q), convert[float32](k), convert[float32](v)
		o32, l32, err := forward(pr, fused, q32, k32, v32)
		if err != nil {
			t.Fatalf("%v: fused float32: %v", pr, err)
		}
		r32, _, err := forward(pr, decomposed, q32, k32, v32)
		if err != nil {
			t.Fatalf("%v: decomposed float32: %v", pr, err)
		}
		// The error of either path against float64, measured on the same
		// float32-rounded inputs (the oracle gets the rounded values). The
		// criterion uses the normwise 2-norm error ‖got − want‖₂/‖want‖₂:
		// the largest single-entry error of two float32 computations of the
		// same sums differs by 2× from one random draw to the next, the
		// 2-norm does not (over the grid the fused/decomposed ratio of the
		// 2-norm errors measured 1.03 on average, 1.35 at most). The max
		// error still has to stay within 4× to catch a localized fault.
		want32, wantL32 := pr.naive(convert[float64](q32), convert[float64](k32), convert[float64](v32)).forward()
		ef, ed := rmsErr(o32, want32), rmsErr(r32, want32)
		if ef > 2*ed+floor32 {
			t.Errorf("%v float32: o 2-norm error fused %.3g > 2× decomposed %.3g", pr, ef, ed)
		}
		if mf, md := relErr(o32, want32), relErr(r32, want32); mf > 4*md+floor32 {
			t.Errorf("%v float32: o max error fused %.3g > 4× decomposed %.3g", pr, mf, md)
		}
		if el := maxAbsErr(l32, wantL32); el > 1e-5*math.Max(1, maxAbs(wantL32)) {
			t.Errorf("%v float32: L error %.3g", pr, el)
		}
		if ed > 0 {
			worstRatio = math.Max(worstRatio, ef/ed)
		}
	}
	t.Logf("%d problems: worst float64 o error %.3g, L error %.3g; worst float32 fused/decomposed 2-norm error ratio %.3g",
		len(probs), worst64, worstL, worstRatio)
}

// floor32 is the one absolute slack of the float32 comparison: a few
// float32 roundings of an output of size ~1. It only matters where the
// decomposed path happens to be exact (Nk = 1: o = v).
const floor32 = 4 * 0x1p-24

// sameInf reports whether got and want are −Inf at the same entries.
func sameInf[T, S Float](got []T, want []S) bool {
	for i := range got {
		if math.IsInf(float64(got[i]), -1) != math.IsInf(float64(want[i]), -1) {
			return false
		}
	}
	return true
}

func maxAbs[T Float](x []T) float64 {
	var m float64
	for _, v := range x {
		if a := math.Abs(float64(v)); a > m && !math.IsInf(a, 0) {
			m = a
		}
	}
	return m
}

// TestForwardEmptyRows checks the rows without a visible key (all keys
// padded; causal with Nq > Nk): o = 0 exactly and L = −Inf, never NaN, in
// both element types.
func TestForwardEmptyRows(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, pr := range []problem{
		{B: 2, H: 2, Hkv: 1, Nq: 5, Nk: 7, D: 4, Opts: Options{KeyLengths: []int{0, 7}}},
		{B: 1, H: 2, Hkv: 2, Nq: 9, Nk: 4, D: 3, Opts: Options{Causal: true}},
		{B: 1, H: 1, Hkv: 1, Nq: 200, Nk: 70, D: 8, Opts: Options{Causal: true}},
		{B: 2, H: 1, Hkv: 1, Nq: 70, Nk: 70, D: 8, Opts: Options{Causal: true, KeyLengths: []int{0, 0}}},
	} {
		t.Run(pr.String(), func(t *testing.T) {
			q, k, v := pr.inputs(rng)
			np := pr.naive(q, k, v)
			check := func(name string, o, l []float64) {
				empty := 0
				for b := 0; b < pr.B; b++ {
					for h := 0; h < pr.H; h++ {
						for i := 0; i < pr.Nq; i++ {
							seen := false
							for j := 0; j < pr.Nk; j++ {
								seen = seen || np.visible(b, i, j)
							}
							if seen {
								continue
							}
							empty++
							row := (b*pr.H+h)*pr.Nq + i
							if !math.IsInf(l[row], -1) {
								t.Errorf("%s: row %d has no key but L = %v", name, row, l[row])
							}
							for c := 0; c < pr.D; c++ {
								if o[row*pr.D+c] != 0 {
									t.Fatalf("%s: row %d has no key but o = %v", name, row, o[row*pr.D:(row+1)*pr.D])
								}
							}
						}
					}
				}
				if empty == 0 {
					t.Fatalf("%s: the problem has no empty row; the test checks nothing", name)
				}
				if hasNaN(o) || hasNaN(l) {
					t.Errorf("%s: NaN in the output", name)
				}
			}
			o, l, err := forward(pr, fused, q, k, v)
			if err != nil {
				t.Fatal(err)
			}
			check("fused float64", o, l)
			o32, l32, err := forward(pr, fused, convert[float32](q), convert[float32](k), convert[float32](v))
			if err != nil {
				t.Fatal(err)
			}
			check("fused float32", convert[float64](o32), convert[float64](l32))
			o, l, err = forward(pr, decomposed, q, k, v)
			if err != nil {
				t.Fatal(err)
			}
			check("decomposed float64", o, l)
		})
	}
}

// TestForwardScale checks an explicit Scale (negative too) against the
// oracle.
func TestForwardScale(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for _, scale := range []float64{0.01, 1, 2.5, -0.3} {
		pr := problem{B: 1, H: 2, Hkv: 1, Nq: 70, Nk: 90, D: 16, Opts: Options{Scale: scale, Causal: true}}
		q, k, v := pr.inputs(rng)
		wantO, wantL := pr.naive(q, k, v).forward()
		o, l, err := forward(pr, fused, q, k, v)
		if err != nil {
			t.Fatal(err)
		}
		if e, el := relErr(o, wantO), maxAbsErr(l, wantL); e > 1e-12 || el > 1e-12 {
			t.Errorf("scale %g: o error %.3g, L error %.3g", scale, e, el)
		}
	}
}
