package softmax

import (
	"fmt"
	"math"
)

// The independent reference: plain float64 loops with math.Exp and math.Log
// over each row, found by walking the full multi-index of the shape, with
// the edge semantics spelled out case by case rather than falling out of
// the arithmetic as in the kernels.

// refRow returns softmax, log-softmax and log-sum-exp of one row.
func refRow(x []float64) (p, logp []float64, lse float64) {
	p, logp = make([]float64, len(x)), make([]float64, len(x))
	poisoned, m := false, math.Inf(-1)
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 1) {
			poisoned = true
		} else if v > m {
			m = v
		}
	}
	switch {
	case poisoned: // NaN or +Inf: the whole row is NaN
		for i := range x {
			p[i], logp[i] = math.NaN(), math.NaN()
		}
		return p, logp, math.NaN()
	case math.IsInf(m, -1): // only −Inf (or empty): zeros, −Inf
		for i := range x {
			logp[i] = math.Inf(-1)
		}
		return p, logp, math.Inf(-1)
	}
	sum := 0.0
	for _, v := range x {
		sum += math.Exp(v - m)
	}
	for i, v := range x {
		p[i] = math.Exp(v-m) / sum
		logp[i] = v - m - math.Log(sum)
	}
	return p, logp, m + math.Log(sum)
}

// refRowGrad returns the gradients of the three ops for one row with
// upstream gradient dy (a row for softmax and log-softmax, g for
// log-sum-exp), by the Jacobians written out:
//
//	softmax      ∂p_k/∂x_i = p_k(δ_ki − p_i)    dx_i = Σ_k dy_k p_k(δ_ki − p_i)
//	log-softmax  ∂logp_k/∂x_i = δ_ki − p_i       dx_i = Σ_k dy_k(δ_ki − p_i)
//	log-sum-exp  ∂lse/∂x_i = p_i                 dx_i = g·p_i
//
// A row of only −Inf has zero gradients; a NaN or +Inf makes them NaN.
func refRowGrad(x, dy []float64, g float64) (dsm, dlsm, dlse []float64) {
	p, _, lse := refRow(x)
	n := len(x)
	dsm, dlsm, dlse = make([]float64, n), make([]float64, n), make([]float64, n)
	if math.IsInf(lse, -1) {
		return
	}
	for i := range n {
		for k := range n {
			delta := 0.0
			if k == i {
				delta = 1
			}
			dsm[i] += dy[k] * p[k] * (delta - p[i])
			dlsm[i] += dy[k] * (delta - p[i])
		}
		dlse[i] = g * p[i]
	}
	return
}

// rows calls f for every row of a tensor of the given shape along axis,
// with the flat indices of the row's elements and the flat index of the
// row in the reduced tensor (shape without axis, row-major).
func rows(shape []int, axis int, f func(idx []int, reduced int)) {
	stride := make([]int, len(shape))
	s := 1
	for d := len(shape) - 1; d >= 0; d-- {
		stride[d] = s
		s *= shape[d]
	}
	// Odometer over every dimension but axis.
	var others []int
	for d := range shape {
		if d != axis {
			others = append(others, d)
		}
	}
	pos := make([]int, len(shape))
	for reduced := 0; ; reduced++ {
		idx := make([]int, shape[axis])
		base := 0
		for _, d := range others {
			base += pos[d] * stride[d]
		}
		for i := range idx {
			idx[i] = base + i*stride[axis]
		}
		f(idx, reduced)
		// advance the last of the other dimensions first (row-major)
		k := len(others) - 1
		for ; k >= 0; k-- {
			d := others[k]
			pos[d]++
			if pos[d] < shape[d] {
				break
			}
			pos[d] = 0
		}
		if k < 0 {
			return
		}
	}
}

// reference computes k's forward output for x of the given shape along
// axis (axis already normalized).
func reference(k kind, x []float64, shape []int, axis int) []float64 {
	var out []float64
	if k == kindLogSumExp {
		out = make([]float64, len(x)/max(1, shape[axis]))
	} else {
		out = make([]float64, len(x))
	}
	rows(shape, axis, func(idx []int, r int) {
		row := gather(x, idx)
		p, logp, lse := refRow(row)
		if k == kindLogSumExp {
			out[r] = lse
		} else {
			scatter(out, idx, pick(k, p, logp, nil))
		}
	})
	return out
}

// pick returns the one of the family's three results that k computes.
func pick[T any](k kind, softmax, logSoftmax, logSumExp T) T {
	switch k {
	case kindSoftmax:
		return softmax
	case kindLogSoftmax:
		return logSoftmax
	}
	return logSumExp
}

// referenceGrad computes the gradient of Σ dy∘k(x) with respect to x.
func referenceGrad(k kind, x, dy []float64, shape []int, axis int) []float64 {
	dx := make([]float64, len(x))
	rows(shape, axis, func(idx []int, r int) {
		row := gather(x, idx)
		var dyr []float64
		g := 0.0
		if k == kindLogSumExp {
			g = dy[r]
			dyr = make([]float64, len(row))
		} else {
			dyr = gather(dy, idx)
		}
		dsm, dlsm, dlse := refRowGrad(row, dyr, g)
		scatter(dx, idx, pick(k, dsm, dlsm, dlse))
	})
	return dx
}

func gather(x []float64, idx []int) []float64 {
	r := make([]float64, len(idx))
	for i, j := range idx {
		r[i] = x[j]
	}
	return r
}

func scatter(dst []float64, idx []int, v []float64) {
	for i, j := range idx {
		dst[j] = v[i]
	}
}

// compare reports the first entry where got and want differ by more than
// atol + rtol·|want|; NaN matches only NaN and ±Inf only itself.
func compare[T ~float32 | ~float64](got []T, want []float64, rtol, atol float64) error {
	return compareScaled(got, want, nil, rtol, atol)
}

// compareScaled is compare with scale[i] added to |want[i]| (scale nil: 0).
func compareScaled[T ~float32 | ~float64](got []T, want, scale []float64, rtol, atol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d values, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := float64(got[i])
		s := 0.0
		if scale != nil {
			s = scale[i]
		}
		switch {
		case math.IsNaN(w) || math.IsNaN(g):
			if math.IsNaN(w) != math.IsNaN(g) {
				return fmt.Errorf("[%d] = %v, want %v", i, g, w)
			}
		case math.IsInf(w, 0) || math.IsInf(g, 0):
			if g != w {
				return fmt.Errorf("[%d] = %v, want %v", i, g, w)
			}
		case math.Abs(g-w) > atol+rtol*(math.Abs(w)+s):
			return fmt.Errorf("[%d] = %v, want %v (diff %.3g, row scale %.3g)", i, g, w, math.Abs(g-w), s)
		}
	}
	return nil
}
