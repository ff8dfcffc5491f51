package main

import (
	"fmt"
	"math"
	"sort"

	"github.com/flashgorgon/flashgorgon/cuda"
	"github.com/flashgorgon/flashgorgon/internal/attnspec"
	"github.com/flashgorgon/flashgorgon/internal/parallel"
)

// benchCase is one attention problem timed by benchAttention: q, k, v, dO [B, H, N, D]
// (H = Hkv), scale 1/√D, standard normal float32 inputs drawn on the device by
// cuda.FillNormal with the seeds of inputSeed (sdpa_bench.py draws the same values).
type benchCase struct {
	B, H, N, D int
	Causal     bool
	// Reps is the number of timed repetitions, after one untimed warm-up; the medians are
	// reported.
	Reps int
	// Precisions are the forward precisions timed (cuda.AttentionBuffers.Precision), each
	// forward and forward+backward, each checked on the rows of checkRows.
	Precisions []cuda.Precision
	// Planes keeps the forward's bfloat16 planes for the backward where the kernels can
	// (cuda.AttentionBuffers.Planes: BF16 on Hopper).
	Planes bool
}

// precisionResult is one precision of ours: median times, the kernels that ran, and the
// largest errors against float64 on the checked rows (relative to max(1, |reference|)).
type precisionResult struct {
	Precision cuda.Precision
	// FwdMs is the forward alone as inference runs it: no planes kept for a backward
	// (Planes nil), as sdpa_bench.py times PyTorch's forward under torch.no_grad().
	// FwdBwdMs is training's forward (keeping its planes where Planes is set) and backward
	// (preprocess, dK/dV, dQ); FwdTrainMs its forward part.
	FwdMs, FwdTrainMs, FwdBwdMs float64
	ErrO, ErrL                  float64 // forward outputs
	ErrGrad                     float64 // dQ, dK, dV
	Kernels                     []string
}

// benchResult holds benchAttention's results: one per precision, and InSum, the float64 sum
// of the first min(2^20, len) elements of q (sdpa_bench.py prints the same sum of its q: equal
// sums say both drew the same inputs).
type benchResult struct {
	Prec  []precisionResult
	InSum float64
}

// inputSeed is the FillNormal seed of input tensor x (0 q, 1 k, 2 v, 3 dO) of a shape;
// sdpa_bench.py's input_seed is the same formula.
func inputSeed(s shape, x int) uint64 { return uint64(s.N)*1000 + uint64(s.D)*10 + uint64(x) }

// checkRows returns the checked rows: query rows N−1 and (2k+1)·N/16 (k = 0..6) and key rows 0
// and (2k+1)·N/16, all of the last head (b = B−1, h = H−1); sdpa_bench.py checks the same.
func checkRows(n int) (qrows, krows []int) {
	qrows, krows = []int{n - 1}, []int{0}
	for k := 0; k < 7; k++ {
		if i := (2*k + 1) * n / 16; i < n {
			qrows, krows = append(qrows, i), append(krows, i)
		}
	}
	return qrows, krows
}

