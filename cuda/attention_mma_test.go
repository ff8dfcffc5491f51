package cuda

import (
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/flashgorgon/flashgorgon/internal/attnspec"
)

// Tests of the tensor-core forward (kernels/attention_mma.cu). The device tests compare each
// precision with the float64 reference of reference_test.go and bound its error by twice the
// error of a naive CPU computation in the same precision (refAttentionNaive below).

// roundBF16 rounds x to bfloat16 (8 mantissa bits) to nearest even, as cvt.rn.bf16x2.f32.
func roundBF16(x float32) float32 {
	if x != x || math.IsInf(float64(x), 0) {
		return x
	}
	b := math.Float32bits(x)
	b += 0x7fff + (b>>16)&1
	return math.Float32frombits(b &^ 0xffff)
}

// roundTF32 rounds x to TF32 (10 mantissa bits) to nearest, ties away from zero, as
// cvt.rna.tf32.f32.
func roundTF32(x float32) float32 {
	if x != x || math.IsInf(float64(x), 0) {
		return x
	}
	return math.Float32frombits((math.Float32bits(x) + 0x1000) &^ 0x1fff)
}

// precisionRound returns how precision prec rounds a product's operands (none for Exact).
func precisionRound(prec Precision) func(float32) float32 {
	switch prec {
	case PrecisionBF16:
		return roundBF16
	case PrecisionTF32:
		return roundTF32
	}
	return func(x float32) float32 { return x }
}

// refAttentionNaive returns O and L computed the plain way in float32 (every product and sum
// rounded to float32, sums in order), with the operands of both products rounded as prec
// rounds them: s_ij = Σ_c r(q_ic)·r(k_jc), m_i = max_j scale·s_ij, p_ij = exp(scale·s_ij − m_i),
// l_i = Σ_j p_ij, O_ic = Σ_j r(p_ij)·r(v_jc) / l_i, L_i = m_i + log l_i. This is the accuracy a
// straightforward implementation in prec reaches; the kernels must stay within twice its error.
func refAttentionNaive(p *AttentionParams, q, k, v []float64, prec Precision) (o, l []float64) {
	r := precisionRound(prec)
	D := p.D
	rq, rk, rv := make([]float32, len(q)), make([]float32, len(k)), make([]float32, len(v))
	for i := range q {
		rq[i] = r(float32(q[i]))
	}
	for i := range k {
		rk[i], rv[i] = r(float32(k[i])), r(float32(v[i]))
	}
	scale := float32(p.Scale)
	o = make([]float64, len(q))
	l = make([]float64, p.B*p.H*p.Nq)
	s := make([]float32, p.Nk)
	acc := make([]float32, D)
	eachQueryRow(p, func(row, kv, lim int) {
		if lim == 0 {
			l[row] = math.Inf(-1)
			return
		}
		mx := float32(math.Inf(-1))
		for j := 0; j < lim; j++ {
			var dot float32
			for c := 0; c < D; c++ {
				dot += float32(rq[row*D+c] * rk[kv+j*D+c])
			}
			s[j] = float32(dot * scale)
			mx = max(mx, s[j])
		}
		var sum float32
		clear(acc)
		for j := 0; j < lim; j++ {
			pj := float32(math.Exp(float64(s[j] - mx)))
			sum += pj
			pr := r(pj)
			for c := 0; c < D; c++ {
				acc[c] += float32(pr * rv[kv+j*D+c])
			}
		}
		for c := 0; c < D; c++ {
			o[row*D+c] = float64(acc[c] / sum)
		}
		l[row] = float64(mx + float32(math.Log(float64(sum))))
	})
	return o, l
}

// errMeasure is compare's error measure without reporting: max |got − want| / max(1, max |want|)
// over the finite entries of want (the non-finite ones must match exactly, else +Inf).
func errMeasure(got, want []float64) float64 {
	scale := 1.0
	for _, w := range want {
		if !math.IsInf(w, 0) && !math.IsNaN(w) {
			scale = math.Max(scale, math.Abs(w))
		}
	}
	worst := 0.0
	for i, w := range want {
		if math.IsInf(w, 0) || math.IsNaN(w) {
			if got[i] != w {
				return math.Inf(1)
			}
			continue
		}
		e := math.Abs(got[i]-w) / scale
		if math.IsNaN(e) {
			return math.Inf(1)
		}
		worst = math.Max(worst, e)
	}
	return worst
}

// mmaGrid covers the lengths 1, 17, 127, 129, 1025 (none a multiple of the 64-row tiles but
// 1), both kernel head dimensions, the causal mask with Nq ≠ Nk (Nq > Nk leaves leading rows
// fully masked), key lengths (0: a batch without keys; a length inside a tile), GQA and MQA,
// and a negative scale (the kernels with a pre-pass carry its sign on Q). scale 0 means 1/√d.
var mmaGrid = []struct {
	name  string
	c     attnCase
	scale float64
}{
	{"n1", attnCase{1, 2, 1, 1, 1, 0, false, nil, false}, 0},
	{"n17-causal-gqa", attnCase{2, 4, 2, 17, 17, 0, true, nil, false}, 0},
	{"n127-129-keylengths", attnCase{2, 2, 1, 127, 129, 0, false, []int{100, 0}, false}, 0},
	{"n129-127-causal", attnCase{1, 2, 2, 129, 127, 0, true, nil, false}, 0},
	{"n129-17-causal-kl", attnCase{2, 1, 1, 129, 17, 0, true, []int{9, 17}, false}, 0},
	{"n1025", attnCase{1, 2, 1, 1025, 1025, 0, false, nil, false}, 0},
	{"n1025-causal-kl", attnCase{1, 2, 2, 1025, 1025, 0, true, []int{700}, false}, 0},
	{"n129-200-causal-negscale", attnCase{1, 2, 1, 129, 200, 0, true, []int{150}, false}, -0.2},
}

// mmaFloor is added to the error bound: where the naive computation happens to be exact on a
// tiny case (one key), twice its error is 0. 1e-6 is 8 float32 ulps of 1, far below the
// errors of TF32 (~1e-3) and bfloat16 (~1e-2) and of any wrong fragment or mask.
const mmaFloor = 1e-6

