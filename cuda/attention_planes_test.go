package cuda

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
)

// TestKeptLayout checks Planes' layout and who shares it (no GPU): the Q plane starts where the
// fused forward's workspace ends (its K and V tiles and flags: mmaCfg.scratchBytes), the size
// adds Q in bfloat16, and on Hopper exactly BF16 at d = 64 and 128 keeps planes, with the dO
// plane alone as the backward's Scratch.
func TestKeptLayout(t *testing.T) {
	for _, c := range []attnCase{{1, 1, 1, 1, 1, 64, false, nil, false}, {2, 4, 2, 129, 200, 64, true, nil, false},
		{3, 6, 3, 1025, 17, 128, false, nil, false}, {1, 2, 1, 127, 257, 128, true, nil, false}} {
		kp := bf16Sizes(c)
		k, v, q, size := keptLayout(&kp)
		nt := int64((c.Nk + hopperBN - 1) / hopperBN)
		tiles := int64(c.B*c.Hkv) * nt * hopperBN * int64(c.D) * 2
		if k != 0 || v != tiles || q%16 != 0 || size != q+int64(2*c.B*c.H*c.Nq*c.D) {
			t.Errorf("%v: keptLayout = %d, %d, %d, %d; want 0, %d, q on 16 bytes, q + %d", c, k, v, q, size, tiles, 2*c.B*c.H*c.Nq*c.D)
		}
		for _, variant := range []int{20, 21, 22} {
			f, ok := pickMMA(&kp, f32, variant, true, 90)
			if !ok || !f.fused() {
				t.Fatalf("%v: variant %d: %v %v, want a fused kernel", c, variant, f, ok)
			}
			if n := f.scratchBytes(&kp); n != q {
				t.Errorf("%v: variant %d's workspace %d bytes, Q's plane at %d", c, variant, n, q)
			}
		}
		fc, kv, qc, ok := keptPair(&kp, f32, 90)
		if !ok || !fc.fused() || !kv.Hopper || !qc.Hopper {
			t.Errorf("%v: keptPair = %v, %v, %v, %v; want the fused forward and Hopper backward", c, fc, kv, qc, ok)
		}
		if got, want := bwdScratchBytes(&kp, true), int64(2*c.B*c.H*c.Nq*c.D); got != want {
			t.Errorf("%v: bwdScratchBytes kept = %d, want %d", c, got, want)
		}
		for _, other := range []struct {
			name string
			prec Precision
			dt   dtype
			sm   int
		}{{"TF32", PrecisionTF32, f32, 90}, {"Exact", PrecisionExact, f32, 90}, {"float64", PrecisionBF16, f64, 90},
			{"sm 80", PrecisionBF16, f32, 80}} {
			o := kp
			o.precision = int32(other.prec)
			if _, _, _, ok := keptPair(&o, other.dt, other.sm); ok {
				t.Errorf("%v %s: keptPair ok, want none", c, other.name)
			}
		}
	}
	for _, d := range []int{32, 96} {
		kp := bf16Sizes(attnCase{1, 1, 1, 8, 8, d, false, nil, false})
		if _, _, _, ok := keptPair(&kp, f32, 90); ok {
			t.Errorf("d=%d: keptPair ok, want none", d)
		}
	}
}

// bf16Sizes returns the kernel parameters of c's problem in BF16, without buffers.
func bf16Sizes(c attnCase) attnParams {
	pr := (&AttentionParams{B: c.B, H: c.H, Hkv: c.Hkv, Nq: c.Nq, Nk: c.Nk, D: c.D, Scale: 1, Causal: c.Causal,
		Precision: PrecisionBF16}).problem()
	return attnBase(&pr)
}

// bf16At returns the bfloat16 value at byte offset off of words (a Buffer's bytes read as
// float32), widened to float32.
func bf16At(words []float32, off int64) float32 {
	w := math.Float32bits(words[off/4])
	if off%4 != 0 {
		w >>= 16
	}
	return math.Float32frombits(w << 16)
}

// sw128 is the byte offset of column c of row r in a swizzled bfloat16 tile of rows rows
// (wgmma.cuh's fg_sw128, with the column's place in its 16-byte chunk).
func sw128(rows, r, c int) int64 {
	ch := c / 8
	return int64((ch/8)*rows*128 + r*128 + ((ch%8)^(r%8))<<4 + 2*(c%8))
}

