package cuda

import (
	"math"
	"math/rand"
)

// Float64 references, written as the plainest loops over the definitions (no online softmax,
// no tiling), for the device tests to compare the kernels with. Which keys a row sees is
// attnspec's rule (tested there against its definition): comparing the kernels with these
// references is what checks common.cuh's fg_key_limit, the rule's device copy.

// eachQueryRow calls f for every query row (b, h, i) of p, in order, with its flat index
// row = (b·H+h)·Nq+i, the offset kv = (b·Hkv + h/G)·Nk·D of its key/value head's rows, and
// lim: the row sees keys j < lim (attnspec's rule).
func eachQueryRow(p *AttentionParams, f func(row, kv, lim int)) {
	vis := p.problem()
	G := p.H / p.Hkv
	for b := 0; b < p.B; b++ {
		for h := 0; h < p.H; h++ {
			for i := 0; i < p.Nq; i++ {
				f((b*p.H+h)*p.Nq+i, (b*p.Hkv+h/G)*p.Nk*p.D, vis.KeyLimit(b, i))
			}
		}
	}
}

// refAttention returns O [B,H,Nq,D] and L [B,H,Nq] for p's sizes and options from float64 q, k,
// v: s_ij = Scale·q_i·k_j, L_i = log Σ_j exp(s_ij), O_i = Σ_j exp(s_ij − L_i) v_j over the
// visible keys; O = 0 and L = −Inf for rows without one. Sums use the row maximum as shift.
func refAttention(p *AttentionParams, q, k, v []float64) (o, l []float64) {
	D := p.D
	o = make([]float64, p.B*p.H*p.Nq*D)
	l = make([]float64, p.B*p.H*p.Nq)
	s := make([]float64, p.Nk)
	eachQueryRow(p, func(row, kv, lim int) {
		if lim == 0 {
			l[row] = math.Inf(-1)
			return
		}
		mx := math.Inf(-1)
		for j := 0; j < lim; j++ {
			dot := 0.0
			for c := 0; c < D; c++ {
				dot += q[row*D+c] * k[kv+j*D+c]
			}
			s[j] = p.Scale * dot
			mx = math.Max(mx, s[j])
		}
		sum := 0.0
		for j := 0; j < lim; j++ {
			sum += math.Exp(s[j] - mx)
		}
		l[row] = mx + math.Log(sum)
		for j := 0; j < lim; j++ {
			pj := math.Exp(s[j] - l[row])
			for c := 0; c < D; c++ {
				o[row*D+c] += pj * v[kv+j*D+c]
			}
		}
	})
	return o, l
}

// refAttentionBackward returns dQ, dK, dV of the loss whose gradients with respect to O and L
// are do and dl (dl may be nil), by the chain rule through P_ij = exp(s_ij − L_i):
// dP_ij = do_i·v_j, dS_ij = P_ij (dP_ij − Σ_k P_ik dP_ik + dl_i), dQ_i = Scale Σ_j dS_ij k_j,
// dK_j = Scale Σ_i dS_ij q_i, dV_j = Σ_i P_ij do_i. The row term is summed from P and dP
// directly, not from O.
func refAttentionBackward(p *AttentionParams, q, k, v, do, dl []float64) (dq, dk, dv []float64) {
	D := p.D
	_, l := refAttention(p, q, k, v)
	dq = make([]float64, len(q))
	dk = make([]float64, len(k))
	dv = make([]float64, len(v))
	pr := make([]float64, p.Nk)
	dp := make([]float64, p.Nk)
	eachQueryRow(p, func(row, kv, lim int) {
		rowTerm := 0.0
		for j := 0; j < lim; j++ {
			dot, dpj := 0.0, 0.0
			for c := 0; c < D; c++ {
				dot += q[row*D+c] * k[kv+j*D+c]
				dpj += do[row*D+c] * v[kv+j*D+c]
			}
			pr[j] = math.Exp(p.Scale*dot - l[row])
			dp[j] = dpj
			rowTerm += pr[j] * dpj
		}
		if dl != nil {
			rowTerm -= dl[row]
		}
		for j := 0; j < lim; j++ {
			ds := pr[j] * (dp[j] - rowTerm)
			for c := 0; c < D; c++ {
				dq[row*D+c] += p.Scale * ds * k[kv+j*D+c]
				dk[kv+j*D+c] += p.Scale * ds * q[row*D+c]
				dv[kv+j*D+c] += pr[j] * do[row*D+c]
			}
		}
	})
	return dq, dk, dv
}

