package main

import (
	"fmt"
	"math"
	"math/rand"
	"sort"

	"github.com/flashgorgon/flashgorgon/cuda"
	"github.com/flashgorgon/flashgorgon/internal/attnspec"
)

// benchCase is one attention problem timed by benchAttention: q, k, v [B, H, N, D] (H = Hkv),
// scale 1/√D, standard normal inputs.
type benchCase struct {
	B, H, N, D int
	Causal     bool
	F64        bool
	// Reps is the number of timed repetitions, after one untimed warm-up; the medians are
	// reported.
	Reps int
	// CheckRows is the number of query rows (and of key rows) whose outputs are checked against
	// float64 references before the timings are reported.
	CheckRows int
	// Precisions also times (and checks) the float32 forward in each of these precisions (the
	// kernel AttentionForwardBuffers picks for it).
	Precisions []cuda.Precision
}

// precisionResult is the forward of one precision: the median time, the largest error of the
// checked rows of O and L (as checkErr), and the kernel that ran.
type precisionResult struct {
	Precision cuda.Precision
	FwdMs     float64
	CheckErr  float64
	Kernel    string
}

// benchResult holds benchAttention's medians, in milliseconds, and the check.
type benchResult struct {
	FwdMs, FwdBwdMs float64 // forward; forward + backward (preprocess, dK/dV, dQ)
	// CheckErr is the largest error of the checked rows of O, L, dQ, dK and dV relative to
	// max(1, max |reference|).
	CheckErr float64
	Kernels  []string // the kernels timed
	Prec     []precisionResult
}

// benchAttention times the attention kernels on device Buffers with the device's clock
// (cuda.Timer: copies to and from the host are not timed, nor is the host's launch overhead)
// and checks sampled rows of every output against float64 references computed on the host
// from the same inputs.
func benchAttention(c benchCase) (res benchResult, err error) {
	p := cuda.AttentionBuffers{B: c.B, H: c.H, Hkv: c.H, Nq: c.N, Nk: c.N, D: c.D, Causal: c.Causal,
		Scale: 1 / math.Sqrt(float64(c.D))}
	if p.B < 1 || p.H < 1 || p.Nq < 1 || p.D < 1 || p.D > cuda.MaxHeadDim {
		return res, fmt.Errorf("bench: bad case %+v", c)
	}
	dt := cuda.Float32
	if c.F64 {
		dt = cuda.Float64
	}
	qn, ln := p.B*p.H*p.Nq*p.D, p.B*p.H*p.Nq
	var bufs []*cuda.Buffer
	defer func() {
		for _, b := range bufs {
			b.Free()
		}
	}()
	alloc := func(dst **cuda.Buffer, dt cuda.DType, n int) error {
		b, err := cuda.Alloc(dt, n)
		if err != nil {
			return err
		}
		*dst, bufs = b, append(bufs, b)
		return nil
	}
	for _, a := range []struct {
		dst **cuda.Buffer
		dt  cuda.DType
		n   int
	}{{&p.Q, dt, qn}, {&p.K, dt, qn}, {&p.V, dt, qn}, {&p.DO, dt, qn}, {&p.O, dt, qn}, {&p.L, dt, ln},
		{&p.DQ, dt, qn}, {&p.DK, dt, qn}, {&p.DV, dt, qn}, {&p.Delta, cuda.Float64, ln}} {
		if err := alloc(a.dst, a.dt, a.n); err != nil {
			return res, err
		}
	}
	// Inputs: standard normal, drawn here and kept in float64 (the values the device has) for
	// the check.
	rng := rand.New(rand.NewSource(int64(c.N*1000 + c.D)))
	var hq, hk, hv, hdo []float64
	for _, a := range []struct {
		dst *[]float64
		b   *cuda.Buffer
	}{{&hq, p.Q}, {&hk, p.K}, {&hv, p.V}, {&hdo, p.DO}} {
		if *a.dst, err = uploadNormal(rng, a.b, qn, c.F64); err != nil {
			return res, err
		}
	}
	if res.Kernels, err = p.Kernels(); err != nil {
		return res, err
	}
	reps := max(c.Reps, 1)
	err = cuda.Do(func() error {
		t, err := cuda.NewTimer(3)
		if err != nil {
			return err
		}
		defer t.Close()
		fwd := func() error { return cuda.AttentionForwardBuffers(p) }
		bwd := func() error { return cuda.AttentionBackwardBuffers(p) }
		var tf, tfb []float64
		for r := 0; r <= reps; r++ { // run 0 is the warm-up (the kernels' JIT compilation)
			for _, f := range []func() error{func() error { return t.Mark(0) }, fwd, func() error { return t.Mark(1) },
				bwd, func() error { return t.Mark(2) }} {
				if err := f(); err != nil {
					return err
				}
			}
			a, err := t.Elapsed(0, 1)
			if err != nil {
				return err
			}
			b, err := t.Elapsed(0, 2)
			if err != nil {
				return err
			}
			if r > 0 {
				tf, tfb = append(tf, a), append(tfb, b)
			}
		}
		res.FwdMs, res.FwdBwdMs = median(tf), median(tfb)
		return nil
	})
	if err != nil {
		return res, err
	}

	var ho, hl, hdq, hdk, hdv []float64
	for _, a := range []struct {
		dst *[]float64
		b   *cuda.Buffer
	}{{&ho, p.O}, {&hl, p.L}, {&hdq, p.DQ}, {&hdk, p.DK}, {&hdv, p.DV}} {
		if *a.dst, err = download(a.b, c.F64); err != nil {
			return res, err
		}
	}
	ch := checker{p: &attnspec.Problem{B: p.B, H: p.H, Hkv: p.Hkv, Nq: p.Nq, Nk: p.Nk, D: p.D, Scale: p.Scale, Causal: p.Causal},
		q: hq, k: hk, v: hv, do: hdo, o: ho, l: hl}
	rows := make([]int, max(c.CheckRows, 1))
	for i := range rows {
		rows[i] = rng.Intn(ln)
	}
	rows[0] = ln - 1 // the last row sees the most keys under the causal mask
	res.CheckErr = max(ch.forwardRows(rows), ch.dqRows(rows, hdq), ch.dkdvRows(rng, len(rows), hdk, hdv))

	for _, prec := range c.Precisions {
		pp := p
		pp.Precision = prec
		r := precisionResult{Precision: prec}
		names, err := pp.Kernels()
		if err != nil {
			return res, err
		}
		r.Kernel = names[0]
		err = cuda.Do(func() error {
			t, err := cuda.NewTimer(2)
			if err != nil {
				return err
			}
			defer t.Close()
			var ts []float64
			for rep := 0; rep <= reps; rep++ {
				if err := t.Mark(0); err != nil {
					return err
				}
				if err := cuda.AttentionForwardBuffers(pp); err != nil {
					return err
				}
				if err := t.Mark(1); err != nil {
					return err
				}
				ms, err := t.Elapsed(0, 1)
				if err != nil {
					return err
				}
				if rep > 0 {
					ts = append(ts, ms)
				}
			}
			r.FwdMs = median(ts)
			return nil
		})
		if err != nil {
			return res, err
		}
		if ch.o, err = download(pp.O, c.F64); err != nil {
			return res, err
		}
		if ch.l, err = download(pp.L, c.F64); err != nil {
			return res, err
		}
		r.CheckErr = ch.forwardRows(rows)
		res.Prec = append(res.Prec, r)
	}
	return res, nil
}