// TestAttentionKeptPlanes runs the BF16 forward on Hopper with Planes (the fused persistent
// variants 20 to 22) and the backward on them (every Hopper dK/dV kernel with the default dQ
// kernel and every dQ kernel with the default dK/dV kernel):
//   - O and L match float64 within twice the naive bfloat16 forward's error;
//   - the planes hold Q, K and V rounded to bfloat16 (Go's rounding), K and V in the swizzled
//     tiles of keptLayout, for every key below the key length;
//   - dQ, dK and dV match float64 within twice the error of the naive bfloat16 backward fed
//     the same O and L, and are the same bits as the backward without Planes (which converts
//     Q, K and V itself);
//   - a Planes too small, a forward that keeps none and a backward that reads none are refused.
func TestAttentionKeptPlanes(t *testing.T) {
	needDevice(t)
	if deviceSM() != 90 {
		t.Skipf("Planes are kept on Hopper only (compute capability %d)", deviceSM())
	}
	rng := rand.New(rand.NewSource(19))
	for _, c := range []attnCase{
		{2, 4, 2, 129, 200, 64, true, []int{150, 200}, true}, // GQA, key lengths, bottom-right causal
		{1, 2, 2, 1025, 1025, 128, true, nil, false},
		{2, 2, 1, 17, 300, 64, false, []int{300, 1}, false},
		{1, 3, 3, 127, 129, 128, false, []int{100}, true},
	} {
		t.Run(c.String(), func(t *testing.T) { testKeptPlanes(t, rng, c) })
	}
}

