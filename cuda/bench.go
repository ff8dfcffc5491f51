package cuda

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"unsafe"
)

// BenchCase is one attention problem timed by BenchAttention: q, k, v [B, H, N, D] (H = Hkv),
// scale 1/√D, inputs drawn on the device (scaled standard normal).
type BenchCase struct {
	B, H, N, D int
	Causal     bool
	F64        bool
	// Reps is the number of timed repetitions, after one untimed warm-up; the medians are
	// reported (default 5).
	Reps int
	// Variant1 also times (and checks) forward kernel variant 1, one thread per query row.
	Variant1 bool
	// CheckRows is the number of query rows (and of key rows) whose outputs are checked against
	// float64 references before the timings are reported (default 8).
	CheckRows int
	// Precisions also times (and checks) the float32 forward in each of these precisions
	// (PrecisionFMA is variant 2 again; the others run the tensor-core kernels where pickMMA
	// takes the problem, else variant 2).
	Precisions []Precision
}

// PrecisionResult is one forward kernel of a precision in BenchResult: the median time, the
// largest error of the checked rows of O and L (as CheckErr), and the kernel that ran.
type PrecisionResult struct {
	Precision Precision
	Variant   int // 2: the kernel AttentionForward runs; 3, 4: a tensor-core variant
	FwdMs     float64
	CheckErr  float64
	Kernel    string
}

// BenchResult holds BenchAttention's medians, in milliseconds, and the check.
type BenchResult struct {
	FwdMs, FwdBwdMs float64 // FlashAttention-2 forward; forward + backward (preprocess, dK/dV, dQ)
	FwdV1Ms         float64 // forward variant 1, when asked for
	// CheckErr is the largest error of the checked rows of O, L, dQ, dK and dV (and variant 1's
	// O) relative to max(1, max |reference|).
	CheckErr float64
	Kernels  []string // the kernels timed
	// Prec holds the forward of every precision of BenchCase.Precisions, in order.
	Prec []PrecisionResult
}

