package cuda

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// The device tests compare every kernel with the float64 references of reference_test.go.
// They skip when no device is in use. Output buffers are poisoned (NaN) before every kernel
// runs, so an element a kernel forgets to write fails the comparison.

func TestMain(m *testing.M) {
	poison = true
	os.Exit(m.Run())
}

func needDevice(t testing.TB) {
	t.Helper()
	if !Enabled() {
		t.Skipf("no CUDA device in use (Device() = %q)", Device())
	}
}

func toType(x []float64, f64 bool) any {
	if f64 {
		return append([]float64(nil), x...)
	}
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}

// as64 returns a float64 copy of a []float32 or []float64.
func as64(x any) []float64 {
	switch s := x.(type) {
	case []float64:
		return append([]float64(nil), s...)
	case []float32:
		y := make([]float64, len(s))
		for i, v := range s {
			y[i] = float64(v)
		}
		return y
	}
	panic(fmt.Sprintf("as64: %T", x))
}

func zeros(n int, f64 bool) any {
	if f64 {
		return make([]float64, n)
	}
	return make([]float32, n)
}

// compare checks got against want: entries must agree in their non-finite values (NaN, ±Inf
// in the same places) and the finite ones within tol·max(1, max|want|). It returns the error
// measure max|got − want| / max(1, max|want|).
func compare(t *testing.T, what string, got, want []float64, tol float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 1.0
	for _, w := range want {
		if !math.IsInf(w, 0) && !math.IsNaN(w) {
			scale = math.Max(scale, math.Abs(w))
		}
	}
	worst, at := 0.0, -1
	for i := range got {
		g, w := got[i], want[i]
		if math.IsNaN(w) || math.IsInf(w, 0) {
			if !(math.IsNaN(w) && math.IsNaN(g)) && g != w {
				t.Errorf("%s[%d] = %v, want %v", what, i, g, w)
				return math.Inf(1)
			}
			continue
		}
		if math.IsNaN(g) || math.IsInf(g, 0) {
			t.Errorf("%s[%d] = %v, want %v (unwritten or overflow)", what, i, g, w)
			return math.Inf(1)
		}
		if e := math.Abs(g-w) / scale; e > worst {
			worst, at = e, i
		}
	}
	if worst > tol {
		t.Errorf("%s: error %.3g at [%d] (got %v, want %v), over %.1g", what, worst, at, got[at], want[at], tol)
	}
	return worst
}

// tolerance: float64 kernels agree with the references to rounding; float32 kernels round
// every product and sum to 24 bits.
func tolerance(f64 bool) float64 {
	if f64 {
		return 1e-11
	}
	return 3e-5
}

// ---- softmax ---------------------------------------------------------------------------------

