package attention

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/flashgorgon/flashgorgon/cuda"
)

// FuzzAttention runs Attention and Reference forward (o and lse) and
// backward (gradients through o and lse) on a random problem and compares
// them with the float64 oracle of naive_test.go, a plain loop over the
// definition that reads visible keys only. The fuzzer picks the sizes (B,
// H, Hkv, Nq, Nk up to 140 across the 64-row tiles, d up to 24), the
// options (causal, scale, key lengths), the element type, the values
// (normal, times a magnitude up to 4) and what the masked keys hold:
//
//	poison 0: ordinary values
//	poison 1–4: NaN, +Inf, −Inf or a mix with ±1e30 in every padded key
//	            (with key lengths drawn when the problem has none)
//	poison 5–8: the same in the last keys of a causal problem (the mask
//	            switched on), hidden from the first rows and seen by later ones
//
// Where the oracle is finite the op must be too, within 1e-10 (float64)
// or a float32 bound that grows with the largest score, the longest sum
// and the magnitude of the values (see tol32),
// relative to max(1, the largest entry of the oracle's output); lse must be
// −Inf exactly on the oracle's −Inf rows, and the padded keys' dk and dv
// must be exactly 0. With poison in causal keys, what depends on a
// poisoned key is not judged (unjudged): only the rows that see none.
// Reference, like the CUDA kernels, does not make keys hidden by the causal
// mask inert (see Attention), so poison 5–8 checks the fused op on the CPU
// only.
//
// The seed corpus below runs with every go test; fuzz with
//
//	go test ./ops/attention -run '^$' -fuzz FuzzAttention -fuzztime 5m -parallel 1
func FuzzAttention(f *testing.F) {
	// b, h, hkv, nq, nk, d, causal, scale, kl, f32, poison, magnitude, seed
	f.Add(uint8(0), uint8(0), uint8(0), uint8(3), uint8(3), uint8(1), false, uint8(0), uint8(1), false, uint8(1), uint8(0), int64(1)) // issue 8: N=4, d=2, NaN in padding
	f.Add(uint8(0), uint8(0), uint8(0), uint8(3), uint8(3), uint8(1), true, uint8(0), uint8(0), false, uint8(5), uint8(0), int64(2))  // issue 8: NaN in a causal future key
	f.Add(uint8(1), uint8(1), uint8(1), uint8(16), uint8(16), uint8(2), false, uint8(3), uint8(2), true, uint8(2), uint8(1), int64(3))
	f.Add(uint8(2), uint8(2), uint8(0), uint8(126), uint8(128), uint8(7), true, uint8(0), uint8(3), false, uint8(4), uint8(2), int64(4))
	f.Add(uint8(0), uint8(3), uint8(2), uint8(128), uint8(126), uint8(4), true, uint8(9), uint8(1), true, uint8(8), uint8(3), int64(5))
	f.Add(uint8(1), uint8(0), uint8(1), uint8(0), uint8(128), uint8(23), false, uint8(0), uint8(1), true, uint8(3), uint8(0), int64(6))
	f.Add(uint8(0), uint8(1), uint8(0), uint8(139), uint8(0), uint8(0), true, uint8(5), uint8(2), false, uint8(0), uint8(1), int64(7))
	f.Add(uint8(2), uint8(0), uint8(2), uint8(64), uint8(63), uint8(15), true, uint8(7), uint8(2), true, uint8(6), uint8(3), int64(8))
	f.Add(uint8(1), uint8(2), uint8(2), uint8(65), uint8(65), uint8(9), false, uint8(1), uint8(3), false, uint8(2), uint8(2), int64(9))
	f.Fuzz(func(t *testing.T, b, h, hkv, nq, nk, d uint8, causal bool, scale, kl uint8, f32 bool, poison, magnitude uint8, seed int64) {
		rng := rand.New(rand.NewSource(seed))
		g, kvh := 1+int(h)%3, 1+int(hkv)%3
		pr := problem{B: 1 + int(b)%3, H: g * kvh, Hkv: kvh, Nq: 1 + int(nq)%140, Nk: 1 + int(nk)%140, D: 1 + int(d)%24,
			Opts: Options{Causal: causal}}
		if scale%4 != 0 { // otherwise the default 1/√d
			pr.Opts.Scale = (rng.Float64()*2 - 1) * float64(scale%4)
		}
		// Key lengths: none, or a random length per batch element
		// (kl 1: anything in [0, Nk]; kl 2, 3: at least 1, at most Nk − 1,
		// so that there is padding and no empty batch element).
		if kl%4 != 0 {
			pr.Opts.KeyLengths = make([]int, pr.B)
			for i := range pr.Opts.KeyLengths {
				if kl%4 == 1 || pr.Nk < 2 {
					pr.Opts.KeyLengths[i] = rng.Intn(pr.Nk + 1)
				} else {
					pr.Opts.KeyLengths[i] = 1 + rng.Intn(pr.Nk-1)
				}
			}
		}
		mag := []float64{0.5, 1, 2, 4}[magnitude%4]
		q, k, v := pr.inputs(rng)
		for _, x := range [][]float64{q, k, v} {
			for i := range x {
				x[i] *= mag
			}
		}
		// What the masked keys hold.
		kind := ""
		if p := poison % 9; p > 0 {
			kind = poisons[(p-1)%4]
		}
		causalPoison := poison%9 >= 5
		first := pr.Nk // the first poisoned causal key
		var masked func(b, j int) bool
		switch {
		case kind == "":
		case causalPoison: // implies the causal mask
			if !cpuOnly && cuda.Enabled() {
				t.Skip("poison in causal keys is inert on the CPU kernels only")
			}
			pr.Opts.Causal = true
			first = pr.Nk - 1 - rng.Intn(min(pr.Nk, 8))
			masked = func(b, j int) bool { return j >= first }
		default: // implies padding
			if pr.Opts.KeyLengths == nil {
				pr.Opts.KeyLengths = make([]int, pr.B)
				for i := range pr.Opts.KeyLengths {
					pr.Opts.KeyLengths[i] = rng.Intn(pr.Nk)
				}
			}
			masked = func(b, j int) bool { return j >= pr.Opts.KeyLengths[b] }
		}
		if masked != nil {
			k, v, _ = poisonKeys(pr, k, v, kind, rng, masked)
		}
		do := randn(rng, pr.qLen())
		np := pr.naive(q, k, v)
		wantO, wantL := np.forward()
		dl := randn(rng, pr.lLen())
		for i := range dl {
			if math.IsInf(wantL[i], -1) {
				dl[i] = 0 // no gradient reaches an empty row's −Inf
			}
		}
		wantDQ, wantDK, wantDV := np.backward(do, dl)
		want := [][]float64{wantO, wantL, wantDQ, wantDK, wantDV}
		if causalPoison {
			unjudged(pr, np, first, want)
		}

		impls := []impl{fused, decomposed}
		if causalPoison {
			impls = impls[:1]
		}
		for _, m := range impls {
			var got [][]float64
			var tol float64
			if f32 {
				// The oracle runs on the float32-rounded inputs.
				q32, k32, v32 := convert[float32](q), convert[float32](k), convert[float32](v)
				do32, dl32 := convert[float32](do), convert[float32](dl)
				np32 := pr.naive(convert[float64](q32), convert[float64](k32), convert[float64](v32))
				wantO, wantL := np32.forward()
				wantDQ, wantDK, wantDV := np32.backward(convert[float64](do32), convert[float64](dl32))
				want = [][]float64{wantO, wantL, wantDQ, wantDK, wantDV}
				if causalPoison {
					unjudged(pr, np32, first, want)
				}
				got = runFuzz(t, pr, m, q32, k32, v32, do32, dl32)
				tol = tol32(pr, np32, mag)
			} else {
				got = runFuzz(t, pr, m, q, k, v, do, dl)
				tol = 1e-10
			}
			for i, name := range []string{"o", "lse", "dq", "dk", "dv"} {
				if msg := agree(got[i], want[i], tol); msg != "" {
					t.Fatalf("%v %v float32=%t poison %q: %s %s", pr, m, f32, kind, name, msg)
				}
			}
			if masked != nil && !causalPoison {
				checkMaskedGrads(t, pr, got[3], got[4], masked)
			}
		}
	})
}