// uploadNormal fills b with n standard normal values (float32 unless f64) and returns them in
// float64.
func uploadNormal(rng *rand.Rand, b *cuda.Buffer, n int, f64 bool) ([]float64, error) {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	if f64 {
		return x, b.Upload(x)
	}
	x32 := make([]float32, n)
	for i, v := range x {
		x32[i] = float32(v)
		x[i] = float64(x32[i])
	}
	return x, b.Upload(x32)
}

// download returns b's values in float64.
func download(b *cuda.Buffer, f64 bool) ([]float64, error) {
	if f64 {
		x := make([]float64, b.Len())
		return x, b.Download(x)
	}
	x32 := make([]float32, b.Len())
	if err := b.Download(x32); err != nil {
		return nil, err
	}
	x := make([]float64, len(x32))
	for i, v := range x32 {
		x[i] = float64(v)
	}
	return x, nil
}

func median(x []float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// checker recomputes single rows of the attention outputs in float64 from the host copies of
// the benchmark's inputs.
type checker struct {
	p                 *attnspec.Problem
	q, k, v, do, o, l []float64
}

// rowRef returns, for query row r = (b·H + h)·Nq + i, the probabilities P_rj over the visible
// keys j < KeyLimit (from a float64 log-sum-exp of its own), that log-sum-exp, and the offset
// of the row's key/value head.
func (ch *checker) rowRef(r int) (pr []float64, lse float64, kv int) {
	p := ch.p
	D := p.D
	b, h, i := r/(p.H*p.Nq), r/p.Nq%p.H, r%p.Nq
	kv = (b*p.Hkv + h/(p.H/p.Hkv)) * p.Nk * D
	pr = make([]float64, p.KeyLimit(b, i))
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
func (ch *checker) forwardRows(rows []int) float64 {
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
func (ch *checker) dqRows(rows []int, dq []float64) float64 {
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
func (ch *checker) dkdvRows(rng *rand.Rand, n int, dk, dv []float64) float64 {
	p := ch.p
	D, G, worst := p.D, p.H/p.Hkv, 0.0
	for t := 0; t < n; t++ {
		kr := rng.Intn(p.B * p.Hkv * p.Nk)
		if t == 0 {
			kr = 0 // key 0 is seen by every query row
		}
		b, hk, j := kr/(p.Hkv*p.Nk), kr/p.Nk%p.Hkv, kr%p.Nk
		gk, gv := make([]float64, D), make([]float64, D)
		for h := hk * G; h < (hk+1)*G; h++ {
			for i := p.FirstQuery(b, j); i < p.Nq; i++ {
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