func TestAttentionMMADevice(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(11))
	forMMAGrid(t, func(t *testing.T, _ int, c attnCase, scale float64) {
		p := AttentionParams{B: c.B, H: c.H, Hkv: c.Hkv, Nq: c.Nq, Nk: c.Nk, D: c.D, Causal: c.Causal,
			KeyLengths: c.KeyLengths, Scale: 1 / math.Sqrt(float64(c.D))}
		if scale != 0 {
			p.Scale = scale
		}
		qn, kn, ln := c.B*c.H*c.Nq*c.D, c.B*c.Hkv*c.Nk*c.D, c.B*c.H*c.Nq
		p.Q, p.K, p.V = toType(randn(rng, qn, 1), false), toType(randn(rng, kn, 1), false), toType(randn(rng, kn, 1), false)
		q, k, v := as64(p.Q), as64(p.K), as64(p.V)
		wantO, wantL := refAttention(&p, q, k, v)
		// Every kernel: the FMA kernel (variant 2) and each tensor-core variant.
		kernels := []struct {
			prec    Precision
			variant int
		}{{PrecisionFMA, 2}}
		for _, mc := range mmaDeviceCfgs(c.D) {
			kernels = append(kernels, struct {
				prec    Precision
				variant int
			}{mc.Prec, mc.Variant})
		}
		for _, kern := range kernels {
			prec := kern.prec
			p.Precision = prec
			p.O, p.L, p.LRes = zeros(qn, false), zeros(ln, false), zeros(ln, false)
			if err := attentionForward(p, kern.variant); err != nil {
				t.Fatalf("%v variant %d: %v", prec, kern.variant, err)
			}
			naivePrec := prec
			if prec == PrecisionFMA {
				naivePrec = PrecisionExact // plain float32
			}
			nO, nL := refAttentionNaive(&p, q, k, v, naivePrec)
			refO, refL := errMeasure(nO, wantO), errMeasure(nL, wantL)
			tolO, tolL := 2*refO+mmaFloor, 2*refL+mmaFloor
			if prec == PrecisionFMA { // logged beside the others; its bound is the FMA tests'
				tolO, tolL = tolerance(false), tolerance(false)
			}
			what := fmt.Sprintf("%v v%d", prec, kern.variant)
			eo := compare(t, what+" O", as64(p.O), wantO, tolO)
			el := compare(t, what+" L", as64(p.L), wantL, tolL)
			// L + LRes carries L beyond float32's rounding (the L the backward uses).
			full := as64(p.L)
			for i, r := range as64(p.LRes) {
				full[i] += r
			}
			compare(t, what+" L+LRes", full, wantL, tolL)
			ratio := func(e, ref float64) string {
				if ref == 0 {
					return "–"
				}
				return fmt.Sprintf("%.2f", e/ref)
			}
			t.Logf("%-8s: O error %.2e (naive %.2e, ratio %s), L error %.2e (naive %.2e, ratio %s)",
				what, eo, refO, ratio(eo, refO), el, refL, ratio(el, refL))
		}
	})
}

var mmaOnly = flag.String("mma.only", "", "the forward's device tests (TestAttentionMMADevice, TestAttentionMMAMaskedKeysInert, TestAttentionMMADeterminism) run only the tensor-core kernels whose names (mmaCfg.name) match this regular expression (empty: all)")

// mmaDeviceCfgs returns the kernels of mmaCfgs for head dimension d that the device runs (the
// wgmma kernels on compute capability 9.0 only) and whose names match -mma.only.
func mmaDeviceCfgs(d int) []mmaCfg {
	var re *regexp.Regexp
	if *mmaOnly != "" {
		re = regexp.MustCompile(*mmaOnly)
	}
	var out []mmaCfg
	for _, c := range mmaCfgs {
		if c.D == d && (!c.hopper() || deviceSM() == 90) && (re == nil || re.MatchString(c.name())) {
			out = append(out, c)
		}
	}
	return out
}

// forMMAGrid runs body as the subtest "<name>/d<D>" of every case of mmaGrid at D = 64 and 128
// (the case with its D set; under -short, the cases with Nq > 200 are left out), with the
// case's index in mmaGrid and its scale (0: 1/√D).
func forMMAGrid(t *testing.T, body func(t *testing.T, i int, c attnCase, scale float64)) {
	for i, g := range mmaGrid {
		for _, d := range []int{64, 128} {
			c := g.c
			c.D = d
			if testing.Short() && c.Nq > 200 {
				continue
			}
			t.Run(fmt.Sprintf("%s/d%d", g.name, d), func(t *testing.T) { body(t, i, c, g.scale) })
		}
	}
}

// mmaMaskedKeyCases are the problems of the tensor-core masked-keys tests (forward and
// backward): a key length on a tile boundary (64) and one of a single key, GQA; the causal
// mask with Nq < Nk and a batch element without keys; both head-dimension tiers.
var mmaMaskedKeyCases = []attnCase{
	{2, 2, 1, 129, 127, 64, false, []int{64, 1}, false},
	{2, 4, 2, 70, 150, 128, true, []int{99, 0}, false},
}

// TestAttentionMMAMaskedKeysInert plants NaN, +Inf or −Inf in every padded key (index ≥
// KeyLengths[b]) of K and V: O, L and LRes of every tensor-core precision must be
// bit-identical to the run with random padding (padded keys are never read: the tile copies
// zero-fill them without a global read).
func TestAttentionMMAMaskedKeysInert(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(12))
	for _, c := range mmaMaskedKeyCases {
		for _, bad := range nonFinite {
			t.Run(c.String()+"/"+bad.name, func(t *testing.T) {
				p := AttentionParams{B: c.B, H: c.H, Hkv: c.Hkv, Nq: c.Nq, Nk: c.Nk, D: c.D, Causal: c.Causal,
					KeyLengths: c.KeyLengths, Scale: 1 / math.Sqrt(float64(c.D))}
				qn, kn, ln := c.B*c.H*c.Nq*c.D, c.B*c.Hkv*c.Nk*c.D, c.B*c.H*c.Nq
				q, k, v := randn(rng, qn, 1), randn(rng, kn, 1), randn(rng, kn, 1)
				kb, vb, _ := poisonPaddedKeys(c, k, v, bad.v)
				for _, mc := range mmaDeviceCfgs(c.D) {
					prec := mc.name()
					var outs [2][3][]float64
					for i, kv := range [2][2][]float64{{k, v}, {kb, vb}} {
						p.Precision = mc.Prec
						p.Q, p.K, p.V = toType(q, false), toType(kv[0], false), toType(kv[1], false)
						p.O, p.L, p.LRes = zeros(qn, false), zeros(ln, false), zeros(ln, false)
						if err := attentionForward(p, mc.Variant); err != nil {
							t.Fatalf("%v: %v", prec, err)
						}
						outs[i] = [3][]float64{as64(p.O), as64(p.L), as64(p.LRes)}
					}
					for i, what := range []string{"O", "L", "LRes"} {
						for j := range outs[0][i] {
							x, y := outs[1][i][j], outs[0][i][j]
							if math.Float64bits(x) != math.Float64bits(y) || math.IsNaN(x) || math.IsInf(x, 1) {
								t.Fatalf("%v: %s[%d] = %v with %s in the padded keys, %v without", prec, what, j, x, bad.name, y)
							}
						}
					}
				}
			})
		}
	}
}