// BenchAttention times the attention kernels on device-resident inputs with CUDA events
// (copies to and from the host are not timed) and checks sampled rows of every output against
// float64 references computed on the host from the same inputs.
func BenchAttention(c BenchCase) (BenchResult, error) {
	var res BenchResult
	if c.Reps <= 0 {
		c.Reps = 5
	}
	if c.CheckRows <= 0 {
		c.CheckRows = 8
	}
	dt := f32
	if c.F64 {
		dt = f64
	}
	p := AttentionParams{B: c.B, H: c.H, Hkv: c.H, Nq: c.N, Nk: c.N, D: c.D, Causal: c.Causal, Scale: 1 / math.Sqrt(float64(c.D))}
	if p.B < 1 || p.H < 1 || p.Nq < 1 || p.D < 1 || p.D > MaxHeadDim {
		return res, fmt.Errorf("cuda: bench: bad case %+v", c)
	}
	if !Enabled() {
		return res, ErrNoDevice
	}
	err := run("attention benchmark", func(s *state) error {
		sc := &scope{s: s}
		defer sc.done()
		qn, ln := int64(p.B*p.H*p.Nq*p.D), int64(p.B*p.H*p.Nq)
		es := int64(dt.size())
		kp := p.kernelParams()
		for _, a := range []struct {
			dst *devptr
			n   int64
		}{{&kp.q, qn * es}, {&kp.k, qn * es}, {&kp.v, qn * es}, {&kp.do, qn * es}, {&kp.o, qn * es}, {&kp.lse, ln * es},
			{&kp.delta, ln * 8}, {&kp.dq, qn * es}, {&kp.dk, qn * es}, {&kp.dv, qn * es}} {
			var err error
			if *a.dst, err = sc.alloc(a.n); err != nil {
				return err
			}
		}
		for i, x := range []devptr{kp.q, kp.k, kp.v, kp.do} {
			fp := fillParams{x: x, n: qn, seed: uint64(i + 1), scale: 1}
			if c.F64 {
				fp.f64 = 1
			}
			if err := s.start("debug", "fg_debug_fill", [3]int{1024, 1, 1}, 256, 0, unsafe.Pointer(&fp)); err != nil {
				return err
			}
		}
		fwd := func() error { return s.attnForwardKernels(&kp, dt, 2) }
		bwd := func() error { return s.attnBackwardKernels(&kp, dt) }
		// Warm-up (JIT compilation of the kernels happens here), then the timed runs.
		if err := fwd(); err != nil {
			return err
		}
		if err := bwd(); err != nil {
			return err
		}
		if err := ctxSynchronize("benchmark warm-up"); err != nil {
			return err
		}
		var ev [3]cuEvent
		for i := range ev {
			e, err := eventCreate()
			if err != nil {
				return err
			}
			ev[i] = e
			defer eventDestroy(e)
		}
		var tf, tfb []float64
		for r := 0; r < c.Reps; r++ {
			steps := []func() error{func() error { return eventRecord(ev[0]) }, fwd, func() error { return eventRecord(ev[1]) },
				bwd, func() error { return eventRecord(ev[2]) }, func() error { return eventSync(ev[2]) }}
			for _, f := range steps {
				if err := f(); err != nil {
					return err
				}
			}
			a, err := eventElapsed(ev[0], ev[1])
			if err != nil {
				return err
			}
			b, err := eventElapsed(ev[0], ev[2])
			if err != nil {
				return err
			}
			tf, tfb = append(tf, a), append(tfb, b)
		}
		res.FwdMs, res.FwdBwdMs = median(tf), median(tfb)
		fc, dc, qc := pickCfg(fwdCfgs[dt], p.D), pickCfg(dkdvCfgs[dt], p.D), pickCfg(dqCfgs[dt], p.D)
		res.Kernels = []string{"fg_attn_fwd_v2_" + fc.suffix(dt), "fg_attn_bwd_preprocess_" + dt.String(),
			"fg_attn_bwd_dkdv_" + dc.suffix(dt), "fg_attn_bwd_dq_" + qc.suffix(dt)}

		host := func(d devptr, n int64) ([]float64, error) {
			if c.F64 {
				x := make([]float64, n)
				return x, download(x, d, "benchmark check")
			}
			x := make([]float32, n)
			if err := download(x, d, "benchmark check"); err != nil {
				return nil, err
			}
			y := make([]float64, n)
			for i, v := range x {
				y[i] = float64(v)
			}
			return y, nil
		}
		var hq, hk, hv, hdo, ho, hl, hdq, hdk, hdv []float64
		for _, a := range []struct {
			dst *[]float64
			d   devptr
			n   int64
		}{{&hq, kp.q, qn}, {&hk, kp.k, qn}, {&hv, kp.v, qn}, {&hdo, kp.do, qn}, {&ho, kp.o, qn}, {&hl, kp.lse, ln},
			{&hdq, kp.dq, qn}, {&hdk, kp.dk, qn}, {&hdv, kp.dv, qn}} {
			var err error
			if *a.dst, err = host(a.d, a.n); err != nil {
				return err
			}
		}
		rng := rand.New(rand.NewSource(int64(c.N*1000 + c.D)))
		ch := benchChecker{p: &p, q: hq, k: hk, v: hv, do: hdo, o: ho, l: hl}
		rows := make([]int, c.CheckRows)
		for i := range rows {
			rows[i] = rng.Intn(int(ln))
		}
		rows[0] = int(ln) - 1 // the last row sees the most keys under the causal mask
		res.CheckErr = max(ch.forwardRows(rows), ch.dqRows(rows, hdq), ch.dkdvRows(rng, c.CheckRows, hdk, hdv))

		// timeFwd times forward variant on kp: one warm-up run, then the median of c.Reps.
		timeFwd := func(kp *attnParams, variant int) (float64, error) {
			var ts []float64
			for r := 0; r <= c.Reps; r++ {
				if err := eventRecord(ev[0]); err != nil {
					return 0, err
				}
				if err := s.attnForwardKernels(kp, dt, variant); err != nil {
					return 0, err
				}
				if err := eventRecord(ev[1]); err != nil {
					return 0, err
				}
				if err := eventSync(ev[1]); err != nil {
					return 0, err
				}
				ms, err := eventElapsed(ev[0], ev[1])
				if err != nil {
					return 0, err
				}
				if r > 0 { // the first run is the warm-up
					ts = append(ts, ms)
				}
			}
			return median(ts), nil
		}
		// checkFwd checks the sampled rows of the O and L the last forward wrote.
		checkFwd := func() (float64, error) {
			var err error
			if ch.o, err = host(kp.o, qn); err != nil {
				return 0, err
			}
			if ch.l, err = host(kp.lse, ln); err != nil {
				return 0, err
			}
			return ch.forwardRows(rows), nil
		}

		if c.Variant1 {
			var err error
			if res.FwdV1Ms, err = timeFwd(&kp, 1); err != nil {
				return err
			}
			e, err := checkFwd()
			if err != nil {
				return err
			}
			res.CheckErr = max(res.CheckErr, e)
		}
		for _, prec := range c.Precisions {
			pk := kp
			pk.precision = int32(prec)
			// The kernel AttentionForward runs first, then the other variants of the precision.
			variants := []int{2}
			for _, mc := range mmaCfgs {
				if d, ok := pickMMA(&pk, dt, 0); ok && mc.Prec == prec && mc.D == p.D && mc.Variant != d.Variant {
					variants = append(variants, mc.Variant)
				}
			}
			for _, variant := range variants {
				r := PrecisionResult{Precision: prec, Variant: variant, Kernel: "fg_attn_fwd_v2_" + fc.suffix(dt)}
				pick := variant // the kernel variant 2 runs for this precision is pickMMA's first
				if variant == 2 {
					pick = 0
				}
				if mc, ok := pickMMA(&pk, dt, pick); ok {
					r.Kernel = mc.name()
				}
				var err error
				if r.FwdMs, err = timeFwd(&pk, variant); err != nil {
					return err
				}
				if r.CheckErr, err = checkFwd(); err != nil {
					return err
				}
				res.Prec = append(res.Prec, r)
			}
		}
		return nil
	})
	return res, err
}