func TestSoftmaxDevice(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(1))
	shapes := []struct {
		name            string
		outer, n, inner int
		special         bool // plant -Inf rows, a +Inf row and large offsets
	}{
		{"small/rows", 5, 7, 1, true},
		{"small/cols", 4, 6, 5, true},
		{"small/n1", 4, 1, 3, false},
		{"rows/long", 3, 5000, 1, false},
		{"rows/many", 700, 33, 1, true},
		{"cols/wide", 2, 40, 300, true},
		{"empty-n", 3, 0, 2, false},
	}
	for _, sh := range shapes {
		for _, kind := range []SoftmaxKind{Softmax, LogSoftmax, LogSumExp} {
			for _, f64 := range []bool{false, true} {
				name := fmt.Sprintf("%s/%v/%s", sh.name, kind, map[bool]string{false: "f32", true: "f64"}[f64])
				t.Run(name, func(t *testing.T) {
					size := sh.outer * sh.n * sh.inner
					x := randn(rng, size, 3)
					if sh.special && sh.n > 1 && sh.outer >= 4 {
						// Row (0, 0): all -Inf. Row (1, last): one +Inf. Row (2, 0): huge offset.
						for i := 0; i < sh.n; i++ {
							x[i*sh.inner] = math.Inf(-1)
						}
						x[1*sh.n*sh.inner+(sh.n-1)*sh.inner+sh.inner-1] = math.Inf(1)
						for i := 0; i < sh.n; i++ {
							x[2*sh.n*sh.inner+i*sh.inner] += 5000
						}
						x[3*sh.n*sh.inner+sh.inner*(sh.n/2)] = math.Inf(-1) // a single -Inf entry
					}
					xt := toType(x, f64)
					x = as64(xt) // the reference sees the rounded inputs
					want := refSoftmax(kind, x, sh.outer, sh.n, sh.inner)
					ySize := len(want)
					y := zeros(ySize, f64)
					if err := SoftmaxForward(SoftmaxParams{Kind: kind, Outer: sh.outer, N: sh.n, Inner: sh.inner, X: xt, Y: y}); err != nil {
						t.Fatal(err)
					}
					e := compare(t, "forward", as64(y), want, tolerance(f64))

					dy := randn(rng, ySize, 1)
					dyt := toType(dy, f64)
					dy = as64(dyt)
					wantDx := refSoftmaxBackward(kind, x, dy, sh.outer, sh.n, sh.inner)
					dx := zeros(size, f64)
					bp := SoftmaxParams{Kind: kind, Outer: sh.outer, N: sh.n, Inner: sh.inner, Y: toType(want, f64), DY: dyt, DX: dx}
					if kind == LogSumExp {
						bp.X = xt
					}
					if err := SoftmaxBackward(bp); err != nil {
						t.Fatal(err)
					}
					// Rows holding +Inf are NaN in the forward and have no meaningful gradient.
					gotDx := as64(dx)
					if sh.special && sh.n > 1 && sh.outer >= 4 {
						for i := 0; i < sh.n; i++ {
							at := 1*sh.n*sh.inner + i*sh.inner + sh.inner - 1
							gotDx[at], wantDx[at] = 0, 0
						}
					}
					eb := compare(t, "backward", gotDx, wantDx, tolerance(f64))
					t.Logf("forward error %.2g, backward error %.2g", e, eb)
				})
			}
		}
	}
}

// ---- attention -------------------------------------------------------------------------------

type attnCase struct {
	B, H, Hkv, Nq, Nk, D int
	Causal               bool
	KeyLengths           []int
	WithDL               bool
}

func (c attnCase) String() string {
	s := fmt.Sprintf("B%d_H%d_Hkv%d_Nq%d_Nk%d_D%d", c.B, c.H, c.Hkv, c.Nq, c.Nk, c.D)
	if c.Causal {
		s += "_causal"
	}
	if c.KeyLengths != nil {
		s += fmt.Sprintf("_kl%v", c.KeyLengths)
	}
	if c.WithDL {
		s += "_dL"
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, " ", ","), "[", "")
}

// attnGrid is the attention grid: head dimensions below, at and between the kernels' tiers
// (not multiples of 8), lengths that are not multiples of any tile, GQA, the causal mask with
// Nq ≠ Nk (bottom-right alignment, so that Nq > Nk leaves leading rows fully masked), key
// lengths including 0 (a fully masked batch). The small/ cases are the sanitizer's grid.
var attnGrid = []struct {
	name string
	c    attnCase
}{
	{"small/tiny", attnCase{1, 1, 1, 1, 1, 1, false, nil, false}},
	{"small/gqa-causal", attnCase{2, 4, 2, 17, 33, 7, true, nil, true}},
	{"small/masked", attnCase{2, 2, 1, 20, 9, 12, true, []int{0, 5}, false}},
	{"small/d40", attnCase{1, 2, 1, 35, 70, 40, false, []int{61}, false}},
	{"small/d100", attnCase{1, 1, 1, 19, 21, 100, true, nil, false}},
	{"small/d160", attnCase{1, 1, 1, 18, 20, 160, false, nil, true}},
	{"mqa-d33", attnCase{1, 3, 1, 65, 63, 33, false, nil, false}},
	{"d64-causal", attnCase{2, 2, 2, 130, 130, 64, true, nil, false}},
	{"d72-more-queries", attnCase{1, 2, 1, 200, 77, 72, true, nil, true}},
	{"d128-keylengths", attnCase{2, 2, 1, 70, 150, 128, false, []int{0, 99}, false}},
	{"d129", attnCase{1, 1, 1, 45, 90, 129, true, nil, false}},
	{"d200-gqa", attnCase{1, 4, 2, 33, 65, 200, false, nil, false}},
	{"d256", attnCase{1, 1, 1, 97, 97, 256, true, []int{50}, true}},
}

