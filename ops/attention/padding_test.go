package attention

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// poisons are the values planted in masked keys: whatever a masked key
// holds must not reach any output or gradient. "mixed" draws each entry
// from NaN, ±Inf and ±1e30 (a huge finite value would move a row maximum if
// it were read).
var poisons = []string{"NaN", "+Inf", "-Inf", "mixed"}

// poisonValue returns the value of poison kind `kind` for one entry.
func poisonValue(kind string, rng *rand.Rand) float64 {
	switch kind {
	case "NaN":
		return math.NaN()
	case "+Inf":
		return math.Inf(1)
	case "-Inf":
		return math.Inf(-1)
	}
	return []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e30, -1e30}[rng.Intn(5)]
}

// poisonKeys returns copies of k and v [B,Hkv,Nk,D] whose keys j with
// masked(b, j) hold poison of the given kind (k and v entries drawn
// separately), and the number of poisoned keys.
func poisonKeys(pr problem, k, v []float64, kind string, rng *rand.Rand, masked func(b, j int) bool) (kp, vp []float64, n int) {
	kp, vp = append([]float64(nil), k...), append([]float64(nil), v...)
	for b := 0; b < pr.B; b++ {
		for g := 0; g < pr.Hkv; g++ {
			for j := 0; j < pr.Nk; j++ {
				if !masked(b, j) {
					continue
				}
				n++
				at := ((b*pr.Hkv+g)*pr.Nk + j) * pr.D
				for c := 0; c < pr.D; c++ {
					kp[at+c] = poisonValue(kind, rng)
					vp[at+c] = poisonValue(kind, rng)
				}
			}
		}
	}
	return kp, vp, n
}

// paddingProblems are the problems of TestPaddedKeysInert: the issue's
// reproduction (B = H = 1, N = 4, d = 2, KeyLengths {2}), and lengths on
// both sides of the 64-row tiles (1, 17, 127, 129), with grouped-query
// heads, the causal mask, a key length on a tile boundary and batch
// elements with no key at all.
var paddingProblems = []problem{
	{B: 1, H: 1, Hkv: 1, Nq: 4, Nk: 4, D: 2, Opts: Options{KeyLengths: []int{2}}},
	{B: 2, H: 4, Hkv: 2, Nq: 17, Nk: 17, D: 3, Opts: Options{KeyLengths: []int{5, 16}}},
	{B: 2, H: 2, Hkv: 1, Nq: 127, Nk: 129, D: 8, Opts: Options{Causal: true, KeyLengths: []int{100, 128}}},
	{B: 1, H: 2, Hkv: 2, Nq: 129, Nk: 127, D: 5, Opts: Options{KeyLengths: []int{64}}},
	{B: 2, H: 3, Hkv: 1, Nq: 1, Nk: 129, D: 4, Opts: Options{KeyLengths: []int{65, 1}}},
	{B: 2, H: 1, Hkv: 1, Nq: 129, Nk: 1, D: 3, Opts: Options{KeyLengths: []int{0, 1}}},
	{B: 3, H: 2, Hkv: 1, Nq: 127, Nk: 127, D: 7, Opts: Options{Causal: true, KeyLengths: []int{0, 63, 126}}},
	{B: 1, H: 4, Hkv: 1, Nq: 17, Nk: 129, D: 6, Opts: Options{Causal: true, KeyLengths: []int{1}, Scale: 0.9}},
}