// unjudged marks NaN (anything goes) in want = [o, lse, dq, dk, dv] what
// depends on the poisoned keys j ≥ first: o, lse and dq of the rows that
// see one, and dk, dv of every key of a batch element where some row sees
// one (the last row sees every key the others see). Those values are
// undefined: the oracle's convention for a row whose every score is −Inf
// (o = 0, L = −Inf, as for a row without a key) need not be the op's.
func unjudged(pr problem, np *naiveProblem, first int, want [][]float64) {
	nan := math.NaN()
	for b := 0; b < pr.B; b++ {
		if !np.visible(b, pr.Nq-1, first) {
			continue
		}
		for g := 0; g < pr.Hkv; g++ {
			at := (b*pr.Hkv + g) * pr.Nk * pr.D
			for i := at; i < at+pr.Nk*pr.D; i++ {
				want[3][i], want[4][i] = nan, nan
			}
		}
		for h := 0; h < pr.H; h++ {
			for i := 0; i < pr.Nq; i++ {
				if !np.visible(b, i, first) {
					continue
				}
				row := (b*pr.H+h)*pr.Nq + i
				want[1][row] = nan
				for c := row * pr.D; c < (row+1)*pr.D; c++ {
					want[0][c], want[2][c] = nan, nan
				}
			}
		}
	}
}