// attnProblem draws inputs for c and returns device params of the wanted element type and the
// float64 copies (rounded like the device's) the references use.
type attnProblem struct {
	p                 AttentionParams
	q, k, v, do, dl   []float64
	o, l, dq, dk, dvv []float64 // references
}

func newAttnProblem(rng *rand.Rand, c attnCase, f64 bool) *attnProblem {
	return newAttnProblemScale(rng, c, f64, 1/math.Sqrt(float64(c.D)))
}

// newAttnProblemScale is newAttnProblem with the scale given.
func newAttnProblemScale(rng *rand.Rand, c attnCase, f64 bool, scale float64) *attnProblem {
	p := AttentionParams{B: c.B, H: c.H, Hkv: c.Hkv, Nq: c.Nq, Nk: c.Nk, D: c.D, Causal: c.Causal, KeyLengths: c.KeyLengths,
		Scale: scale}
	qn, kn, ln := c.B*c.H*c.Nq*c.D, c.B*c.Hkv*c.Nk*c.D, c.B*c.H*c.Nq
	pr := &attnProblem{}
	p.Q, p.K, p.V = toType(randn(rng, qn, 1), f64), toType(randn(rng, kn, 1), f64), toType(randn(rng, kn, 1), f64)
	p.DO = toType(randn(rng, qn, 1), f64)
	if c.WithDL {
		p.DL = toType(randn(rng, ln, 1), f64)
		pr.dl = as64(p.DL)
	}
	pr.q, pr.k, pr.v, pr.do = as64(p.Q), as64(p.K), as64(p.V), as64(p.DO)
	p.O, p.L, p.LRes = zeros(qn, f64), zeros(ln, f64), zeros(ln, f64)
	p.DQ, p.DK, p.DV = zeros(qn, f64), zeros(kn, f64), zeros(kn, f64)
	pr.p = p
	pr.o, pr.l = refAttention(&p, pr.q, pr.k, pr.v)
	pr.dq, pr.dk, pr.dvv = refAttentionBackward(&p, pr.q, pr.k, pr.v, pr.do, pr.dl)
	return pr
}

func TestAttentionDevice(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(2))
	for _, g := range attnGrid {
		for _, f64 := range []bool{false, true} {
			name := g.name + "/" + map[bool]string{false: "f32", true: "f64"}[f64]
			t.Run(name, func(t *testing.T) {
				pr := newAttnProblem(rng, g.c, f64)
				tol := tolerance(f64)
				for _, variant := range []int{1, 2} {
					if err := attentionForward(pr.p, variant); err != nil {
						t.Fatalf("forward v%d: %v", variant, err)
					}
					eo := compare(t, fmt.Sprintf("v%d O", variant), as64(pr.p.O), pr.o, tol)
					el := compare(t, fmt.Sprintf("v%d L", variant), as64(pr.p.L), pr.l, tol)
					// L + LRes carries L beyond the element type's rounding.
					full := as64(pr.p.L)
					for i, r := range as64(pr.p.LRes) {
						full[i] += r
					}
					compare(t, fmt.Sprintf("v%d L+LRes", variant), full, pr.l, tol/4)
					t.Logf("forward v%d: O error %.2g, L error %.2g", variant, eo, el)
				}
				// The backward takes O, L and L's residual from the reference, so it is checked on
				// its own.
				pr.p.O, pr.p.L = toType(pr.o, f64), toType(pr.l, f64)
				res := as64(pr.p.L)
				for i, l := range pr.l {
					if math.IsInf(l, -1) {
						res[i] = 0
					} else {
						res[i] = l - res[i]
					}
				}
				pr.p.LRes = toType(res, f64)
				if err := AttentionBackward(pr.p); err != nil {
					t.Fatal(err)
				}
				eq := compare(t, "dQ", as64(pr.p.DQ), pr.dq, tol)
				ek := compare(t, "dK", as64(pr.p.DK), pr.dk, tol)
				ev := compare(t, "dV", as64(pr.p.DV), pr.dvv, tol)
				t.Logf("backward: dQ error %.2g, dK error %.2g, dV error %.2g", eq, ek, ev)
				// Fully masked rows: exactly zero output and gradient, L = -Inf.
				for row := 0; row < g.c.B*g.c.H*g.c.Nq; row++ {
					if !math.IsInf(pr.l[row], -1) {
						continue
					}
					for c := 0; c < g.c.D; c++ {
						if as64(pr.p.DQ)[row*g.c.D+c] != 0 {
							t.Fatalf("masked row %d: dQ not 0", row)
						}
					}
				}
			})
		}
	}
}