// TestPaddedKeysInert plants NaN, ±Inf and huge values in every padded key
// (index ≥ KeyLengths[b]) of k and v and runs the forward (o and lse) and
// the backward (with a gradient on o and on lse) of Attention and of
// Reference, in float64 and float32. Padding must never be read: every
// output and gradient must be bit-identical to the run with the same
// problem and ordinary random padding, finite, and the gradients dk, dv of
// the padded keys exactly 0. The clean run is compared with the float64
// oracle, which only reads visible keys (naive_test.go).
func TestPaddedKeysInert(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	for n, pr := range paddingProblems {
		padded := func(b, j int) bool { return j >= pr.Opts.KeyLengths[b] }
		q, k, v := pr.inputs(rng)
		do := randn(rng, pr.qLen())
		// A gradient on lse too, zero on rows without a visible key (their
		// lse is −Inf and has no gradient).
		wantO, wantL := pr.naive(q, k, v).forward()
		dl := randn(rng, pr.lLen())
		for i := range dl {
			if math.IsInf(wantL[i], -1) {
				dl[i] = 0
			}
		}
		wantDQ, wantDK, wantDV := pr.naive(q, k, v).backward(do, dl)
		want := [][]float64{wantO, wantL, wantDQ, wantDK, wantDV}
		for _, kind := range poisons {
			kp, vp, np := poisonKeys(pr, k, v, kind, rng, padded)
			if np == 0 {
				t.Fatalf("%v: no padded key; the test checks nothing", pr)
			}
			// The oracle must skip masked keys too, or it cannot judge the op.
			o, l := pr.naive(q, kp, vp).forward()
			dq, dk, dv := pr.naive(q, kp, vp).backward(do, dl)
			for i, got := range [][]float64{o, l, dq, dk, dv} {
				if maxAbsErr(got, want[i]) != 0 {
					t.Fatalf("%v %s: the oracle reads padded keys (output %d)", pr, kind, i)
				}
			}
			for _, m := range []impl{fused, decomposed} {
				t.Run(fmt.Sprintf("%d/%v/%s/%v", n, pr, kind, m), func(t *testing.T) {
					checkInert(t, pr, m, q, k, v, kp, vp, do, dl, want, padded, 1e-12)
					checkInert(t, pr, m, convert[float32](q), convert[float32](k), convert[float32](v),
						convert[float32](kp), convert[float32](vp), convert[float32](do), convert[float32](dl), want, padded, 1e-4)
				})
			}
		}
	}
}

// checkInert runs implementation m on clean (k, v) and poisoned (kp, vp)
// keys and checks the poisoned run against the clean one (bit-identical),
// the clean one against the oracle want = [o, lse, dq, dk, dv] (normwise
// relative error within tol), and that the keys with masked(b, j) get
// dk = dv = 0 exactly.
func checkInert[T Float](t *testing.T, pr problem, m impl, q, k, v, kp, vp, do, dl []T, want [][]float64, masked func(b, j int) bool, tol float64) {
	t.Helper()
	var elem T
	typ := fmt.Sprintf("float%d", 8*sizeOf(elem))
	run := func(k, v []T) [][]T {
		o, l, err := forward(pr, m, q, k, v)
		if err != nil {
			t.Fatalf("%s forward: %v", typ, err)
		}
		dq, dk, dv, err := gradients(pr, m, q, k, v, do, dl)
		if err != nil {
			t.Fatalf("%s backward: %v", typ, err)
		}
		return [][]T{o, l, dq, dk, dv}
	}
	clean, poisoned := run(k, v), run(kp, vp)
	for i, name := range []string{"o", "lse", "dq", "dk", "dv"} {
		if e := relErr(clean[i], want[i]); e > tol {
			t.Errorf("%s %s: error %.3g against the oracle (limit %.0g)", typ, name, e, tol)
		}
		for j := range clean[i] {
			c, p := clean[i][j], poisoned[i][j]
			if math.Float64bits(float64(c)) != math.Float64bits(float64(p)) || p != p || math.IsInf(float64(p), 1) {
				t.Errorf("%s %s[%d] = %v with poisoned padding, %v without", typ, name, j, p, c)
				break
			}
		}
	}
	checkMaskedGrads(t, pr, poisoned[3], poisoned[4], masked)
}

