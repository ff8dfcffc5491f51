package cuda

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestParamGroupDevice checks the fused optimizer kernels against float64 loops: the global
// gradient norm, clipping and AdamW over parameters of lengths around the 2048-element block
// (and empty ones, first, in the middle and last), one launch each.
func TestParamGroupDevice(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(30))
	lens := []int{0, 1, 2047, 2048, 0, 2049, 100003, 5, 0}
	for _, dt := range dtypes {
		t.Run(dt.String(), func(t *testing.T) {
			var params, grads, ms, vs []*Buffer
			var w, g, m, v [][]float64
			var decay []bool
			ss := 0.0
			for i, n := range lens {
				w = append(w, rounded(randn(rng, n, 1), dt))
				g = append(g, rounded(randn(rng, n, 0.01), dt))
				m, v = append(m, make([]float64, n)), append(v, make([]float64, n))
				for _, x := range g[i] {
					ss += x * x
				}
				params, grads = append(params, devBuf(t, dt, w[i])), append(grads, devBuf(t, dt, g[i]))
				ms, vs = append(ms, devBuf(t, dt, m[i])), append(vs, devBuf(t, dt, v[i]))
				decay = append(decay, i%2 == 0)
			}
			grp, err := NewParamGroup(params, grads, ms, vs, decay)
			if err != nil {
				t.Fatal(err)
			}
			defer grp.Free()
			norm, work := devOut(t, Float64, 1), devOut(t, Float64, grp.Workspace())
			if err := grp.GradNorm(norm, work); err != nil {
				t.Fatal(err)
			}
			nv := host(t, norm)[0]
			compare(t, "norm", []float64{nv}, []float64{math.Sqrt(ss)}, 1e-13)
			maxNorm := nv / 3
			if err := grp.ClipByNorm(norm, maxNorm); err != nil {
				t.Fatal(err)
			}
			for i := range g {
				for j := range g[i] {
					g[i][j] *= maxNorm / nv
				}
				g[i] = rounded(g[i], dt)
				compare(t, fmt.Sprintf("clipped grads[%d]", i), host(t, grads[i]), g[i], 0)
			}
			const lr, b1, b2, eps, wd = 1e-2, 0.9, 0.99, 1e-8, 0.1
			for step := 1; step <= 2; step++ {
				if err := grp.AdamW(lr, b1, b2, eps, wd, step); err != nil {
					t.Fatal(err)
				}
				c1, c2 := 1-math.Pow(b1, float64(step)), 1-math.Pow(b2, float64(step))
				ulp := map[DType]float64{Float32: 1.2e-7, Float64: 4e-16}[dt]
				for i := range w {
					dec := 0.0
					if decay[i] {
						dec = lr * wd
					}
					for j := range w[i] {
						mi := b1*m[i][j] + (1-b1)*g[i][j]
						vi := b2*v[i][j] + (1-b2)*g[i][j]*g[i][j]
						w[i][j] = w[i][j]*(1-dec) - lr*(mi/c1)/(math.Sqrt(vi/c2)+eps)
						m[i][j], v[i][j] = mi, vi
					}
					w[i], m[i], v[i] = rounded(w[i], dt), rounded(m[i], dt), rounded(v[i], dt)
					compare(t, fmt.Sprintf("step %d: params[%d]", step, i), host(t, params[i]), w[i], 8*ulp)
					compare(t, fmt.Sprintf("step %d: m[%d]", step, i), host(t, ms[i]), m[i], 2*ulp)
					compare(t, fmt.Sprintf("step %d: v[%d]", step, i), host(t, vs[i]), v[i], 2*ulp)
				}
			}
		})
	}
}

// BenchmarkOptimizerStep times clip + AdamW over 30 float32 parameters of 110,000 elements
// (3.3M, the larger GPT) with the group's three launches and with one launch per
// parameter and kernel (the difference is the launch overhead), and one tiny launch.
func BenchmarkOptimizerStep(b *testing.B) {
	if !Enabled() {
		b.Skip("no device")
	}
	const np, n = 30, 110000
	var params, grads, ms, vs []*Buffer
	decay := make([]bool, np)
	for i := 0; i < np; i++ {
		for _, l := range []*[]*Buffer{&params, &grads, &ms, &vs} {
			x := devOut(b, Float32, n)
			if err := x.Zero(); err != nil {
				b.Fatal(err)
			}
			*l = append(*l, x)
		}
	}
	grp, err := NewParamGroup(params, grads, ms, vs, decay)
	if err != nil {
		b.Fatal(err)
	}
	defer grp.Free()
	norm, work := devOut(b, Float64, 1), devOut(b, Float64, max(grp.Workspace(), GradNormWorkspace(grads...)))
	step := 0
	b.Run("group", func(b *testing.B) {
		benchDevice(b, func() error {
			step++
			for _, err := range []error{grp.GradNorm(norm, work), grp.ClipByNorm(norm, 1), grp.AdamW(1e-3, 0.9, 0.999, 1e-8, 0.1, step)} {
				if err != nil {
					return err
				}
			}
			return nil
		}, 0, 7*4*np*n)
	})
	b.Run("per-parameter", func(b *testing.B) {
		benchDevice(b, func() error {
			step++
			if err := GradNorm(norm, work, grads...); err != nil {
				return err
			}
			if err := ClipByNorm(norm, 1, grads...); err != nil {
				return err
			}
			for i := range params {
				if err := AdamW(AdamWParams{Param: params[i], Grad: grads[i], M: ms[i], V: vs[i], LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: step}); err != nil {
					return err
				}
			}
			return nil
		}, 0, 7*4*np*n)
	})
	b.Run("one-tiny-launch", func(b *testing.B) {
		x := devOut(b, Float32, 1)
		benchDevice(b, func() error { return Add(x, x, x) }, 0, 0)
	})
}