// maskedKeyGrid holds the problems of TestAttentionDeviceMaskedKeysInert: the reproduction of
// issue 8 (B = H = 1, N = 4, d = 2, KeyLengths {2}), lengths on both sides of the kernels' 16-,
// 32- and 64-row tiles (1, 17, 127, 129), a key length on a tile boundary (64), GQA, the causal
// mask with padding, batch elements without any key, and every head-dimension tier.
var maskedKeyGrid = []struct {
	name string
	c    attnCase
}{
	{"issue8-repro", attnCase{1, 1, 1, 4, 4, 2, false, []int{2}, false}},
	{"n17-gqa", attnCase{2, 4, 2, 17, 17, 3, false, []int{5, 16}, true}},
	{"n127-129-causal", attnCase{2, 2, 1, 127, 129, 8, true, []int{100, 128}, true}},
	{"n129-127-kl64-d33", attnCase{1, 2, 2, 129, 127, 33, false, []int{64}, false}},
	{"nq1-d64", attnCase{2, 3, 1, 1, 129, 64, false, []int{65, 1}, true}},
	{"nk1-empty-batch", attnCase{2, 1, 1, 129, 1, 5, false, []int{0, 1}, false}},
	{"causal-d128", attnCase{3, 2, 1, 127, 127, 128, true, []int{0, 63, 126}, true}},
	{"d200-gqa", attnCase{1, 4, 2, 33, 129, 200, false, []int{97}, false}},
	{"d256-causal", attnCase{1, 1, 1, 97, 97, 256, true, []int{50}, true}},
}

// nonFinite are the values the masked-keys tests plant in padded keys.
var nonFinite = []struct {
	name string
	v    float64
}{{"NaN", math.NaN()}, {"+Inf", math.Inf(1)}, {"-Inf", math.Inf(-1)}}

// poisonPaddedKeys returns copies of k and v [B,Hkv,Nk,d] in which every element of every
// padded key (index j ≥ KeyLengths[b]) is bad, and how many keys of all (b, hkv) that is.
func poisonPaddedKeys(c attnCase, k, v []float64, bad float64) (kb, vb []float64, padded int) {
	kb, vb = append([]float64(nil), k...), append([]float64(nil), v...)
	for b := 0; b < c.B; b++ {
		for hk := 0; hk < c.Hkv; hk++ {
			for j := c.KeyLengths[b]; j < c.Nk; j++ {
				padded++
				for x := 0; x < c.D; x++ {
					at := ((b*c.Hkv+hk)*c.Nk+j)*c.D + x
					kb[at], vb[at] = bad, bad
				}
			}
		}
	}
	return kb, vb, padded
}