// TestAttentionMMADeterminism runs every tensor-core forward of mmaCfgs that the device has
// (the wgmma kernels on compute capability 9.0 included) 50 times on the same input and
// requires O, L and LRes bit-identical to the first run's.
func TestAttentionMMADeterminism(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(16))
	for _, c := range []attnCase{
		{2, 4, 2, 300, 280, 64, true, []int{280, 131}, false},
		{1, 2, 1, 150, 170, 128, false, nil, false},
	} {
		t.Run(c.String(), func(t *testing.T) {
			p := AttentionParams{B: c.B, H: c.H, Hkv: c.Hkv, Nq: c.Nq, Nk: c.Nk, D: c.D, Causal: c.Causal,
				KeyLengths: c.KeyLengths, Scale: 1 / math.Sqrt(float64(c.D))}
			qn, kn, ln := c.B*c.H*c.Nq*c.D, c.B*c.Hkv*c.Nk*c.D, c.B*c.H*c.Nq
			p.Q, p.K, p.V = toType(randn(rng, qn, 1), false), toType(randn(rng, kn, 1), false), toType(randn(rng, kn, 1), false)
			for _, mc := range mmaDeviceCfgs(c.D) {
				p.Precision = mc.Prec
				var first string
				for run := 0; run < 50; run++ {
					p.O, p.L, p.LRes = zeros(qn, false), zeros(ln, false), zeros(ln, false)
					if err := attentionForward(p, mc.Variant); err != nil {
						t.Fatalf("%s: %v", mc.name(), err)
					}
					var out []byte
					for _, x := range []any{p.O, p.L, p.LRes} {
						ptr, n := hostBytes(x)
						out = append(out, unsafe.Slice((*byte)(ptr), n)...)
					}
					if run == 0 {
						first = string(out)
					} else if string(out) != first {
						t.Fatalf("%s run %d: O, L or LRes differs from run 0", mc.name(), run)
					}
				}
			}
		})
	}
}