func testKeptPlanes(t *testing.T, rng *rand.Rand, c attnCase) {
	pr := newAttnProblem(rng, c, false)
	hp := pr.p
	hp.Precision = PrecisionBF16
	qn, kn, ln := c.B*c.H*c.Nq*c.D, c.B*c.Hkv*c.Nk*c.D, c.B*c.H*c.Nq
	f32 := func(x any) *Buffer { return devBuf(t, Float32, as64(x)) }
	p := AttentionBuffers{B: c.B, H: c.H, Hkv: c.Hkv, Nq: c.Nq, Nk: c.Nk, D: c.D, Scale: hp.Scale, Causal: c.Causal,
		Precision: PrecisionBF16, Q: f32(hp.Q), K: f32(hp.K), V: f32(hp.V), O: devOut(t, Float32, qn),
		L: devOut(t, Float32, ln), LRes: devOut(t, Float32, ln), DO: f32(hp.DO),
		DQ: devOut(t, Float32, qn), DK: devOut(t, Float32, kn), DV: devOut(t, Float32, kn), Delta: devOut(t, Float64, ln)}
	if c.KeyLengths != nil {
		p.KeyLengths = devInts(t, keyLengths32(c.KeyLengths))
	}
	if c.WithDL {
		p.DL = f32(hp.DL)
	}
	n := p.PlanesSize()
	if n == 0 {
		t.Fatalf("PlanesSize = 0 on Hopper for BF16 d=%d", c.D)
	}
	var planes *Buffer
	nO, nL := refAttentionNaive(&hp, pr.q, pr.k, pr.v, PrecisionBF16)
	tolO, tolL := 2*errMeasure(nO, pr.o)+mmaFloor, 2*errMeasure(nL, pr.l)+mmaFloor

	// The dK/dV and dQ kernels that read kept planes, the defaults first.
	var kvs, qs []int
	for i, b := range mmaBwdCfgs {
		if b.Prec == PrecisionBF16 && b.D == c.D && b.Hopper && !b.Fused {
			if b.DQ {
				qs = append(qs, i)
			} else {
				kvs = append(kvs, i)
			}
		}
	}
	var pairs [][2]int
	for _, kv := range kvs {
		pairs = append(pairs, [2]int{kv, qs[0]})
	}
	for _, q := range qs[1:] {
		pairs = append(pairs, [2]int{kvs[0], q})
	}

	for _, variant := range []int{20, 21, 22} {
		// A new buffer for each forward, never written before it: compute-sanitizer's
		// initcheck then sees any read of a byte the forward did not write.
		planes = devOut(t, Float32, n)
		p.Planes, p.Scratch = planes, nil
		if err := attentionForwardBuffers(p, variant); err != nil {
			t.Fatalf("forward v%d: %v", variant, err)
		}
		o, l := host(t, p.O), host(t, p.L)
		compare(t, fmt.Sprintf("v%d O", variant), o, pr.o, tolO)
		compare(t, fmt.Sprintf("v%d L", variant), l, pr.l, tolL)

		// The planes against Go's rounding of the inputs.
		words := make([]float32, n)
		if err := planes.Download(words); err != nil {
			t.Fatal(err)
		}
		kp := p.sizing()
		kOff, vOff, qOff, _ := keptLayout(&kp)
		bad := 0
		check := func(what string, got, x float32) {
			if want := roundBF16(x); got != want && bad < 5 {
				bad++
				t.Errorf("v%d %s: %g, want bfloat16(%g) = %g", variant, what, got, x, want)
			}
		}
		qf, kf, vf := hp.Q.([]float32), hp.K.([]float32), hp.V.([]float32)
		for i := range qf {
			check(fmt.Sprintf("Q plane [%d]", i), bf16At(words, qOff+2*int64(i)), qf[i])
		}
		nt := (c.Nk + hopperBN - 1) / hopperBN
		for b := 0; b < c.B; b++ {
			klen := c.Nk
			if c.KeyLengths != nil {
				klen = c.KeyLengths[b]
			}
			for hk := 0; hk < c.Hkv; hk++ {
				for j := 0; j < klen; j++ {
					tile := int64(((b*c.Hkv+hk)*nt + j/hopperBN) * hopperBN * c.D * 2)
					for col := 0; col < c.D; col++ {
						at := tile + sw128(hopperBN, j%hopperBN, col)
						e := ((b*c.Hkv+hk)*c.Nk+j)*c.D + col
						check(fmt.Sprintf("K tile (b %d, hk %d, key %d, col %d)", b, hk, j, col), bf16At(words, kOff+at), kf[e])
						check(fmt.Sprintf("V tile (b %d, hk %d, key %d, col %d)", b, hk, j, col), bf16At(words, vOff+at), vf[e])
					}
				}
			}
		}

		bp := hp
		nq, nk, nv := refAttentionBwdNaive(&bp, pr.q, pr.k, pr.v, o, l, pr.do, pr.dl, PrecisionBF16)
		tols := []float64{2*errMeasure(nq, pr.dq) + mmaFloor, 2*errMeasure(nk, pr.dk) + mmaFloor, 2*errMeasure(nv, pr.dvv) + mmaFloor}
		for _, pair := range pairs {
			name := fmt.Sprintf("v%d %s", variant, pairName(pair))
			p.Planes = planes
			p.Scratch = devOut(t, Float32, p.BackwardScratch())
			if err := backwardBuffersPair(p, pair[0], pair[1]); err != nil {
				t.Fatalf("%s with Planes: %v", name, err)
			}
			kept := [][]float64{host(t, p.DQ), host(t, p.DK), host(t, p.DV)}
			for i, x := range []struct {
				name string
				want []float64
			}{{"dQ", pr.dq}, {"dK", pr.dk}, {"dV", pr.dvv}} {
				compare(t, name+" "+x.name, kept[i], x.want, tols[i])
			}
			p.Planes = nil
			p.Scratch = devOut(t, Float32, p.BackwardScratch())
			if err := backwardBuffersPair(p, pair[0], pair[1]); err != nil {
				t.Fatalf("%s without Planes: %v", name, err)
			}
			for i, got := range [][]float64{host(t, p.DQ), host(t, p.DK), host(t, p.DV)} {
				for e := range got {
					if got[e] != kept[i][e] && !(math.IsNaN(got[e]) && math.IsNaN(kept[i][e])) {
						t.Errorf("%s: %s[%d] = %g with Planes, %g without: want the same bits", name, []string{"dQ", "dK", "dV"}[i], e, kept[i][e], got[e])
						break
					}
				}
			}
		}
	}

	// Refusals, each naming what is wrong.
	p.Planes = devOut(t, Float32, n-1)
	if err := AttentionForwardBuffers(p); err == nil || !strings.Contains(err.Error(), "Planes") {
		t.Errorf("a Planes of %d elements (%d needed): err = %v, want one naming Planes", n-1, n, err)
	}
	p.Planes = planes
	if err := attentionForwardBuffers(p, 19); err == nil || !strings.Contains(err.Error(), "Planes") {
		t.Errorf("forward variant 19 with Planes: err = %v, want one naming Planes", err)
	}
	for i, b := range mmaBwdCfgs {
		if b.Prec == PrecisionBF16 && b.D == c.D && !b.DQ && b.Pre && !b.Hopper {
			p.Scratch = devOut(t, Float32, p.BackwardScratch())
			if err := backwardBuffersPair(p, i, qs[0]); err == nil || !strings.Contains(err.Error(), "Planes") {
				t.Errorf("backward %s with Planes: err = %v, want one naming Planes", b.short(), err)
			}
			break
		}
	}
}