// TestAttentionDeviceMaskedKeysInert plants NaN, +Inf or -Inf in every padded key (index >=
// KeyLengths[b]) of K and V and runs both forward variants and the backward (after the
// production forward, variant 2). Padded keys must never be read: every output (O, L, LRes,
// dQ, dK, dV) must be bit-identical to the run with ordinary random padding, agree with the
// float64 references (which only read visible keys), hold no NaN or +Inf, and dK, dV of the
// padded keys must be exactly 0. Before the fix, a NaN in a padded V made every dQ of its
// (b, h) NaN (0·NaN in dS = P∘(dP − delta) and in P·V of the tile loads up to Nk).
func TestAttentionDeviceMaskedKeysInert(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(9))
	for _, g := range maskedKeyGrid {
		for _, f64 := range []bool{false, true} {
			for _, bad := range nonFinite {
				name := g.name + "/" + map[bool]string{false: "f32", true: "f64"}[f64] + "/" + bad.name
				t.Run(name, func(t *testing.T) {
					c := g.c
					pr := newAttnProblem(rng, c, f64)
					kp, vp, padded := poisonPaddedKeys(c, pr.k, pr.v, bad.v)
					if padded == 0 {
						t.Fatal("no padded key: the case checks nothing")
					}
					tol := tolerance(f64)
					for _, variant := range []int{1, 2} {
						clean := runAttentionDevice(t, pr.p, variant)
						p := pr.p
						p.K, p.V = toType(kp, f64), toType(vp, f64)
						got := runAttentionDevice(t, p, variant)
						for i, what := range []string{"O", "L", "LRes", "dQ", "dK", "dV"} {
							for j := range got[i] {
								x, y := got[i][j], clean[i][j]
								if math.Float64bits(x) != math.Float64bits(y) || math.IsNaN(x) || math.IsInf(x, 1) {
									t.Fatalf("v%d %s[%d] = %v with %s in the padded keys, %v without", variant, what, j, x, bad.name, y)
								}
							}
						}
						compare(t, fmt.Sprintf("v%d O", variant), got[0], pr.o, tol)
						compare(t, fmt.Sprintf("v%d L", variant), got[1], pr.l, tol)
						compare(t, fmt.Sprintf("v%d dQ", variant), got[3], pr.dq, 10*tol)
						compare(t, fmt.Sprintf("v%d dK", variant), got[4], pr.dk, 10*tol)
						compare(t, fmt.Sprintf("v%d dV", variant), got[5], pr.dvv, 10*tol)
						for b := 0; b < c.B; b++ {
							for hk := 0; hk < c.Hkv; hk++ {
								for j := c.KeyLengths[b]; j < c.Nk; j++ {
									at := ((b*c.Hkv+hk)*c.Nk + j) * c.D
									for x := 0; x < c.D; x++ {
										if got[4][at+x] != 0 || got[5][at+x] != 0 {
											t.Fatalf("v%d: padded key (b %d, hkv %d, j %d): dK = %v, dV = %v, want 0",
												variant, b, hk, j, got[4][at:at+c.D], got[5][at:at+c.D])
										}
									}
								}
							}
						}
					}
				})
			}
		}
	}
}

// runAttentionDevice runs forward variant `variant` on p's inputs into fresh outputs, then the
// backward from the device's own O, L and LRes, and returns float64 copies of O, L, LRes, dQ,
// dK, dV.
func runAttentionDevice(t *testing.T, p AttentionParams, variant int) [6][]float64 {
	t.Helper()
	f64 := false
	if _, ok := p.Q.([]float64); ok {
		f64 = true
	}
	qn, kn, ln := p.B*p.H*p.Nq*p.D, p.B*p.Hkv*p.Nk*p.D, p.B*p.H*p.Nq
	p.O, p.L, p.LRes = zeros(qn, f64), zeros(ln, f64), zeros(ln, f64)
	p.DQ, p.DK, p.DV = zeros(qn, f64), zeros(kn, f64), zeros(kn, f64)
	if err := attentionForward(p, variant); err != nil {
		t.Fatalf("forward v%d: %v", variant, err)
	}
	if err := AttentionBackward(p); err != nil {
		t.Fatalf("backward: %v", err)
	}
	return [6][]float64{as64(p.O), as64(p.L), as64(p.LRes), as64(p.DQ), as64(p.DK), as64(p.DV)}
}