// TestPickMMA checks the selection rule of the tensor-core forward, and that every kernel of
// the launch table is in the embedded PTX with the shared memory its launch gives (no GPU).
func TestPickMMA(t *testing.T) {
	base := AttentionParams{B: 1, H: 2, Hkv: 1, Nq: 5, Nk: 7, D: 64, Scale: 0.125}
	for _, c := range []struct {
		name    string
		prec    Precision
		d       int
		dt      dtype
		variant int
		scratch bool // a scratch buffer for the pre-pass can be had
		sm      int  // the device's compute capability (0: 80)
		want    string
	}{
		{"default", PrecisionFMA, 64, f32, 0, false, 0, ""},
		{"f64", PrecisionBF16, 64, f64, 0, false, 0, ""},
		{"d100", PrecisionBF16, 100, f32, 0, false, 0, ""},
		{"d256", PrecisionExact, 256, f32, 0, false, 0, ""},
		{"bf16-d64", PrecisionBF16, 64, f32, 0, false, 0, "fg_attn_fwd_mma_bf16_d64_m64_n64"},
		{"bf16-d128", PrecisionBF16, 128, f32, 0, false, 0, "fg_attn_fwd_mma_ldm_bf16_d128_m128_n64"},
		{"exact-d128", PrecisionExact, 128, f32, 0, false, 0, "fg_attn_fwd_mma_exact_d128_m128_n64"},
		{"bf16-d128-v3", PrecisionBF16, 128, f32, 3, false, 0, "fg_attn_fwd_mma_bf16_d128_m64_n64"},
		{"bf16-d64-v4", PrecisionBF16, 64, f32, 4, false, 0, "fg_attn_fwd_mma_ldm_bf16_d64_m64_n64"},
		{"bf16-d128-v6", PrecisionBF16, 128, f32, 6, false, 0, "fg_attn_fwd_mma_ldm_bf16_d128_m128_n64"},
		{"tf32-d128-v5", PrecisionTF32, 128, f32, 5, false, 0, "fg_attn_fwd_mma_tf32_d128_m128_n64"},
		{"tf32-d128-v4", PrecisionTF32, 128, f32, 4, false, 0, ""},
		{"exact-d64-v3", PrecisionExact, 64, f32, 3, false, 0, "fg_attn_fwd_mma_exact_d64_m64_n64"},
		{"bf16-d64-v7-noscratch", PrecisionBF16, 64, f32, 7, false, 0, ""},
		{"bf16-d64-scratch", PrecisionBF16, 64, f32, 0, true, 0, "fg_attn_fwd_mma_pre_bf16_d64_m128_w32_n128"},
		{"bf16-d128-scratch", PrecisionBF16, 128, f32, 0, true, 0, "fg_attn_fwd_mma_pre_bf16_d128_m128_w32_n64"},
		{"exact-d128-scratch", PrecisionExact, 128, f32, 0, true, 0, "fg_attn_fwd_mma_split_exact_d128_m128_n64"},
		{"tf32-d64-scratch", PrecisionTF32, 64, f32, 0, true, 0, "fg_attn_fwd_mma_split_tf32_d64_m128_n64"},
		{"bf16-d64-v7", PrecisionBF16, 64, f32, 7, true, 0, "fg_attn_fwd_mma_pre_bf16_d64_m64_w16_n64"},
		{"bf16-d128-v9", PrecisionBF16, 128, f32, 9, true, 0, "fg_attn_fwd_mma_pre_bf16_d128_m128_w32_n64"},
		{"bf16-d64-v10", PrecisionBF16, 64, f32, 10, true, 0, "fg_attn_fwd_mma_pre_bf16_d64_m128_w32_n128"},
		{"exact-d128-v11", PrecisionExact, 128, f32, 11, true, 0, "fg_attn_fwd_mma_split_exact_d128_m128_n64"},
		{"tf32-d64-v11", PrecisionTF32, 64, f32, 11, true, 0, "fg_attn_fwd_mma_split_tf32_d64_m128_n64"},
		{"f64-scratch", PrecisionBF16, 64, f64, 0, true, 0, ""},
		// Hopper: the wgmma kernels on compute capability 9.0 only, with a scratch buffer only;
		// everything else (no scratch, other precisions, other d, other GPUs) as before.
		{"bf16-d64-sm90", PrecisionBF16, 64, f32, 0, true, 90, "fg_attn_fwd_wgmma_v38_bf16_d64_m128_n128"},
		{"bf16-d64-sm90-v22", PrecisionBF16, 64, f32, 22, true, 90, "fg_attn_fwd_wgmma_v22_bf16_d64_m128_n128"},
		{"bf16-d64-sm90-v21", PrecisionBF16, 64, f32, 21, true, 90, "fg_attn_fwd_wgmma_v21_bf16_d64_m128_n128"},
		{"bf16-d128-sm90", PrecisionBF16, 128, f32, 0, true, 90, "fg_attn_fwd_wgmma_v38_bf16_d128_m128_n128"},
		{"bf16-d128-sm90-v14", PrecisionBF16, 128, f32, 14, true, 90, "fg_attn_fwd_wgmma_v14_bf16_d128_m128_n128"},
		{"bf16-d128-sm90-v12", PrecisionBF16, 128, f32, 12, true, 90, "fg_attn_fwd_wgmma_v12_bf16_d128_m128_n128"},
		{"bf16-d128-sm90-v13", PrecisionBF16, 128, f32, 13, true, 90, "fg_attn_fwd_wgmma_v13_bf16_d128_m128_n128"},
		{"bf16-d64-sm90-v14", PrecisionBF16, 64, f32, 14, true, 90, "fg_attn_fwd_wgmma_v14_bf16_d64_m128_n128"},
		{"bf16-d128-sm90-v15", PrecisionBF16, 128, f32, 15, true, 90, "fg_attn_fwd_wgmma_v15_bf16_d128_m128_n128"},
		{"bf16-d128-sm90-v15-noscratch", PrecisionBF16, 128, f32, 15, false, 90, ""},
		{"bf16-d128-sm90-v16", PrecisionBF16, 128, f32, 16, true, 90, "fg_attn_fwd_wgmma_v16_bf16_d128_m64_n64"},
		{"bf16-d128-sm90-v17", PrecisionBF16, 128, f32, 17, true, 90, "fg_attn_fwd_wgmma_v17_bf16_d128_m128_n128"},
		{"bf16-d64-sm90-noscratch", PrecisionBF16, 64, f32, 0, false, 90, "fg_attn_fwd_mma_bf16_d64_m64_n64"},
		{"bf16-d128-sm89", PrecisionBF16, 128, f32, 0, true, 89, "fg_attn_fwd_mma_pre_bf16_d128_m128_w32_n64"},
		{"bf16-d128-sm100", PrecisionBF16, 128, f32, 0, true, 100, "fg_attn_fwd_mma_pre_bf16_d128_m128_w32_n64"},
		{"bf16-d128-sm80-v13", PrecisionBF16, 128, f32, 13, true, 80, ""},
		{"tf32-d64-sm90", PrecisionTF32, 64, f32, 0, true, 90, "fg_attn_fwd_wgmma_v25_tf32_d64_m128_n128"},
		{"tf32-d128-sm90", PrecisionTF32, 128, f32, 0, true, 90, "fg_attn_fwd_wgmma_v25_tf32_d128_m128_n64"},
		{"exact-d128-sm90", PrecisionExact, 128, f32, 0, true, 90, "fg_attn_fwd_wgmma_v45_exact_d128_m128_n64"},
		{"exact-d128-sm90-v46", PrecisionExact, 128, f32, 46, true, 90, "fg_attn_fwd_wgmma_v46_exact_d128_m128_n64"},
		{"exact-d128-sm90-v30", PrecisionExact, 128, f32, 30, true, 90, "fg_attn_fwd_wgmma_v30_exact_d128_m128_n64"},
		{"exact-d128-sm90-v27", PrecisionExact, 128, f32, 27, true, 90, "fg_attn_fwd_wgmma_v27_exact_d128_m128_n64"},
		{"exact-d64-sm90-v30", PrecisionExact, 64, f32, 30, true, 90, "fg_attn_fwd_wgmma_v30_exact_d64_m128_n128"},
		{"exact-d128-sm80-v30", PrecisionExact, 128, f32, 30, true, 80, ""},
		{"exact-d128-sm90-v30-noscratch", PrecisionExact, 128, f32, 30, false, 90, ""},
		{"exact-d64-sm90", PrecisionExact, 64, f32, 0, true, 90, "fg_attn_fwd_wgmma_v45_exact_d64_m128_n128"},
		{"exact-d64-sm90-v27", PrecisionExact, 64, f32, 27, true, 90, "fg_attn_fwd_wgmma_v27_exact_d64_m128_n128"},
		{"exact-d64-sm90-v46", PrecisionExact, 64, f32, 46, true, 90, "fg_attn_fwd_wgmma_v46_exact_d64_m128_n128"},
		{"exact-d128-sm80-v46", PrecisionExact, 128, f32, 46, true, 80, ""},
		{"exact-d64-sm80-v27", PrecisionExact, 64, f32, 27, true, 80, ""},
		{"exact-d64-sm90-v24", PrecisionExact, 64, f32, 24, true, 90, "fg_attn_fwd_wgmma_v24_exact_d64_m128_n64"},
		{"exact-d64-sm90-v26", PrecisionExact, 64, f32, 26, true, 90, "fg_attn_fwd_wgmma_v26_exact_d64_m128_n64"},
		{"exact-d128-sm90-v26", PrecisionExact, 128, f32, 26, true, 90, "fg_attn_fwd_wgmma_v26_exact_d128_m128_n32"},
		{"tf32-d64-sm90-v26", PrecisionTF32, 64, f32, 26, true, 90, "fg_attn_fwd_wgmma_v26_tf32_d64_m128_n128"},
		{"tf32-d128-sm90-v26", PrecisionTF32, 128, f32, 26, true, 90, "fg_attn_fwd_wgmma_v26_tf32_d128_m128_n64"},
		{"exact-d64-sm90-v26-noscratch", PrecisionExact, 64, f32, 26, false, 90, ""},
		{"exact-d64-sm80-v26", PrecisionExact, 64, f32, 26, true, 80, ""},
		{"exact-d64-sm90-v11", PrecisionExact, 64, f32, 11, true, 90, "fg_attn_fwd_mma_split_exact_d64_m64_n64"},
		{"exact-d64-sm90-noscratch", PrecisionExact, 64, f32, 0, false, 90, "fg_attn_fwd_mma_exact_d64_m64_n64"},
		{"exact-d64-sm80-v24", PrecisionExact, 64, f32, 24, true, 80, ""},
		{"bf16-d100-sm90", PrecisionBF16, 100, f32, 0, true, 90, ""},
		{"f64-sm90", PrecisionBF16, 64, f64, 0, true, 90, ""},
	} {
		p := base
		p.Precision, p.D = c.prec, c.d
		kp := p.kernelParams()
		sm := c.sm
		if sm == 0 {
			sm = 80
		}
		cfg, ok := pickMMA(&kp, c.dt, c.variant, c.scratch, sm)
		if got := map[bool]string{true: cfg.name(), false: ""}[ok]; got != c.want {
			t.Errorf("%s: pickMMA = %q, want %q", c.name, got, c.want)
		}
	}
	// Below Nk = 4096 variant 38 (MinNk); from it variant 22, but variant 21 at d = 64 from
	// Nk = 16384.
	for _, nk := range []int{1024, 4095, 4096, 16383, 16384, 32768} {
		p := base
		p.Precision, p.Nk = PrecisionBF16, nk
		kp := p.kernelParams()
		want := 22
		switch {
		case nk < 4096:
			want = 38
		case nk >= 16384:
			want = 21
		}
		if c, ok := pickMMA(&kp, f32, 0, true, 90); !ok || c.Variant != want {
			t.Errorf("BF16 d=64 Nk=%d on Hopper: variant %d (%v), want %d", nk, c.Variant, ok, want)
		}
		p.D = 128
		kp = p.kernelParams()
		want = map[bool]int{false: 22, true: 38}[nk < 4096]
		if c, ok := pickMMA(&kp, f32, 0, true, 90); !ok || c.Variant != want {
			t.Errorf("BF16 d=128 Nk=%d on Hopper: variant %d (%v), want %d", nk, c.Variant, ok, want)
		}
	}
	// TF32 at d = 128: variant 24 from Nk = 4096 (MinNk); below, and at d = 64, variant 25;
	// Exact: variant 45.
	for _, nk := range []int{1024, 4095, 4096, 16383, 16384} {
		for _, c := range []struct {
			prec  Precision
			d     int
			minNk int
		}{{PrecisionExact, 128, 16384}, {PrecisionTF32, 128, 4096}, {PrecisionExact, 64, 1 << 30}, {PrecisionTF32, 64, 1 << 30}} {
			p := base
			p.Precision, p.D, p.Nk = c.prec, c.d, nk
			kp := p.kernelParams()
			want := map[bool]int{false: map[Precision]int{PrecisionExact: 27, PrecisionTF32: 25}[c.prec], true: 24}[nk >= c.minNk]
			if c.prec == PrecisionExact {
				want = 45
			}
			if got, ok := pickMMA(&kp, f32, 0, true, 90); !ok || got.Variant != want {
				t.Errorf("%v d=%d Nk=%d on Hopper: variant %d (%v), want %d", c.prec, c.d, nk, got.Variant, ok, want)
			}
		}
	}
	// Variant 22 only where Q's rows are contiguous: its bulk copies take a tile's rows as one block.
	kp := (&AttentionParams{B: 1, H: 1, Hkv: 1, Nq: 3, Nk: 3, D: 64, Scale: 1, Precision: PrecisionBF16}).kernelParams()
	if c, ok := pickMMA(&kp, f32, 22, true, 90); !ok || c.Variant != 22 {
		t.Errorf("pickMMA(variant 22) = %v, %v on contiguous rows", c, ok)
	}
	kp.qRow = 68
	if c, ok := pickMMA(&kp, f32, 22, true, 90); ok {
		t.Errorf("pickMMA(variant 22) = %v with Q rows of 68 elements, want none", c.name())
	}
	kp = (&AttentionParams{B: 1, H: 1, Hkv: 1, Nq: 3, Nk: 3, D: 64, Scale: 1, Precision: PrecisionTF32}).kernelParams()
	kp.kRow = 66 // a row not on 16 bytes
	if _, ok := pickMMA(&kp, f32, 0, true, 90); ok {
		t.Errorf("pickMMA accepts a K row stride of 66 elements")
	}
	kp.kRow = 64
	for i, at := range []*devptr{&kp.q, &kp.k, &kp.v, &kp.o, &kp.do, &kp.dq, &kp.dk, &kp.dv} {
		*at = 4 // a View one float32 past a 16-byte boundary
		_, fwd := pickMMA(&kp, f32, 0, true, 90)
		_, _, bwd := pickMMABwd(&kp, f32, -1, -1, true, 90)
		if fwd && i < 4 || bwd {
			t.Errorf("operand %d at byte 4: pickMMA %v, pickMMABwd %v, want both false", i, fwd, bwd)
		}
		*at = 0
	}
	bad := base
	bad.Precision = 7
	if _, err := bad.check(false); err == nil {
		t.Errorf("check accepts Precision(7)")
	}

	ptx, src := map[string]string{}, map[string]string{}
	for _, m := range []string{"attention_mma", "attention_hopper", "attention_hopper_bulk", "attention_hopper_persist", "attention_hopper_exact"} {
		x, err := ptxSource(m)
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile("kernels/" + m + ".cu")
		if err != nil {
			t.Fatal(err)
		}
		ptx[m], src[m] = x, string(y)
	}
	seen := map[[3]int]bool{}
	count := map[string]int{}
	for _, c := range mmaCfgs {
		if k := [3]int{c.Variant, int(c.Prec), c.D}; seen[k] {
			t.Errorf("mmaCfgs lists variant %d, %v, d=%d twice", c.Variant, c.Prec, c.D)
		} else {
			seen[k] = true
		}
		if c.ldm() && c.BM > 2*c.BN {
			t.Errorf("%s: BM = %d over 2 BN: Q does not fit the staging buffers", c.name(), c.BM)
		}
		count[c.module()]++
		if !regexp.MustCompile(`\.entry ` + c.name() + `\(`).MatchString(ptx[c.module()]) {
			t.Errorf("kernel %s of mmaCfgs is not in ptx/%s.ptx", c.name(), c.module())
		}
		if want := 2*c.BM + map[bool]int{true: 32}[c.bulk()] + map[bool]int{true: 96}[c.pwg()] + map[bool]int{true: 128}[c.x3() && c.fused()]; c.hopper() && (c.Prec != PrecisionBF16 && !c.exact() && !(c.x3() && c.Prec == PrecisionExact) || !c.pre() || c.threads() != want) {
			t.Errorf("%s: the wgmma kernels are bfloat16 (Exact: variants 24 to 27 and 29) on the pre-pass's planes, %d threads", c.name(), want)
		}
		if c.bulk() && !c.exact() && c.BN != hopperBN {
			t.Errorf("%s: BN = %d, the bulk pre-pass tiles %d keys", c.name(), c.BN, hopperBN)
		}
		if c.exact() {
			if c.Prec != PrecisionExact && c.Prec != PrecisionTF32 {
				t.Errorf("%s: variants 24 and 25 are Exact and TF32 only", c.name())
			}
		}
		if c.exact() || c.x3() {
			if _, prep := c.prep(); !regexp.MustCompile(`\.entry ` + prep + `\(`).MatchString(ptx[c.module()]) {
				t.Errorf("%s: its pre-pass %s is not in ptx/%s.ptx", c.name(), prep, c.module())
			}
		}
		if c.smem() > 227<<10 {
			t.Errorf("%s: %d bytes of shared memory, over the H100's 227 KiB", c.name(), c.smem())
		}
	}
	if !regexp.MustCompile(`\.entry fg_attn_mma_prep\(`).MatchString(ptx["attention_mma"]) {
		t.Errorf("the pre-pass fg_attn_mma_prep is not in ptx/attention_mma.ptx")
	}
	if !regexp.MustCompile(`\.entry fg_attn_hopper_prep\(`).MatchString(ptx["attention_hopper_bulk"]) {
		t.Errorf("the pre-pass fg_attn_hopper_prep is not in ptx/attention_hopper_bulk.ptx")
	}
	if wg, err := os.ReadFile("kernels/wgmma.cuh"); err != nil {
		t.Fatal(err)
	} else if m := regexp.MustCompile(`(?m)^#define FG_HOPPER_BN (\d+)$`).FindSubmatch(wg); m == nil || string(m[1]) != strconv.Itoa(hopperBN) {
		t.Errorf("wgmma.cuh's FG_HOPPER_BN %q, Go's hopperBN %d", m, hopperBN)
	}
	for m, re := range map[string]string{"attention_mma": `(?m)^FG_FWD_MMA(_LDM|_PRE|_SPLIT)?\(`, "attention_hopper": `(?m)^FG_FWD_WGMMA(_X3|_X3_PERSIST|_X3_LATE|_X3_PERSIST_L)?\(`,
		"attention_hopper_bulk": `(?m)^FG_FWD_WGMMA_BULK\(`, "attention_hopper_persist": `(?m)^FG_FWD_WGMMA_PERSIST(_Q|_H)?\(`,
		"attention_hopper_exact": `(?m)^FG_FWD_WGMMA_EXACT(_PERSIST|_FUSED)?\(`} {
		if n := len(regexp.MustCompile(re).FindAllString(src[m], -1)); n != count[m] {
			t.Errorf("%s.cu instantiates %d kernels, mmaCfgs lists %d", m, n, count[m])
		}
	}
	h, err := os.ReadFile("kernels/params.h")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]Precision{"FG_PREC_FMA": PrecisionFMA, "FG_PREC_EXACT": PrecisionExact,
		"FG_PREC_TF32": PrecisionTF32, "FG_PREC_BF16": PrecisionBF16} {
		m := regexp.MustCompile(`(?m)^#define ` + name + ` (\d+)$`).FindSubmatch(h)
		if m == nil {
			t.Errorf("params.h does not define %s", name)
			continue
		}
		if v, _ := strconv.Atoi(string(m[1])); v != int(want) {
			t.Errorf("params.h: %s = %d, Go %v = %d", name, v, want, int(want))
		}
	}
	for p := PrecisionFMA; p <= PrecisionBF16; p++ {
		if q, err := ParsePrecision(p.String()); err != nil || q != p {
			t.Errorf("ParsePrecision(%q) = %v, %v", p.String(), q, err)
		}
	}
}

