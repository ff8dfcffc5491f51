package gemm

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestScoreExp checks ScoreExp against float64: the scores s are those of
// Workspace.Gemm (the same sums and rounding), the probabilities 2^(s − m)
// for each row's final shift m within (3 + |s − m|)·2⁻²³ relative (the
// exponential's 1.1 ulp, the argument rounded once, a rescale's two
// roundings), 0 where below 2⁻¹²⁵; each shift within τ of
// the row's largest score, moved only where a strip's largest score passed
// it by more than τ, and grow called with the old and new shift each time;
// lv's lanes the sum of the row's probabilities plus its lanes on entry
// rescaled by the factors grow returned; nothing outside the tile written.
// Rows 1…13 (every exp kernel and the 6-row one twice), one to three
// strips, depths 1…128, scores of a few units and of a few hundred (large
// logits: shifts that move by more than 125), shifts on entry −Inf, far
// below the scores (a move on the first strip), a little below (a move on
// a later strip or none) and above them (no move).
func TestScoreExp(t *testing.T) {
	if !HasScoreExp(64) {
		t.Skip("no exp kernels on this level")
	}
	rng := rand.New(rand.NewSource(7))
	for _, k := range []int{1, 5, 8, 33, 64, 100, 128} {
		for _, m := range []int{1, 2, 3, 4, 5, 6, 7, 12, 13} {
			for _, strips := range []int{1, 2, 3} {
				for _, spread := range []float64{1, 40} {
					name := fmt.Sprintf("k%d_m%d_n%d_x%g", k, m, strips*64, spread)
					testScoreExp(t, rng, name, m, strips*ScoreExpStrip, k, spread, nil)
				}
			}
		}
	}
}

// TestScoreExpMasked checks ScoreExpMasked as TestScoreExp checks
// ScoreExp, each row against float64 over the columns below its lim alone,
// and the entries from lim on exactly 0, on the masks of attention's
// tiles: a causal diagonal (lim growing by one a row, from 0 or from
// part of the tile), key padding (every row the same lim, not a whole
// strip), and lim at random; the columns that no row sees hold NaN, +Inf
// and huge values (some rows' masked columns, others' visible ones hold
// scores far above the rest: they must not move the shift of a row that
// does not see them).
func TestScoreExpMasked(t *testing.T) {
	if !HasScoreExp(64) {
		t.Skip("no exp kernels on this level")
	}
	rng := rand.New(rand.NewSource(8))
	for _, k := range []int{1, 8, 33, 64, 128} {
		for _, m := range []int{1, 3, 6, 7, 13, 64} {
			for _, strips := range []int{1, 2} {
				n := strips * ScoreExpStrip
				for _, kind := range []string{"causal0", "causal", "pad", "random", "none", "all"} {
					lim := make([]int, m)
					for i := range lim {
						switch kind {
						case "causal0":
							lim[i] = min(i, n)
						case "causal":
							lim[i] = min(n-m/2+i+1, n)
						case "pad":
							lim[i] = n - 17
						case "random":
							lim[i] = rng.Intn(n + 1)
						case "none":
							lim[i] = 0
						case "all":
							lim[i] = n
						}
						lim[i] = max(lim[i], 0)
					}
					for _, spread := range []float64{1, 40} {
						name := fmt.Sprintf("k%d_m%d_n%d_%s_x%g", k, m, n, kind, spread)
						testScoreExp(t, rng, name, m, n, k, spread, lim)
					}
				}
			}
		}
	}
}