// TestAttentionGradCheck checks the device backward against central differences of the
// device forward in float64: the loss Σ wO∘O + Σ wL∘L (wL = 0 on rows without a visible key,
// where L = −Inf), differentiated by the backward with DO = wO, DL = wL.
func TestAttentionGradCheck(t *testing.T) {
	needDevice(t)
	const eps, atol, rtol = 1e-6, 1e-5, 1e-3
	rng := rand.New(rand.NewSource(3))
	for _, c := range []attnCase{
		{1, 2, 1, 5, 7, 3, true, nil, true},
		{2, 2, 2, 4, 3, 5, false, []int{2, 0}, true},
		{1, 1, 1, 6, 6, 4, true, nil, false},
	} {
		t.Run(c.String(), func(t *testing.T) {
			pr := newAttnProblem(rng, c, true)
			p := pr.p
			wO := pr.do
			wL := make([]float64, c.B*c.H*c.Nq)
			if c.WithDL {
				wL = pr.dl
			}
			for i, l := range pr.l {
				if math.IsInf(l, -1) {
					wL[i] = 0
				}
			}
			p.DL = wL
			loss := func() float64 {
				if err := AttentionForward(p); err != nil {
					t.Fatal(err)
				}
				s := 0.0
				for i, o := range p.O.([]float64) {
					s += wO[i] * o
				}
				for i, l := range p.L.([]float64) {
					if wL[i] != 0 {
						s += wL[i] * l
					}
				}
				return s
			}
			loss()
			if err := AttentionBackward(p); err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for _, in := range []struct {
				name string
				x    []float64
				g    []float64
			}{{"Q", p.Q.([]float64), p.DQ.([]float64)}, {"K", p.K.([]float64), p.DK.([]float64)}, {"V", p.V.([]float64), p.DV.([]float64)}} {
				for i := range in.x {
					x0 := in.x[i]
					in.x[i] = x0 + eps
					lp := loss()
					in.x[i] = x0 - eps
					lm := loss()
					in.x[i] = x0
					num := (lp - lm) / (2 * eps)
					diff := math.Abs(in.g[i] - num)
					if diff > atol+rtol*math.Abs(num) {
						t.Errorf("d%s[%d]: backward %v, central difference %v", in.name, i, in.g[i], num)
					}
					worst = math.Max(worst, diff)
				}
			}
			t.Logf("max |backward − central difference| = %.2g", worst)
		})
	}
}

// TestDeterminism runs forward and backward 50 times on the same input and requires every
// output bit-identical to the first run's.
func TestDeterminism(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(4))
	for _, c := range []attnCase{
		{2, 4, 2, 300, 280, 64, true, nil, false},
		{1, 2, 1, 150, 170, 128, false, []int{120}, true},
	} {
		t.Run(c.String(), func(t *testing.T) {
			pr := newAttnProblem(rng, c, false)
			p := pr.p
			var first [][]byte
			for run := 0; run < 50; run++ {
				if err := AttentionForward(p); err != nil {
					t.Fatal(err)
				}
				if err := AttentionBackward(p); err != nil {
					t.Fatal(err)
				}
				outs := [][]byte{}
				for _, x := range []any{p.O, p.L, p.DQ, p.DK, p.DV} {
					ptr, n := hostBytes(x)
					outs = append(outs, append([]byte(nil), unsafe.Slice((*byte)(ptr), n)...))
				}
				if run == 0 {
					first = outs
					continue
				}
				for i, name := range []string{"O", "L", "dQ", "dK", "dV"} {
					if string(outs[i]) != string(first[i]) {
						t.Fatalf("run %d: %s differs from run 0", run, name)
					}
				}
			}
			t.Logf("O, L, dQ, dK, dV bit-identical over 50 runs")
		})
	}
}