func median(x []float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// benchChecker recomputes single rows of the attention outputs in float64 from the host
// copies of the benchmark's inputs.
type benchChecker struct {
	p                 *AttentionParams
	q, k, v, do, o, l []float64
}

// rowRef returns, for query row r = (b·H + h)·Nq + i, the probabilities P_rj over the visible
// keys j < lim (from a float64 log-sum-exp of its own), that log-sum-exp, and the offset of
// the row's key/value head.
func (ch *benchChecker) rowRef(r int) (pr []float64, lse float64, kv int) {
	p := ch.p
	D := p.D
	b, h, i := r/(p.H*p.Nq), r/p.Nq%p.H, r%p.Nq
	kv = (b*p.Hkv + h/(p.H/p.Hkv)) * p.Nk * D
	vis := p.problem()
	lim := vis.KeyLimit(b, i)
	pr = make([]float64, lim)
	mx := math.Inf(-1)
	for j := range pr {
		dot := 0.0
		for c := 0; c < D; c++ {
			dot += ch.q[r*D+c] * ch.k[kv+j*D+c]
		}
		pr[j] = p.Scale * dot
		mx = math.Max(mx, pr[j])
	}
	sum := 0.0
	for _, s := range pr {
		sum += math.Exp(s - mx)
	}
	lse = mx + math.Log(sum)
	for j := range pr {
		pr[j] = math.Exp(pr[j] - lse)
	}
	return pr, lse, kv
}

// forwardRows returns the largest error of O and L on the given rows.
func (ch *benchChecker) forwardRows(rows []int) float64 {
	D, worst := ch.p.D, 0.0
	for _, r := range rows {
		pr, lse, kv := ch.rowRef(r)
		worst = max(worst, relErr(ch.l[r], lse))
		for c := 0; c < D; c++ {
			o := 0.0
			for j, pj := range pr {
				o += pj * ch.v[kv+j*D+c]
			}
			worst = max(worst, relErr(ch.o[r*D+c], o))
		}
	}
	return worst
}

// dqRows returns the largest error of dQ on the given rows: dQ_i = Scale Σ_j P_ij (dP_ij − Δ_i)
// k_j with dP_ij = dO_i·v_j and Δ_i = Σ_j P_ij dP_ij.
func (ch *benchChecker) dqRows(rows []int, dq []float64) float64 {
	D, worst := ch.p.D, 0.0
	for _, r := range rows {
		pr, _, kv := ch.rowRef(r)
		dp := make([]float64, len(pr))
		delta := 0.0
		for j := range pr {
			for c := 0; c < D; c++ {
				dp[j] += ch.do[r*D+c] * ch.v[kv+j*D+c]
			}
			delta += pr[j] * dp[j]
		}
		for c := 0; c < D; c++ {
			g := 0.0
			for j, pj := range pr {
				g += pj * (dp[j] - delta) * ch.k[kv+j*D+c]
			}
			worst = max(worst, relErr(dq[r*D+c], ch.p.Scale*g))
		}
	}
	return worst
}

// dkdvRows returns the largest error of dK and dV on n random key rows, summing over every
// query row that sees the key. P_ij uses the device's L and Δ_i the device's O (both checked
// on sampled rows by forwardRows), which keeps this O(Nq·D) per key row.
func (ch *benchChecker) dkdvRows(rng *rand.Rand, n int, dk, dv []float64) float64 {
	p := ch.p
	D, G, worst := p.D, p.H/p.Hkv, 0.0
	vis := p.problem()
	for t := 0; t < n; t++ {
		kr := rng.Intn(p.B * p.Hkv * p.Nk)
		if t == 0 {
			kr = 0 // key 0 is seen by every query row
		}
		b, hk, j := kr/(p.Hkv*p.Nk), kr/p.Nk%p.Hkv, kr%p.Nk
		gk, gv := make([]float64, D), make([]float64, D)
		for h := hk * G; h < (hk+1)*G; h++ {
			for i := 0; i < p.Nq; i++ {
				if !vis.Visible(b, i, j) {
					continue
				}
				r := (b*p.H+h)*p.Nq + i
				s, dp, delta := 0.0, 0.0, 0.0
				for c := 0; c < D; c++ {
					s += ch.q[r*D+c] * ch.k[kr*D+c]
					dp += ch.do[r*D+c] * ch.v[kr*D+c]
					delta += ch.do[r*D+c] * ch.o[r*D+c]
				}
				pij := math.Exp(p.Scale*s - ch.l[r])
				ds := pij * (dp - delta)
				for c := 0; c < D; c++ {
					gk[c] += p.Scale * ds * ch.q[r*D+c]
					gv[c] += pij * ch.do[r*D+c]
				}
			}
		}
		for c := 0; c < D; c++ {
			worst = max(worst, relErr(dk[kr*D+c], gk[c]), relErr(dv[kr*D+c], gv[c]))
		}
	}
	return worst
}

// relErr is |got − want| / max(1, |want|); NaN counts as infinitely wrong.
func relErr(got, want float64) float64 {
	e := math.Abs(got-want) / math.Max(1, math.Abs(want))
	if math.IsNaN(e) {
		return math.Inf(1)
	}
	return e
}