// runFuzz runs implementation m forward and backward and returns float64
// copies of o, lse, dq, dk, dv.
func runFuzz[T Float](t *testing.T, pr problem, m impl, q, k, v, do, dl []T) [][]float64 {
	t.Helper()
	o, l, err := forward(pr, m, q, k, v)
	if err != nil {
		t.Fatalf("%v %v forward: %v", pr, m, err)
	}
	dq, dk, dv, err := gradients(pr, m, q, k, v, do, dl)
	if err != nil {
		t.Fatalf("%v %v backward: %v", pr, m, err)
	}
	return [][]float64{convert[float64](o), convert[float64](l), convert[float64](dq), convert[float64](dk), convert[float64](dv)}
}

// agree compares got with the oracle's want: where want is finite, got must
// be finite and within tol·max(1, max|want|); where want is −Inf (lse of an
// empty row), got must be −Inf; where want is NaN or +Inf (a row that sees
// a poisoned key), anything goes. It returns "" or what is wrong.
func agree(got, want []float64, tol float64) string {
	scale := 1.0
	for _, w := range want {
		if !math.IsNaN(w) && !math.IsInf(w, 0) {
			scale = math.Max(scale, math.Abs(w))
		}
	}
	for i, w := range want {
		g := got[i]
		switch {
		case math.IsInf(w, -1):
			if !math.IsInf(g, -1) {
				return fmt.Sprintf("[%d] = %v, want -Inf", i, g)
			}
		case math.IsNaN(w) || math.IsInf(w, 1):
		case math.IsNaN(g) || math.IsInf(g, 0):
			return fmt.Sprintf("[%d] = %v, want %v", i, g, w)
		case math.Abs(g-w) > tol*scale:
			return fmt.Sprintf("[%d] = %v, want %v (error %.3g > %.3g relative to %.3g)", i, g, w, math.Abs(g-w)/scale, tol, scale)
		}
	}
	return ""
}

// tol32 bounds the float32 error of o, lse and the gradients relative to
// max(1, their largest entry), in units of u = 2⁻²⁴, from two sources:
//
//   - each score s = Scale·q·k is rounded with an error of a few
//     u·Scale·Σ_c|q_c·k_c| (the absolute score |s|abs), which becomes the
//     relative error of its probability after the exp: 64·(1 + max |s|abs);
//   - each output is a sum of n terms (o and dq over the Nk keys, dk and dv
//     over the G·Nq queries of a kv head, the scores over d), each addition
//     rounding the partial sum, whose size grows with the values'
//     magnitude: 8·n·mag².
//
// Fuzzing found the second needed: dv of a Reference run summing 420 terms
// (B1 H3 Hkv1 Nq140 Nk1, float32) was 108 u off, over the 104 u of the
// first term alone.
// The CUDA kernels sum in float32 registers (see TestDeviceVersusCPU): 8×
// more there.
func tol32(pr problem, np *naiveProblem, mag float64) float64 {
	var smax float64
	g := pr.H / pr.Hkv
	for b := 0; b < pr.B; b++ {
		for h := 0; h < pr.H; h++ {
			for i := 0; i < pr.Nq; i++ {
				qi := np.Q[((b*pr.H+h)*pr.Nq+i)*pr.D:][:pr.D]
				for j := 0; j < pr.Nk; j++ {
					if !np.visible(b, i, j) {
						continue // masked keys (and their poison) make no score
					}
					kj := np.K[((b*pr.Hkv+h/g)*pr.Nk+j)*pr.D:][:pr.D]
					var abs float64
					for c := range qi {
						abs += math.Abs(qi[c] * kj[c])
					}
					smax = math.Max(smax, math.Abs(np.Scale)*abs)
				}
			}
		}
	}
	n := max(pr.Nk, pr.H/pr.Hkv*pr.Nq, pr.D)
	tol := (64*(1+smax) + 8*float64(n)*mag*mag) * 0x1p-24
	if !cpuOnly && cuda.Enabled() {
		tol *= 8
	}
	return tol
}

// checkMaskedGrads requires dk = dv = 0 exactly for the keys with
// masked(b, j).
func checkMaskedGrads[T Float](t *testing.T, pr problem, dk, dv []T, masked func(b, j int) bool) {
	t.Helper()
	for b := 0; b < pr.B; b++ {
		for g := 0; g < pr.Hkv; g++ {
			for j := 0; j < pr.Nk; j++ {
				if !masked(b, j) {
					continue
				}
				at := ((b*pr.Hkv+g)*pr.Nk + j) * pr.D
				for c := 0; c < pr.D; c++ {
					if dk[at+c] != 0 || dv[at+c] != 0 {
						t.Fatalf("%v: masked key (b %d, g %d, j %d): dk = %v, dv = %v, want 0",
							pr, b, g, j, dk[at:at+pr.D], dv[at:at+pr.D])
					}
				}
			}
		}
	}
}