// TestBackwardReadsHostL checks that the backward after a forward is right and reads the L
// it is given: an L changed on the host changes dQ (no stale device copy is used).
func TestBackwardReadsHostL(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(5))
	pr := newAttnProblem(rng, attnCase{1, 2, 1, 40, 50, 16, true, nil, false}, true)
	p := pr.p
	if err := AttentionForward(p); err != nil {
		t.Fatal(err)
	}
	if err := AttentionBackward(p); err != nil {
		t.Fatal(err)
	}
	compare(t, "dQ", as64(p.DQ), pr.dq, 1e-11)
	// A changed L (here: shifted by log 2 on one row, which halves that row's P) must be read
	// from the host.
	p.L.([]float64)[7] += math.Ln2
	if err := AttentionBackward(p); err != nil {
		t.Fatal(err)
	}
	if math.Abs(p.DQ.([]float64)[7*16]-pr.dq[7*16]) < 1e-9*math.Abs(pr.dq[7*16]) && pr.dq[7*16] != 0 {
		t.Errorf("the changed L had no effect on dQ")
	}
}

// TestMemoryStable runs ten training-like steps (forward and backward of two layers) and
// requires the device memory the package holds to stay the same after the first step.
func TestMemoryStable(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(6))
	layers := []*attnProblem{
		newAttnProblem(rng, attnCase{2, 4, 2, 64, 64, 32, true, nil, false}, false),
		newAttnProblem(rng, attnCase{2, 4, 2, 64, 64, 32, true, nil, false}, false),
	}
	var after1 int64
	for step := 0; step < 10; step++ {
		for _, l := range layers {
			if err := AttentionForward(l.p); err != nil {
				t.Fatal(err)
			}
		}
		for i := len(layers) - 1; i >= 0; i-- {
			if err := AttentionBackward(layers[i].p); err != nil {
				t.Fatal(err)
			}
		}
		if step == 0 {
			after1 = MemoryInUse()
		} else if m := MemoryInUse(); m != after1 {
			t.Fatalf("step %d: %d bytes of device memory held, %d after step 0", step, m, after1)
		}
	}
	t.Logf("%d bytes of device memory held from step 0 on", after1)
}