// TestCausalFutureKeysInert plants NaN, ±Inf and huge values in keys that
// the causal mask hides from the first rows but shows to later ones, in the
// same 64×64 tile as visible keys (the diagonal tile) and elsewhere. The
// rows that see no poisoned key must not notice: their o, lse and dq must
// be bit-identical to the run without poison (the rows that see a poisoned
// key and the keys those rows see are NaN, as the definition makes them).
// It runs the fused op on the CPU kernels; Reference and the CUDA kernels
// do not guarantee this (see Attention's documentation).
func TestCausalFutureKeysInert(t *testing.T) {
	defer func(was bool) { cpuOnly = was }(cpuOnly)
	cpuOnly = true
	rng := rand.New(rand.NewSource(22))
	for n, c := range []struct {
		pr     problem
		poison int // the first poisoned key: keys [poison, Nk) are poisoned
	}{
		// The reproduction: N = 4, a NaN in the last v.
		{problem{B: 1, H: 1, Hkv: 1, Nq: 4, Nk: 4, D: 2, Opts: Options{Causal: true}}, 3},
		{problem{B: 1, H: 1, Hkv: 1, Nq: 17, Nk: 17, D: 3, Opts: Options{Causal: true}}, 9},
		{problem{B: 2, H: 4, Hkv: 2, Nq: 127, Nk: 129, D: 8, Opts: Options{Causal: true}}, 70},
		{problem{B: 1, H: 2, Hkv: 1, Nq: 129, Nk: 127, D: 5, Opts: Options{Causal: true}}, 100},
		{problem{B: 2, H: 2, Hkv: 2, Nq: 129, Nk: 129, D: 4, Opts: Options{Causal: true, KeyLengths: []int{129, 128}}}, 128},
		{problem{B: 1, H: 1, Hkv: 1, Nq: 200, Nk: 200, D: 6, Opts: Options{Causal: true}}, 131},
	} {
		pr := c.pr
		future := func(b, j int) bool { return j >= c.poison }
		q, k, v := pr.inputs(rng)
		do := randn(rng, pr.qLen())
		// Rows that see no poisoned key: keyLimit ≤ poison.
		np := pr.naive(q, k, v)
		clean := func(b, i int) bool { return !np.visible(b, i, c.poison) }
		for _, kind := range poisons {
			kp, vp, _ := poisonKeys(pr, k, v, kind, rng, future)
			t.Run(fmt.Sprintf("%d/%v/poison%d/%s", n, pr, c.poison, kind), func(t *testing.T) {
				checkRowsInert(t, pr, q, k, v, kp, vp, do, clean)
				checkRowsInert(t, pr, convert[float32](q), convert[float32](k), convert[float32](v),
					convert[float32](kp), convert[float32](vp), convert[float32](do), clean)
			})
		}
	}
}

// checkRowsInert runs the fused op on clean (k, v) and poisoned (kp, vp)
// keys and requires o, lse and dq of the rows with clean(b, i) to be
// bit-identical and finite, and at least one such row.
func checkRowsInert[T Float](t *testing.T, pr problem, q, k, v, kp, vp, do []T, clean func(b, i int) bool) {
	t.Helper()
	run := func(k, v []T) [3][]T {
		o, l, err := forward(pr, fused, q, k, v)
		if err != nil {
			t.Fatal(err)
		}
		dq, _, _, err := gradients(pr, fused, q, k, v, do, nil)
		if err != nil {
			t.Fatal(err)
		}
		return [3][]T{o, l, dq}
	}
	want, got := run(k, v), run(kp, vp)
	rows := 0
	for b := 0; b < pr.B; b++ {
		for h := 0; h < pr.H; h++ {
			for i := 0; i < pr.Nq; i++ {
				if !clean(b, i) {
					continue
				}
				rows++
				row := (b*pr.H+h)*pr.Nq + i
				for x, name := range []string{"o", "lse", "dq"} {
					w := 1
					if name != "lse" {
						w = pr.D
					}
					for c := row * w; c < (row+1)*w; c++ {
						g, e := got[x][c], want[x][c]
						if math.Float64bits(float64(g)) != math.Float64bits(float64(e)) || g != g || math.IsInf(float64(g), 1) {
							t.Fatalf("row (b %d, h %d, i %d) sees no poisoned key: %s[%d] = %v, %v without poison",
								b, h, i, name, c-row*w, g, e)
						}
					}
				}
			}
		}
	}
	if rows == 0 {
		t.Fatal("no row is free of poison; the test checks nothing")
	}
}