// benchAttention times the attention kernels of every precision of c on device Buffers with
// the device's clock (cuda.Timer: no host copies, no launch overhead of the host) and checks
// rows of every output against float64 references computed on the host from the same inputs.
func benchAttention(c benchCase) (res benchResult, err error) {
	p := cuda.AttentionBuffers{B: c.B, H: c.H, Hkv: c.H, Nq: c.N, Nk: c.N, D: c.D, Causal: c.Causal,
		Scale: 1 / math.Sqrt(float64(c.D))}
	if p.B < 1 || p.H < 1 || p.Nq < 1 || p.D < 1 || p.D > cuda.MaxHeadDim {
		return res, fmt.Errorf("bench: bad case %+v", c)
	}
	s := shape{B: c.B, H: c.H, N: c.N, D: c.D, Causal: c.Causal}
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
	}{{&p.Q, cuda.Float32, qn}, {&p.K, cuda.Float32, qn}, {&p.V, cuda.Float32, qn}, {&p.DO, cuda.Float32, qn},
		{&p.O, cuda.Float32, qn}, {&p.L, cuda.Float32, ln}, {&p.DQ, cuda.Float32, qn}, {&p.DK, cuda.Float32, qn},
		{&p.DV, cuda.Float32, qn}, {&p.Delta, cuda.Float64, ln}} {
		if err := alloc(a.dst, a.dt, a.n); err != nil {
			return res, err
		}
	}
	// The planes the BF16 forward keeps for its backward, where it keeps them; then the
	// scratch of the largest pre-pass among the precisions, forward (with and without Planes)
	// or backward (which depends on whether Planes is set).
	if c.Planes {
		bf := p
		bf.Precision = cuda.PrecisionBF16
		if n := bf.PlanesSize(); n > 0 {
			if err := alloc(&p.Planes, cuda.Float32, n); err != nil {
				return res, err
			}
		}
	}
	scratch := 0
	for _, prec := range c.Precisions {
		pp := p
		pp.Precision = prec
		scratch = max(scratch, pp.ForwardScratch(), pp.BackwardScratch())
		pp.Planes = nil // the forward timed alone keeps no planes: its workspace is in Scratch
		scratch = max(scratch, pp.ForwardScratch())
	}
	if scratch > 0 {
		if err := alloc(&p.Scratch, cuda.Float32, scratch); err != nil {
			return res, err
		}
	}
	// Inputs drawn on the device, copied here in float64 (the values the device has).
	var hq, hk, hv, hdo []float64
	for x, a := range []struct {
		dst *[]float64
		b   *cuda.Buffer
	}{{&hq, p.Q}, {&hk, p.K}, {&hv, p.V}, {&hdo, p.DO}} {
		if err := cuda.FillNormal(a.b, inputSeed(s, x), 1); err != nil {
			return res, err
		}
		if *a.dst, err = download(a.b); err != nil {
			return res, err
		}
	}
	for _, x := range hq[:min(len(hq), 1<<20)] {
		res.InSum += x
	}
	ch := checker{p: &attnspec.Problem{B: p.B, H: p.H, Hkv: p.Hkv, Nq: p.Nq, Nk: p.Nk, D: p.D, Scale: p.Scale, Causal: p.Causal},
		q: hq, k: hk, v: hv, do: hdo}
	qrows, krows := checkRows(c.N)
	head := (p.B-1)*p.H + p.H - 1 // the last (b, h); H = Hkv
	for i := range qrows {
		qrows[i] += head * p.Nq
		krows[i] += head * p.Nk
	}

	reps := max(c.Reps, 1)
	for _, prec := range c.Precisions {
		pp := p
		pp.Precision = prec
		r := precisionResult{Precision: prec}
		if r.Kernels, err = pp.Kernels(); err != nil {
			return res, err
		}
		err = cuda.Do(func() error {
			t, err := cuda.NewTimer(3)
			if err != nil {
				return err
			}
			defer t.Close()
			// timed runs steps one after the other, reps + 1 times (run 0 is the warm-up: the
			// kernels' JIT compilation), and returns, per step, the medians of the times from the
			// first step's start to its end.
			timed := func(steps ...func() error) ([]float64, error) {
				times := make([][]float64, len(steps))
				for rep := 0; rep <= reps; rep++ {
					if err := t.Mark(0); err != nil {
						return nil, err
					}
					for i, step := range steps {
						if err := step(); err != nil {
							return nil, err
						}
						if err := t.Mark(i + 1); err != nil {
							return nil, err
						}
					}
					for i := range steps {
						ms, err := t.Elapsed(0, i+1)
						if err != nil {
							return nil, err
						}
						if rep > 0 {
							times[i] = append(times[i], ms)
						}
					}
				}
				medians := make([]float64, len(steps))
				for i, x := range times {
					medians[i] = median(x)
				}
				return medians, nil
			}
			infer := pp
			infer.Planes = nil
			fwd, err := timed(func() error { return cuda.AttentionForwardBuffers(infer) })
			if err != nil {
				return err
			}
			train, err := timed(func() error { return cuda.AttentionForwardBuffers(pp) }, func() error { return cuda.AttentionBackwardBuffers(pp) })
			if err != nil {
				return err
			}
			r.FwdMs, r.FwdTrainMs, r.FwdBwdMs = fwd[0], train[0], train[1]
			return nil
		})
		if err != nil {
			return res, err
		}
		var hdq, hdk, hdv []float64
		for _, a := range []struct {
			dst *[]float64
			b   *cuda.Buffer
		}{{&ch.o, pp.O}, {&ch.l, pp.L}, {&hdq, pp.DQ}, {&hdk, pp.DK}, {&hdv, pp.DV}} {
			if *a.dst, err = download(a.b); err != nil {
				return res, err
			}
		}
		r.ErrO, r.ErrL = ch.oRows(qrows), ch.lRows(qrows)
		r.ErrGrad = max(ch.dqRows(qrows, hdq), ch.dkdvRows(krows, hdk, hdv))
		res.Prec = append(res.Prec, r)
	}
	return res, nil
}