// TestConcurrent runs problems from several goroutines at once; each must get its own right
// answer (the worker serializes the CUDA calls).
func TestConcurrent(t *testing.T) {
	needDevice(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(100 + g)))
			pr := newAttnProblem(rng, attnCase{1, 2, 1, 20 + g, 30 + 2*g, 8 + g, g%2 == 0, nil, false}, g%3 == 0)
			for it := 0; it < 5; it++ {
				if err := AttentionForward(pr.p); err != nil {
					errs <- err
					return
				}
				o := as64(pr.p.O)
				for i := range o {
					if math.Abs(o[i]-pr.o[i]) > 1e-4 {
						errs <- fmt.Errorf("goroutine %d: O[%d] = %v, want %v", g, i, o[i], pr.o[i])
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestErrors checks that CUDA failures come back as *Error values naming the op and the CUDA
// error, and that the next call works: an allocation the device cannot hold, and (in a child
// process, see TestKernelFault) a kernel that faults.
func TestErrors(t *testing.T) {
	needDevice(t)
	err := run("test allocation", func(s *state) error {
		sc := &scope{s: s}
		defer sc.done()
		_, err := sc.alloc(1 << 50)
		return err
	})
	var ce *Error
	if !errors.As(err, &ce) || ce.Name != "CUDA_ERROR_OUT_OF_MEMORY" || ce.Op != "test allocation" {
		t.Fatalf("a 1 PiB allocation: %v, want a *Error CUDA_ERROR_OUT_OF_MEMORY for op \"test allocation\"", err)
	}
	t.Logf("out of memory: %v", err)
	if msg := attentionAfter(rand.New(rand.NewSource(7))); msg != "ok" {
		t.Fatalf("after out of memory: %s", msg)
	}
}

// attentionAfter runs a small attention forward and says "ok" when it matches the reference,
// or what went wrong.
func attentionAfter(rng *rand.Rand) string {
	pr := newAttnProblem(rng, attnCase{1, 2, 1, 33, 40, 24, true, nil, false}, true)
	if err := AttentionForward(pr.p); err != nil {
		var ce *Error
		switch {
		case errors.As(err, &ce):
			return "clean error: " + err.Error()
		case errors.Is(err, ErrNoDevice):
			return "clean error: " + err.Error() + "; Device() = " + Device()
		}
		return "error that is not a *Error: " + err.Error()
	}
	for i, o := range pr.p.O.([]float64) {
		if math.Abs(o-pr.o[i]) > 1e-11 {
			return fmt.Sprintf("wrong result: O[%d] = %v, want %v", i, o, pr.o[i])
		}
	}
	return "ok"
}

// TestKernelFault launches a kernel that traps, in a child process (a fault can leave CUDA
// unusable for the rest of a process). The fault must come back as a *Error naming the op and
// the CUDA error; the calls after it must either work (the launcher reset the context) or
// fail cleanly (a *Error, or ErrNoDevice once the device is marked lost and Enabled reports
// false, so that the ops run on the CPU), never crash or return wrong results.
func TestKernelFault(t *testing.T) {
	if os.Getenv("FG_FAULT_CHILD") == "1" {
		if !Enabled() {
			fmt.Println("child: no device")
			return
		}
		err := run("test fault", func(s *state) error {
			kp := softmaxParams{}
			if err := s.start("debug", "fg_debug_trap", [3]int{1, 1, 1}, 32, 0, unsafe.Pointer(&kp)); err != nil {
				return err
			}
			return ctxSynchronize("fg_debug_trap")
		})
		var ce *Error
		if errors.As(err, &ce) && strings.HasPrefix(ce.Name, "CUDA_ERROR_") && ce.Op == "test fault" {
			fmt.Printf("child: fault: %v\n", err)
		} else {
			fmt.Printf("child: fault gave %v, want a *Error\n", err)
		}
		rng := rand.New(rand.NewSource(8))
		for i := 0; i < 3; i++ {
			fmt.Printf("child: call %d after the fault: %s\n", i, attentionAfter(rng))
		}
		return
	}
	needDevice(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestKernelFault$", "-test.v")
	cmd.Env = append(os.Environ(), "FG_FAULT_CHILD=1")
	out, err := cmd.CombinedOutput()
	t.Logf("child process:\n%s", out)
	if err != nil {
		t.Fatalf("child process failed: %v", err)
	}
	lines := 0
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(l, "child: fault: cuda: test fault: "):
			lines++
		case strings.HasPrefix(l, "child: call "):
			lines++
			if !strings.HasSuffix(l, ": ok") && !strings.Contains(l, ": clean error: ") {
				t.Errorf("%s", l)
			}
		case strings.HasPrefix(l, "child: "):
			t.Errorf("%s", l)
		}
	}
	if lines != 4 {
		t.Errorf("child printed %d of the 4 expected lines", lines)
	}
}

// TestDeviceSelection runs this test binary again with FLASHGORGON_DEVICE=cpu and requires the
// CPU path to be chosen; and checks that this process names a CUDA device.
func TestDeviceSelection(t *testing.T) {
	if os.Getenv("FG_REPORT_DEVICE") == "1" {
		fmt.Printf("device=%s enabled=%v\n", Device(), Enabled())
		return
	}
	needDevice(t)
	if !strings.HasPrefix(Device(), "cuda:0 (") {
		t.Errorf("Device() = %q, want cuda:0 (...)", Device())
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeviceSelection$", "-test.v")
	cmd.Env = append(os.Environ(), "FG_REPORT_DEVICE=1", "FLASHGORGON_DEVICE=cpu")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "device=cpu enabled=false") || !strings.Contains(string(out), "FLASHGORGON_DEVICE=cpu") {
		t.Errorf("with FLASHGORGON_DEVICE=cpu:\n%s", out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "device=") || strings.Contains(l, "flashgorgon:") {
			t.Logf("with FLASHGORGON_DEVICE=cpu: %s", strings.TrimSpace(l))
		}
	}
	t.Logf("this process: %s", Device())
}