// TestRoundings checks the CPU roundings the naive references use against values worked by
// hand: bfloat16 keeps 8 significant bits (ties to even), TF32 11 (ties away from zero).
func TestRoundings(t *testing.T) {
	for _, c := range []struct {
		f    func(float32) float32
		x, y float32
	}{
		{roundBF16, 1 + 1.0/256, 1},           // a tie: to even (1)
		{roundBF16, 1 + 3.0/256, 1 + 4.0/256}, // a tie: to even (1 + 2/128)
		{roundBF16, 1 + 1.0/256 + 1.0/4096, 1 + 1.0/128},
		{roundBF16, -(1 + 3.0/256), -(1 + 4.0/256)},
		{roundTF32, 1 + 1.0/2048, 1 + 1.0/1024}, // a tie: away from zero
		{roundTF32, -(1 + 1.0/2048), -(1 + 1.0/1024)},
		{roundTF32, 1 + 1.0/4096, 1},
		{roundTF32, 3, 3},
	} {
		if got := c.f(c.x); got != c.y {
			t.Errorf("round(%v) = %v, want %v", c.x, got, c.y)
		}
	}
}

// TestForwardScratch checks the size of the pre-pass's scratch buffer (no GPU): K and V of
// [B, Hkv, Nk, D] in bfloat16 (BF16; the bulk-copy Hopper kernels Nk rounded up to whole
// tiles of 128 keys, and the fused kernels' flags after them), rounded float32 (TF32), or hi and
// lo float32 planes (Exact; variants 24 to 26, Exact and TF32, in whole tiles of BN keys), or
// hi and lo half planes and an int2 per tile of BN keys (Exact, variants 27 and 29, whose flags follow);
// AttentionBuffers.ForwardScratch counts it in float32 elements, 0 where the kernel that runs
// has no pre-pass.
func TestForwardScratch(t *testing.T) {
	const n, nTiles = 3 * 2 * 100 * 64, 3 * 2 * 128 * 64 // B Hkv Nk D, with Nk in whole tiles
	for _, c := range []struct {
		prec        Precision
		bytes, bulk int64
	}{{PrecisionBF16, 4 * n, 4 * nTiles}, {PrecisionTF32, 8 * n, 8 * nTiles}, {PrecisionExact, 16 * n, 16 * nTiles}} {
		p := AttentionBuffers{B: 3, H: 4, Hkv: 2, Nq: 50, Nk: 100, D: 64, Scale: 1, Precision: c.prec}
		kp := attnBase(&attnspec.Problem{B: p.B, H: p.H, Hkv: p.Hkv, Nq: p.Nq, Nk: p.Nk, D: p.D, Scale: p.Scale})
		kp.precision = int32(c.prec)
		size := func(cfg mmaCfg) int64 {
			// A uint32 flag per tile of a plane, to 16 bytes: B Hkv = 6 by 1, 2 or 4 tiles of 128, 64 or 32 keys.
			flags := map[int]int64{128: 32, 64: 48, 32: 96}[cfg.BN]
			switch {
			case cfg.x3(): // K and V hi and lo in half, and an int2 per tile (6 or 12), to 16 bytes; variant 29's flags
				return 8*n + map[int]int64{128: 48, 64: 96}[cfg.BN] + map[bool]int64{true: flags}[cfg.fused()]
			case cfg.fused():
				return c.bulk + flags
			case cfg.bulk():
				return c.bulk
			}
			return c.bytes
		}
		for _, cfg := range mmaCfgs {
			if cfg.Prec == c.prec && cfg.pre() {
				if got := cfg.scratchBytes(&kp); got != size(cfg) {
					t.Errorf("%s: scratchBytes = %d, want %d", cfg.name(), got, size(cfg))
				}
			}
		}
		want := 0
		if cfg, ok := pickMMA(&kp, f32, 0, true, deviceSM()); ok && cfg.pre() {
			want = int(size(cfg) / 4)
		}
		if got := p.ForwardScratch(); got != want {
			t.Errorf("%v: ForwardScratch = %d, want %d", c.prec, got, want)
		}
	}
	for _, p := range []AttentionBuffers{
		{B: 1, H: 1, Hkv: 1, Nq: 5, Nk: 5, D: 64, Scale: 1, Precision: PrecisionFMA},
		{B: 1, H: 1, Hkv: 1, Nq: 5, Nk: 5, D: 100, Scale: 1, Precision: PrecisionBF16},
	} {
		if got := p.ForwardScratch(); got != 0 {
			t.Errorf("%v d=%d: ForwardScratch = %d, want 0", p.Precision, p.D, got)
		}
	}
}