// download returns the Float32 buffer b's values in float64.
func download(b *cuda.Buffer) ([]float64, error) {
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
	stats             map[[2]int][]rowStat // groupStats by (b, key/value head)
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
func (ch *checker) forwardRows(rows []int) float64 { return max(ch.oRows(rows), ch.lRows(rows)) }

// lRows returns the largest error of L on the given rows.
func (ch *checker) lRows(rows []int) float64 {
	worst := 0.0
	for _, r := range rows {
		_, lse, _ := ch.rowRef(r)
		worst = max(worst, relErr(ch.l[r], lse))
	}
	return worst
}

// oRows returns the largest error of O on the given rows.
func (ch *checker) oRows(rows []int) float64 {
	D, worst := ch.p.D, 0.0
	for _, r := range rows {
		pr, _, kv := ch.rowRef(r)
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

// dkdvRows returns the largest error of dK and dV on the given key rows kr = (b·Hkv + g)·Nk + j,
// summing over every query row that sees the key: dV_j = Σ_i P_ij dO_i and dK_j = Scale Σ_i
// P_ij (dP_ij − Δ_i) q_i, with P_ij from a float64 log-sum-exp of row i and Δ_i = dO_i·O_i from
// a float64 O_i (groupStats), both from the inputs alone: no output of the kernels under test
// enters the reference.
func (ch *checker) dkdvRows(keyRows []int, dk, dv []float64) float64 {
	p := ch.p
	D, G, worst := p.D, p.H/p.Hkv, 0.0
	for _, kr := range keyRows {
		b, hk, j := kr/(p.Hkv*p.Nk), kr/p.Nk%p.Hkv, kr%p.Nk
		st := ch.groupStats(b, hk)
		gk, gv := make([]float64, D), make([]float64, D)
		for h := hk * G; h < (hk+1)*G; h++ {
			for i := p.FirstQuery(b, j); i < p.Nq; i++ {
				r := (b*p.H+h)*p.Nq + i
				x := st[(h-hk*G)*p.Nq+i]
				s, dp := 0.0, 0.0
				for c := 0; c < D; c++ {
					s += ch.q[r*D+c] * ch.k[kr*D+c]
					dp += ch.do[r*D+c] * ch.v[kr*D+c]
				}
				pij := math.Exp(p.Scale*s - x.lse)
				ds := pij * (dp - x.delta)
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

// rowStat is a query row's float64 log-sum-exp and Δ = dO·O.
type rowStat struct{ lse, delta float64 }

// groupStats returns the rowStat of every query row of the heads that share key/value head
// (b, hk), indexed by (h − hk·G)·Nq + i: O(G·Nq·Nk·D) work, spread over the cores and kept
// in ch for the next call (every precision of a shape checks the same key rows).
func (ch *checker) groupStats(b, hk int) []rowStat {
	p := ch.p
	key := [2]int{b, hk}
	if st, ok := ch.stats[key]; ok {
		return st
	}
	D, G := p.D, p.H/p.Hkv
	st := make([]rowStat, G*p.Nq)
	parallel.For(len(st), 1, func(lo, hi int) {
		o := make([]float64, D)
		for x := lo; x < hi; x++ {
			r := (b*p.H+hk*G+x/p.Nq)*p.Nq + x%p.Nq
			pr, lse, kv := ch.rowRef(r)
			clear(o)
			for j, pj := range pr {
				for c := 0; c < D; c++ {
					o[c] += pj * ch.v[kv+j*D+c]
				}
			}
			delta := 0.0
			for c := 0; c < D; c++ {
				delta += ch.do[r*D+c] * o[c]
			}
			st[x] = rowStat{lse, delta}
		}
	})
	if ch.stats == nil {
		ch.stats = map[[2]int][]rowStat{}
	}
	ch.stats[key] = st
	return st
}

// relErr is |got − want| / max(1, |want|); NaN counts as infinitely wrong.
func relErr(got, want float64) float64 {
	e := math.Abs(got-want) / math.Max(1, math.Abs(want))
	if math.IsNaN(e) {
		return math.Inf(1)
	}
	return e
}