// testScoreExp runs ScoreExp (lim nil) or ScoreExpMasked on a random problem
// and checks it (see TestScoreExp).
func testScoreExp(t *testing.T, rng *rand.Rand, name string, m, n, k int, spread float64, lim []int) {
	const pad = 3
	alpha := float32(spread / math.Sqrt(float64(k)))
	lda, ldb, ldc := k+pad, n+pad, n+pad
	a := randPadded[float32](rng, m, k, lda)
	b := randPadded[float32](rng, k, n, ldb)
	// vis(i) is the number of columns row i sees.
	vis := func(i int) int { return n }
	if lim != nil {
		vis = func(i int) int { return lim[i] }
		// The columns some rows do not see: huge (scores far above the
		// visible ones of the rows that do not see them); those no row
		// sees: NaN and +Inf.
		lo, hi := n, 0
		for _, l := range lim {
			lo, hi = min(lo, l), max(hi, l)
		}
		for j := lo; j < n; j++ {
			for p := 0; p < k; p++ {
				switch {
				case j >= hi && j%2 == 0:
					b[p*ldb+j] = float32(math.NaN())
				case j >= hi:
					b[p*ldb+j] = float32(math.Inf(1))
				default:
					b[p*ldb+j] = 1e3 * float32(math.Abs(float64(a[p]))+1) * float32(1-2*(p%2))
				}
			}
		}
	}
	// The scores s = fl(alpha·t) as Workspace.Gemm computes them (the
	// kernels sum alike and round alpha·t once, as it does).
	tt := make([]float32, m*n)
	var w Workspace[float32]
	if err := w.Gemm(false, false, m, n, k, alpha, a, lda, b, ldb, 0, tt, n); err != nil {
		t.Fatal(err)
	}
	s := func(i, j int) float64 { return float64(tt[i*n+j]) }
	ref0 := make([]float32, m)
	lv0 := make([]float64, 8*m)
	for i := range ref0 {
		mx := math.Inf(-1)
		for j := 0; j < vis(i); j++ {
			mx = math.Max(mx, s(i, j))
		}
		switch i % 4 {
		case 0:
			ref0[i] = float32(math.Inf(-1))
		case 1:
			ref0[i] = float32(mx - 3*ScoreExpTau)
		case 2:
			ref0[i] = float32(mx - ScoreExpTau/2 - rng.Float64()*ScoreExpTau)
		case 3:
			ref0[i] = float32(mx + 2)
		}
		if i%4 != 0 {
			for l := range 8 {
				lv0[8*i+l] = rng.Float64()
			}
		}
	}
	ref := append([]float32(nil), ref0...)
	lv := append([]float64(nil), lv0...)
	c := make([]float32, (m-1)*ldc+n+pad)
	for i := range c {
		c[i] = -7 // sentinel: entries outside the tile keep it
	}
	factor := make([]float64, m) // the product of grow's factors per row
	for i := range factor {
		factor[i] = 1
	}
	grows := 0
	grow := func(i int, old, nw float32) float32 {
		grows++
		if old == ref[i] {
			t.Errorf("%s: grow(%d, %v, %v) while ref[%d] = %v: the shift did not move", name, i, old, nw, i, ref[i])
		}
		if !(float64(nw) > float64(old)+ScoreExpTau) {
			t.Errorf("%s: row %d's shift moved from %v to %v: not by more than τ", name, i, old, nw)
		}
		f := float32(math.Exp2(float64(old) - float64(nw)))
		factor[i] *= float64(f)
		return f
	}
	var err error
	if lim == nil {
		err = ScoreExp(m, n, k, alpha, a, lda, b, ldb, c, ldc, ref, lv, grow)
	} else {
		err = ScoreExpMasked(m, n, k, alpha, a, lda, b, ldb, c, ldc, lim, ref, lv, grow)
	}
	if err != nil {
		t.Fatal(err)
	}
	u := math.Ldexp(1, -23)
	for i := 0; i < m; i++ {
		mx := math.Inf(-1)
		for j := 0; j < vis(i); j++ {
			mx = math.Max(mx, s(i, j))
		}
		mi := float64(ref[i])
		if vis(i) == 0 && ref[i] != ref0[i] {
			t.Errorf("%s: row %d sees no column: its shift moved from %v to %v", name, i, ref0[i], ref[i])
		}
		if ref[i] != ref0[i] && math.Abs(mi-mx) > 1e-6*math.Abs(mx) && !(mi < mx) {
			t.Errorf("%s: row %d's shift moved to %v, above its largest score %v", name, i, mi, mx)
		}
		if mx > mi+ScoreExpTau*(1+1e-6) {
			t.Errorf("%s: row %d's largest score %v passes its shift %v by more than τ", name, i, mx, mi)
		}
		if ref0[i] > ref[i] || math.IsInf(float64(ref0[i]), -1) && math.IsInf(mi, -1) && vis(i) > 0 {
			t.Errorf("%s: row %d's shift went from %v to %v", name, i, ref0[i], ref[i])
		}
		sum := 0.0
		for j := vis(i); j < n; j++ {
			if c[i*ldc+j] != 0 {
				t.Errorf("%s: p[%d,%d] = %g of a column the row does not see, want 0", name, i, j, c[i*ldc+j])
			}
		}
		for j := 0; j < vis(i); j++ {
			got := float64(c[i*ldc+j])
			sum += got
			arg := s(i, j) - mi
			want := math.Exp2(arg)
			switch {
			case want < 0x1p-125*(1-1e-4):
				if got != 0 && got > want*(1+1e-3) {
					t.Errorf("%s: p[%d,%d] = %g, want 0 (2^%g)", name, i, j, got, arg)
				}
			case want < 0x1p-125*(1+1e-4):
				// at the flush's edge: either
			default:
				if e := math.Abs(got-want) / want; e > (3+math.Abs(arg))*u {
					t.Errorf("%s: p[%d,%d] = %g, want 2^%g = %g (relative error %.2g)", name, i, j, got, arg, want, e)
				}
			}
		}
		for j := n; j < ldc && i*ldc+j < len(c); j++ {
			if c[i*ldc+j] != -7 {
				t.Errorf("%s: c[%d,%d] outside the tile written", name, i, j)
			}
		}
		gotSum := 0.0
		wantSum := sum
		for l := range 8 {
			gotSum += lv[8*i+l]
			wantSum += lv0[8*i+l] * factor[i]
		}
		if !(math.Abs(gotSum-wantSum) <= 1e-6*wantSum) {
			t.Errorf("%s: row %d's lanes sum to %v, want %v", name, i, gotSum, wantSum)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestScoreExpBadArgs checks ScoreExp's errors.
func TestScoreExpBadArgs(t *testing.T) {
	if !HasScoreExp(64) {
		t.Skip("no exp kernels on this level")
	}
	a, b, c := make([]float32, 64*64), make([]float32, 64*64), make([]float32, 64*64)
	ref, lv := make([]float32, 64), make([]float64, 8*64)
	for _, x := range []struct {
		m, n, k int
		alpha   float32
		lv      []float64
	}{
		{6, 65, 8, 1, lv},   // n not whole strips
		{6, 64, 8, 0, lv},   // alpha not positive
		{6, 64, 8, -1, lv},  // alpha not positive
		{6, 64, 129, 1, lv}, // too deep
		{6, 64, 8, 1, lv[:8*5]},
		{64, 64, 64, 1, lv}, // a too short for lda = 64 is fine; c too: ok below
	} {
		err := ScoreExp(x.m, x.n, x.k, x.alpha, a, 64, b, 64, c, 64, ref, x.lv, nil)
		if (x.m == 64) != (err == nil) {
			t.Errorf("ScoreExp(m=%d, n=%d, k=%d, alpha=%v, lv %d): %v", x.m, x.n, x.k, x.alpha, len(x.lv), err)
		}
	}
}