// TestAttentionMMABuffersScratch runs the tensor-core forward on device Buffers with and
// without a Scratch buffer (with: the kernel with a pre-pass, where the precision's default
// has one; without: the first kernel without), each against float64 within twice the naive
// same-precision error, and refuses a Scratch smaller than ForwardScratch.
func TestAttentionMMABuffersScratch(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(13))
	c := attnCase{2, 4, 2, 129, 200, 64, true, []int{150, 200}, false}
	hp := AttentionParams{B: c.B, H: c.H, Hkv: c.Hkv, Nq: c.Nq, Nk: c.Nk, D: c.D, Causal: c.Causal,
		KeyLengths: c.KeyLengths, Scale: 1 / math.Sqrt(float64(c.D))}
	qn, kn, ln := c.B*c.H*c.Nq*c.D, c.B*c.Hkv*c.Nk*c.D, c.B*c.H*c.Nq
	q, k, v := randn(rng, qn, 1), randn(rng, kn, 1), randn(rng, kn, 1)
	for _, x := range [][]float64{q, k, v} { // the values float32 holds
		for i := range x {
			x[i] = float64(float32(x[i]))
		}
	}
	wantO, wantL := refAttention(&hp, q, k, v)
	var bufs []*Buffer
	defer func() {
		for _, b := range bufs {
			b.Free()
		}
	}()
	buf := func(dt DType, n int, x any) *Buffer {
		b, err := Alloc(dt, n)
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, b)
		if x != nil {
			if err := b.Upload(x); err != nil {
				t.Fatal(err)
			}
		}
		return b
	}
	f32s := func(x []float64) []float32 { return toType(x, false).([]float32) }
	kl := buf(Int32, c.B, keyLengths32(c.KeyLengths))
	p := AttentionBuffers{B: c.B, H: c.H, Hkv: c.Hkv, Nq: c.Nq, Nk: c.Nk, D: c.D, Scale: hp.Scale, Causal: c.Causal,
		KeyLengths: kl, Q: buf(Float32, qn, f32s(q)), K: buf(Float32, kn, f32s(k)), V: buf(Float32, kn, f32s(v)),
		O: buf(Float32, qn, nil), L: buf(Float32, ln, nil)}
	for _, prec := range []Precision{PrecisionBF16, PrecisionTF32, PrecisionExact} {
		p.Precision = prec
		nO, nL := refAttentionNaive(&hp, q, k, v, prec)
		tolO, tolL := 2*errMeasure(nO, wantO)+mmaFloor, 2*errMeasure(nL, wantL)+mmaFloor
		for _, scratch := range []bool{false, true} {
			p.Scratch = nil
			if n := p.ForwardScratch(); scratch && n > 0 {
				p.Scratch = buf(Float32, n, nil)
			}
			if err := AttentionForwardBuffers(p); err != nil {
				t.Fatalf("%v scratch %v: %v", prec, scratch, err)
			}
			o, l := make([]float32, qn), make([]float32, ln)
			if err := p.O.Download(o); err != nil {
				t.Fatal(err)
			}
			if err := p.L.Download(l); err != nil {
				t.Fatal(err)
			}
			names, _ := p.Kernels()
			what := fmt.Sprintf("%v %s", prec, names[0])
			compare(t, what+" O", as64(o), wantO, tolO)
			compare(t, what+" L", as64(l), wantL, tolL)
		}
		if n := p.ForwardScratch(); n > 0 {
			p.Scratch = buf(Float32, n-1, nil)
			if err := AttentionForwardBuffers(p); err == nil || !regexp.MustCompile(`Scratch`).MatchString(err.Error()) {
				t.Errorf("%v: a Scratch of %d elements (%d needed): err = %v, want one naming Scratch", prec, n-1, n, err)
			}
		}
	}
}