// refSoftmax returns the forward of kind on x viewed as [outer, n, inner], by the three-loop
// definition (maximum, sum, normalize) in float64. Edge cases as ops/softmax: a row of only
// −Inf gives 0 (softmax) or −Inf; +Inf in a row gives NaN throughout.
func refSoftmax(kind SoftmaxKind, x []float64, outer, n, inner int) []float64 {
	ySize := outer * n * inner
	if kind == LogSumExp {
		ySize = outer * inner
	}
	y := make([]float64, ySize)
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			at := func(i int) int { return o*n*inner + i*inner + j }
			mx := math.Inf(-1)
			for i := 0; i < n; i++ {
				mx = math.Max(mx, x[at(i)])
			}
			sum := 0.0
			for i := 0; i < n; i++ {
				if !math.IsInf(mx, 0) {
					sum += math.Exp(x[at(i)] - mx)
				}
			}
			lse := mx + math.Log(sum)
			switch {
			case math.IsInf(mx, 1) || math.IsNaN(mx):
				lse = math.NaN()
			case math.IsInf(mx, -1) || n == 0:
				lse = math.Inf(-1)
			}
			if kind == LogSumExp {
				y[o*inner+j] = lse
				continue
			}
			for i := 0; i < n; i++ {
				switch {
				case math.IsNaN(lse):
					y[at(i)] = math.NaN()
				case math.IsInf(lse, -1):
					if kind == Softmax {
						y[at(i)] = 0
					} else {
						y[at(i)] = math.Inf(-1)
					}
				case kind == Softmax:
					y[at(i)] = math.Exp(x[at(i)] - lse)
				default:
					y[at(i)] = x[at(i)] - lse
				}
			}
		}
	}
	return y
}

// refSoftmaxBackward returns dx = Jᵀdy for the forward of kind at x, with the Jacobian of the
// definitions: softmax ∂y_k/∂x_i = y_k(δ_ki − y_i), log-softmax ∂y_k/∂x_i = δ_ki − softmax_i,
// log-sum-exp ∂y/∂x_i = softmax_i; rows without mass (only −Inf) get 0.
func refSoftmaxBackward(kind SoftmaxKind, x, dy []float64, outer, n, inner int) []float64 {
	sm := refSoftmax(Softmax, x, outer, n, inner)
	dx := make([]float64, len(x))
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			at := func(i int) int { return o*n*inner + i*inner + j }
			massless := true
			for i := 0; i < n; i++ {
				massless = massless && math.IsInf(x[at(i)], -1)
			}
			if massless {
				continue // dx stays 0
			}
			for i := 0; i < n; i++ {
				g := 0.0
				switch kind {
				case Softmax:
					for kk := 0; kk < n; kk++ {
						delta := 0.0
						if kk == i {
							delta = 1
						}
						g += dy[at(kk)] * sm[at(kk)] * (delta - sm[at(i)])
					}
				case LogSoftmax:
					for kk := 0; kk < n; kk++ {
						delta := 0.0
						if kk == i {
							delta = 1
						}
						g += dy[at(kk)] * (delta - sm[at(i)])
					}
				case LogSumExp:
					g = dy[o*inner+j] * sm[at(i)]
				}
				dx[at(i)] = g
			}
		}
	}
	return dx
}

func randn(rng *rand.Rand, n int, scale float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = scale * rng.NormFloat64()
	}
	return x
}
