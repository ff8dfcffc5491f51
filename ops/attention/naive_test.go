package attention

import (
	"math"

	"github.com/flashgorgon/flashgorgon/internal/attnspec"
)

// This file is the independent oracle: attention written as the definition,
// one query row at a time, in float64, with no tiling, no online softmax and
// no code shared with the fused kernels or with Reference but the visibility
// rule (attnspec, tested there against its definition). It reads masked
// keys never (every loop over keys skips them), so that it defines what the
// op must give whatever masked keys hold.

// naiveProblem is one attention problem in float64, laid out as
// q [B,H,Nq,D], k and v [B,Hkv,Nk,D].
type naiveProblem struct {
	B, H, Hkv, Nq, Nk, D int
	Scale                float64 // the resolved scale (never 0)
	Causal               bool
	KeyLengths           []int
	Q, K, V              []float64
}

// visible reports whether query row i of batch b sees key j: the rule of
// attnspec, which its own tests check against the definition.
func (n *naiveProblem) visible(b, i, j int) bool {
	keyLen := n.Nk
	if n.KeyLengths != nil {
		keyLen = n.KeyLengths[b]
	}
	return j < attnspec.KeyLimit(i, n.Nq, n.Nk, keyLen, n.Causal)
}

// scores sets s[j] = Scale·q_i·k_j for the keys j that query row i of head
// (b, h) sees, leaves the others alone, and returns the largest score (−Inf
// when the row sees no key).
func (n *naiveProblem) scores(b, h, i int, s []float64) float64 {
	row := (b*n.H+h)*n.Nq + i
	qi := n.Q[row*n.D : (row+1)*n.D]
	kvh := h / (n.H / n.Hkv)
	m := math.Inf(-1)
	for j := 0; j < n.Nk; j++ {
		if !n.visible(b, i, j) {
			continue
		}
		kj := n.K[((b*n.Hkv+kvh)*n.Nk+j)*n.D:]
		dot := 0.0
		for c := 0; c < n.D; c++ {
			dot += qi[c] * kj[c]
		}
		s[j] = n.Scale * dot
		m = math.Max(m, s[j])
	}
	return m
}

// rows calls f for every query row (b, h, i), with its flat index row and
// its key-value head kvh, and when the row sees a key, with
// L = log Σ_{visible j} exp(s_ij) and the probabilities p[j] = exp(s_ij − L)
// (stale where j is masked: f skips those). A row that sees no key gets
// L = −Inf.
func (n *naiveProblem) rows(f func(b, i, row, kvh int, L float64, p []float64)) {
	g := n.H / n.Hkv
	s := make([]float64, n.Nk)
	p := make([]float64, n.Nk)
	for b := 0; b < n.B; b++ {
		for h := 0; h < n.H; h++ {
			for i := 0; i < n.Nq; i++ {
				m := n.scores(b, h, i, s)
				L := m
				if !math.IsInf(m, -1) {
					sum := 0.0
					for j := 0; j < n.Nk; j++ {
						if n.visible(b, i, j) {
							sum += math.Exp(s[j] - m)
						}
					}
					L = m + math.Log(sum)
					for j := 0; j < n.Nk; j++ {
						if n.visible(b, i, j) {
							p[j] = math.Exp(s[j] - L)
						}
					}
				}
				f(b, i, (b*n.H+h)*n.Nq+i, h/g, L, p)
			}
		}
	}
}

// forward returns o [B,H,Nq,D] and L [B,H,Nq] by the textbook formulas:
// L_i = log Σ_{visible j} exp(s_ij), o_i = Σ_j exp(s_ij − L_i)·v_j, and
// o_i = 0, L_i = −Inf for a row with no visible key.
func (n *naiveProblem) forward() (o, lse []float64) {
	o = make([]float64, n.B*n.H*n.Nq*n.D)
	lse = make([]float64, n.B*n.H*n.Nq)
	n.rows(func(b, i, row, kvh int, L float64, p []float64) {
		lse[row] = L
		if math.IsInf(L, -1) {
			return
		}
		oi := o[row*n.D : (row+1)*n.D]
		for j := 0; j < n.Nk; j++ {
			if !n.visible(b, i, j) {
				continue
			}
			vj := n.V[((b*n.Hkv+kvh)*n.Nk+j)*n.D:]
			for c := 0; c < n.D; c++ {
				oi[c] += p[j] * vj[c]
			}
		}
	})
	return o, lse
}

// backward returns dq, dk, dv for upstream gradients do [B,H,Nq,D] and dl
// [B,H,Nq] (nil for none), by the chain rule through the full row of
// probabilities: with P_ij = softmax_j(s_ij),
// dv_j = Σ_i P_ij do_i, dP_ij = do_i·v_j, dS_ij = P_ij (dP_ij − Σ_j' P_ij' dP_ij') + P_ij dl_i,
// dq_i = Scale Σ_j dS_ij k_j, dk_j = Scale Σ_i dS_ij q_i.
func (n *naiveProblem) backward(do, dl []float64) (dq, dk, dv []float64) {
	dq = make([]float64, len(n.Q))
	dk = make([]float64, len(n.K))
	dv = make([]float64, len(n.V))
	dp := make([]float64, n.Nk)
	n.rows(func(b, i, row, kvh int, L float64, p []float64) {
		if math.IsInf(L, -1) {
			return
		}
		qi := n.Q[row*n.D : (row+1)*n.D]
		doi := do[row*n.D : (row+1)*n.D]
		pdp := 0.0
		for j := 0; j < n.Nk; j++ {
			if !n.visible(b, i, j) {
				continue
			}
			vj := n.V[((b*n.Hkv+kvh)*n.Nk+j)*n.D:]
			dot := 0.0
			for c := 0; c < n.D; c++ {
				dot += doi[c] * vj[c]
			}
			dp[j] = dot
			pdp += p[j] * dot
		}
		dli := 0.0
		if dl != nil {
			dli = dl[row]
		}
		for j := 0; j < n.Nk; j++ {
			if !n.visible(b, i, j) {
				continue
			}
			ds := p[j]*(dp[j]-pdp) + p[j]*dli
			base := ((b*n.Hkv+kvh)*n.Nk + j) * n.D
			for c := 0; c < n.D; c++ {
				dv[base+c] += p[j] * doi[c]
				dq[row*n.D+c] += n.Scale * ds * n.K[base+c]
				dk[base+c] += n.Scale * ds * qi[c]
			}
		}
	})
	return dq, dk, dv
}