// TestAttentionMisalignedViews runs the forward and the backward of every precision on
// Views of Buffers that start one float32 past 16 bytes: the tensor-core kernels' 16-byte
// accesses cannot take them, so the FMA kernels run (Kernels names them), and O, L, dQ, dK
// and dV match float64 within the FMA kernels' tolerance.
func TestAttentionMisalignedViews(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(17))
	c := attnCase{2, 4, 2, 70, 90, 64, true, []int{90, 33}, true}
	pr := newAttnProblem(rng, c, false)
	hp := pr.p
	qn, kn, ln := c.B*c.H*c.Nq*c.D, c.B*c.Hkv*c.Nk*c.D, c.B*c.H*c.Nq
	view := func(b *Buffer, n int) *Buffer { // n elements from element 1 of b (n + 1 long)
		v, err := b.View(1, n)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	in := func(x any, n int) *Buffer { return view(devBuf(t, Float32, append([]float64{0}, as64(x)...)), n) }
	out := func(n int) *Buffer { return view(devOut(t, Float32, n+1), n) }
	p := AttentionBuffers{B: c.B, H: c.H, Hkv: c.Hkv, Nq: c.Nq, Nk: c.Nk, D: c.D, Scale: hp.Scale, Causal: c.Causal,
		KeyLengths: devInts(t, keyLengths32(c.KeyLengths)),
		Q:          in(hp.Q, qn), K: in(hp.K, kn), V: in(hp.V, kn), O: out(qn), L: out(ln), LRes: out(ln),
		DO: in(hp.DO, qn), DL: in(hp.DL, ln), DQ: out(qn), DK: out(kn), DV: out(kn), Delta: devOut(t, Float64, ln)}
	tol := tolerance(false)
	for _, prec := range []Precision{PrecisionBF16, PrecisionExact, PrecisionTF32} {
		p.Precision = prec
		if n := max(p.ForwardScratch(), p.BackwardScratch()); n > 0 {
			p.Scratch = devOut(t, Float32, n)
		}
		names, err := p.Kernels()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(names[0], "fg_attn_fwd_v2_") || !strings.HasPrefix(names[2], "fg_attn_bwd_dkdv_") {
			t.Errorf("%v: kernels %v, want the FMA kernels", prec, names)
		}
		if err := AttentionForwardBuffers(p); err != nil {
			t.Fatalf("%v forward: %v", prec, err)
		}
		compare(t, prec.String()+" O", host(t, p.O), pr.o, tol)
		compare(t, prec.String()+" L", host(t, p.L), pr.l, tol)
		if err := AttentionBackwardBuffers(p); err != nil {
			t.Fatalf("%v backward: %v", prec, err)
		}
		compare(t, prec.String()+" dQ", host(t, p.DQ), pr.dq, tol)
		compare(t, prec.String()+" dK", host(t, p.DK), pr.dk, tol)
		compare(t, prec.String()+" dV", host(t, p.DV), pr.dvv, tol)
	}
}

