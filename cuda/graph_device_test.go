package cuda

import (
	"math"
	"math/rand"
	"strings"
	"testing"
)

// upload copies x (rounded to b's type) into b.
func upload(t *testing.T, b *Buffer, x []float64) {
	t.Helper()
	if err := b.Upload(toType(x, b.DType() == Float64)); err != nil {
		t.Fatal(err)
	}
}

// TestCaptureReplay records a memset, an elementwise launch, a cuBLAS product and the
// scheduled AdamW with the gradient norm, checks that recording ran nothing, then replays the
// recording with new inputs and a new learning rate written into the same buffers before each
// replay, against float64 loops; a NaN gradient makes the replayed AdamW change nothing.
func TestCaptureReplay(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(40))
	const n, M, N, K = 1000, 33, 17, 65
	x, y, z := devOut(t, Float32, n), devOut(t, Float32, n), devOut(t, Float32, n)
	a, b, c := devOut(t, Float32, M*K), devOut(t, Float32, K*N), devOut(t, Float32, M*N)
	const np = 3000 // two blocks of the group's launch
	w, g, m, v := devOut(t, Float32, np), devOut(t, Float32, np), devOut(t, Float32, np), devOut(t, Float32, np)
	for _, s := range []*Buffer{m, v} {
		if err := s.Zero(); err != nil {
			t.Fatal(err)
		}
	}
	grp, err := NewParamGroup([]*Buffer{w}, []*Buffer{g}, []*Buffer{m}, []*Buffer{v}, []bool{true})
	if err != nil {
		t.Fatal(err)
	}
	defer grp.Free()
	norm, work, sched := devOut(t, Float64, 1), devOut(t, Float64, grp.Workspace()), devOut(t, Float64, 3)
	const b1, b2, eps, wd = 0.9, 0.99, 1e-8, 0.1

	wv := rounded(randn(rng, np, 1), Float32)
	upload(t, w, wv)
	ones := make([]float64, n)
	for i := range ones {
		ones[i] = 7
	}
	upload(t, y, ones)
	upload(t, z, ones)
	graph, err := Capture(func() error {
		if err := z.Zero(); err != nil {
			return err
		}
		if err := Add(y, x, x); err != nil {
			return err
		}
		if err := Gemm(GemmParams{M: M, N: N, K: K, Alpha: 1, A: a, B: b, C: c}); err != nil {
			return err
		}
		if err := grp.GradNorm(norm, work); err != nil {
			return err
		}
		return grp.AdamWScheduled(sched, b1, b2, eps, wd, norm, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer graph.Free()
	compare(t, "y after recording (nothing ran)", host(t, y), ones, 0)
	compare(t, "z after recording (nothing ran)", host(t, z), ones, 0)

	mv, vv := make([]float64, np), make([]float64, np)
	for step := 1; step <= 3; step++ {
		xv := rounded(randn(rng, n, 1), Float32)
		av, bv := rounded(randn(rng, M*K, 1), Float32), rounded(randn(rng, K*N, 1), Float32)
		gv := rounded(randn(rng, np, 0.1), Float32)
		if step == 3 {
			gv[1234] = math.NaN()
		}
		lr := 0.01 / float64(step)
		upload(t, x, xv)
		upload(t, a, av)
		upload(t, b, bv)
		upload(t, g, gv)
		upload(t, z, ones)
		s := AdamWSchedule(lr, b1, b2, step)
		if err := sched.Upload(s[:]); err != nil {
			t.Fatal(err)
		}
		if err := graph.Launch(); err != nil {
			t.Fatal(err)
		}
		yv := make([]float64, n)
		for i := range yv {
			yv[i] = 2 * xv[i]
		}
		compare(t, "y = x + x", host(t, y), yv, 0)
		compare(t, "z zeroed", host(t, z), make([]float64, n), 0)
		cv := make([]float64, M*N)
		for i := 0; i < M; i++ {
			for j := 0; j < N; j++ {
				var sum float64
				for k := 0; k < K; k++ {
					sum += av[i*K+k] * bv[k*N+j]
				}
				cv[i*N+j] = sum
			}
		}
		compare(t, "c = a·b", host(t, c), cv, 1e-5)
		if step == 3 {
			compare(t, "w after a NaN gradient (AdamW skipped)", host(t, w), wv, 0)
			continue
		}
		c1, c2 := 1-math.Pow(b1, float64(step)), 1-math.Pow(b2, float64(step))
		for j := range wv {
			mi := b1*mv[j] + (1-b1)*gv[j]
			vi := b2*vv[j] + (1-b2)*gv[j]*gv[j]
			wv[j] = wv[j]*(1-lr*wd) - lr*(mi/c1)/(math.Sqrt(vi/c2)+eps)
			mv[j], vv[j] = mi, vi
		}
		wv, mv, vv = rounded(wv, Float32), rounded(mv, Float32), rounded(vv, Float32)
		compare(t, "w after a replayed AdamW", host(t, w), wv, 1e-6)
	}
}

// TestCaptureRefusesCopies: a host copy while recording fails the recording with an error
// (the machine then launches the step's kernels one by one), and the device works after it.
func TestCaptureRefusesCopies(t *testing.T) {
	needDevice(t)
	x, y := devOut(t, Float32, 8), devOut(t, Float32, 8)
	xv := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	_, err := Capture(func() error {
		if err := Add(y, x, x); err != nil {
			return err
		}
		return x.Upload(toType(xv, false))
	})
	if err == nil {
		t.Fatal("a recording with an upload in it succeeded")
	}
	t.Logf("the refusal: %v", err)
	upload(t, x, xv)
	if err := Add(y, x, x); err != nil {
		t.Fatal(err)
	}
	want := make([]float64, len(xv))
	for i := range want {
		want[i] = 2 * xv[i]
	}
	compare(t, "y = x + x after a failed recording", host(t, y), want, 0)
	if _, err := Capture(func() error {
		_, err := Capture(func() error { return nil })
		return err
	}); err == nil || !strings.Contains(err.Error(), "while recording") {
		t.Errorf("a recording inside a recording: %v", err)
	}
}