// BenchmarkAttentionMMA times every tensor-core forward kernel of mmaCfgs (the pre-pass
// included where the kernel has one) on attnbench's shapes (H = 16, B·N = 32768, d 64 and
// 128, N 1024, 4096, 16384, causal and not; inputs FillNormal on the device) and reports
// TFLOP/s (4·B·H·N²·d, halved when causal). The kernels are checked by the TestAttentionMMA*
// tests, not here. -test.benchtime=3x is enough: each run is milliseconds of device time.
func BenchmarkAttentionMMA(b *testing.B) {
	if !Enabled() {
		b.Skipf("no CUDA device in use (Device() = %q)", Device())
	}
	for _, d := range []int{64, 128} {
		for _, n := range []int{1024, 4096, 16384} {
			for _, causal := range []bool{false, true} {
				p := AttentionBuffers{B: 32768 / n, H: 16, Hkv: 16, Nq: n, Nk: n, D: d, Scale: 1 / math.Sqrt(float64(d)), Causal: causal}
				bufs := attnBenchBuffers(b, &p)
				fl := 4 * float64(p.B*p.H) * float64(n) * float64(n) * float64(d)
				if causal {
					fl /= 2
				}
				for _, c := range mmaCfgs {
					if c.D != d || c.hopper() && deviceSM() != 90 {
						continue
					}
					p.Precision = c.Prec
					b.Run(fmt.Sprintf("d%d/n%d/causal=%v/%v/v%d/%s", d, n, causal, c.Prec, c.Variant, c.name()), func(b *testing.B) {
						for i := 0; i < b.N; i++ {
							if err := attentionForwardBuffers(p, c.Variant); err != nil {
								b.Fatal(err)
							}
						}
						if err := Synchronize(); err != nil {
							b.Fatal(err)
						}
						b.ReportMetric(fl*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOP/s")
					})
				}
				for _, x := range bufs {
					x.Free()
				}
			}
		}
	}
}

// attnBenchBuffers allocates p's Q, K, V (filled from N(0, 1)), O, L and a Scratch of four
// times Q's elements (Exact's hi and lo planes of K and V, the largest pre-pass output) and
// one more per query row (the fused kernels' tile flags, one per tile of at least 32 keys)
// for the benchmarks (H = Hkv, Nq = Nk, Nk a multiple of the tiles), returning them for Free.
func attnBenchBuffers(b *testing.B, p *AttentionBuffers) []*Buffer {
	qn := p.B * p.H * p.Nq * p.D
	var bufs []*Buffer
	for i, dst := range []**Buffer{&p.Q, &p.K, &p.V, &p.O, &p.L, &p.Scratch} {
		size := qn
		switch i {
		case 4:
			size = p.B * p.H * p.Nq
		case 5:
			size = 4*qn + p.B*p.H*p.Nq
		}
		x, err := Alloc(Float32, size)
		if err != nil {
			b.Fatal(err)
		}
		*dst, bufs = x, append(bufs, x)
		if i < 3 {
			if err := FillNormal(x, uint64(i+1), 1); err != nil {
				b.Fatal(err)
			}
		}
	}
	return bufs
}

// BenchmarkAttentionPrep times the forward's pre-passes alone (the kernels of mmaCfgs with one)
// at attnbench's token count (B N = 32768, H = Hkv = 16, N = 4096: a pre-pass's work depends on
// B N only), reporting the bytes it moves per second: K and V read in float32 (keys at or
// past Nk none), its scratch (c.scratchBytes) written.
func BenchmarkAttentionPrep(b *testing.B) {
	needDevice(b)
	const n = 4096
	for _, d := range []int{64, 128} {
		p := AttentionBuffers{B: 32768 / n, H: 16, Hkv: 16, Nq: n, Nk: n, D: d, Scale: 1 / math.Sqrt(float64(d))}
		qn := p.B * p.H * n * d
		bufs := attnBenchBuffers(b, &p)
		for _, c := range mmaCfgs {
			if c.D != d || !c.pre() || c.fused() || c.hopper() && deviceSM() != 90 {
				continue
			}
			p.Precision = c.Prec
			kp := p.kernel()
			bytes := float64(2*qn*4) + float64(c.scratchBytes(&kp))
			b.Run(fmt.Sprintf("d%d/%v/v%d/%s", d, c.Prec, c.Variant, c.name()), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if err := run("attention pre-pass", func(s *state) error {
						return s.startPrep(&kp, c, &mmaPrepParams{src: kp, dst: p.Scratch.ptr})
					}); err != nil {
						b.Fatal(err)
					}
				}
				if err := Synchronize(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
		for _, x := range bufs {
			x.Free()
		}
	}
}
