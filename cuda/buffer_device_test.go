package cuda

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
)

// Helpers of the device tests on Buffers: values travel as float64 slices and are rounded to
// the buffer's type on the way up, so the float64 references see exactly the inputs the
// kernels see.

var dtypes = []DType{Float32, Float64}

// devBuf uploads x, rounded to dt, to a new Buffer freed at the end of the test.
func devBuf(t testing.TB, dt DType, x []float64) *Buffer {
	t.Helper()
	b, err := Alloc(dt, len(x))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free() })
	if err := b.Upload(toType(x, dt == Float64)); err != nil {
		t.Fatal(err)
	}
	return b
}

// devInts uploads x to a new Int32 Buffer.
func devInts(t testing.TB, x []int32) *Buffer {
	t.Helper()
	b, err := Alloc(Int32, len(x))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free() })
	if err := b.Upload(x); err != nil {
		t.Fatal(err)
	}
	return b
}

// devOut allocates an uninitialized Buffer (NaN-poisoned by the tests' TestMain).
func devOut(t testing.TB, dt DType, n int) *Buffer {
	t.Helper()
	b, err := Alloc(dt, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free() })
	return b
}

// host downloads b as float64.
func host(t testing.TB, b *Buffer) []float64 {
	t.Helper()
	x := zeros(b.Len(), b.DType() == Float64)
	if err := b.Download(x); err != nil {
		t.Fatal(err)
	}
	return as64(x)
}

// rounded returns x rounded to dt, as float64.
func rounded(x []float64, dt DType) []float64 { return as64(toType(x, dt == Float64)) }

func tol(dt DType) float64 { return tolerance(dt == Float64) }

func TestBufferDevice(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(1))
	for _, dt := range dtypes {
		t.Run(dt.String(), func(t *testing.T) {
			x := rounded(randn(rng, 1025, 1), dt)
			b := devBuf(t, dt, x)
			compare(t, "round trip", host(t, b), x, 0)
			c := devOut(t, dt, 1025)
			if err := Copy(c, b); err != nil {
				t.Fatal(err)
			}
			compare(t, "copy", host(t, c), x, 0)
			// A view copies a part: c[100:110] = b[5:15].
			vb, err := b.View(5, 10)
			if err != nil {
				t.Fatal(err)
			}
			vc, err := c.View(100, 10)
			if err != nil {
				t.Fatal(err)
			}
			if err := Copy(vc, vb); err != nil {
				t.Fatal(err)
			}
			want := append([]float64(nil), x...)
			copy(want[100:110], x[5:15])
			compare(t, "view copy", host(t, c), want, 0)
			if err := vc.Zero(); err != nil {
				t.Fatal(err)
			}
			clear(want[100:110])
			compare(t, "zeroed view", host(t, c), want, 0)
			if err := Copy(vb, b.mustView(t, 10, 10)); err == nil || !strings.Contains(err.Error(), "overlap") {
				t.Errorf("overlapping copy: %v, want an error", err)
			}
		})
	}
	t.Run("int32", func(t *testing.T) {
		x := []int32{-3, 0, 7, math.MaxInt32, math.MinInt32}
		b := devInts(t, x)
		got := make([]int32, len(x))
		if err := b.Download(got); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(x) {
			t.Errorf("int32 round trip: %v, want %v", got, x)
		}
	})
	t.Run("free", func(t *testing.T) {
		b, err := Alloc(Float32, 10)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Free(); err != nil {
			t.Fatal(err)
		}
		if err := b.Free(); err == nil {
			t.Errorf("double free: no error")
		}
		if err := b.Upload(make([]float32, 10)); err == nil || !strings.Contains(err.Error(), "freed") {
			t.Errorf("upload after free: %v, want an error saying it was freed", err)
		}
		e, err := Alloc(Float64, 0)
		if err != nil || e.Len() != 0 {
			t.Fatalf("empty buffer: %v, %v", e, err)
		}
		if err := e.Upload([]float64{}); err != nil {
			t.Errorf("empty upload: %v", err)
		}
		if err := e.Free(); err != nil {
			t.Errorf("empty free: %v", err)
		}
	})
	t.Run("out of memory", func(t *testing.T) {
		_, err := Alloc(Float64, 1<<40)
		var ce *Error
		if !errors.As(err, &ce) || ce.Name != "CUDA_ERROR_OUT_OF_MEMORY" || !strings.Contains(err.Error(), "Alloc(float64, 1099511627776)") {
			t.Errorf("8 TiB: %v, want CUDA_ERROR_OUT_OF_MEMORY naming the request", err)
		}
	})
}

func (b *Buffer) mustView(t testing.TB, off, n int) *Buffer {
	t.Helper()
	v, err := b.View(off, n)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// ---- GEMM ------------------------------------------------------------------------------------

// refGemm computes the row-major product GemmParams describes, in float64, for batch i.
func refGemm(p GemmParams, a, b, c []float64) []float64 {
	out := append([]float64(nil), c...)
	for bi := 0; bi < max(p.Batch, 1); bi++ {
		for i := 0; i < p.M; i++ {
			for j := 0; j < p.N; j++ {
				s := 0.0
				for k := 0; k < p.K; k++ {
					var av, bv float64
					if p.TransA {
						av = a[bi*p.StrideA+k*p.LdA+i]
					} else {
						av = a[bi*p.StrideA+i*p.LdA+k]
					}
					if p.TransB {
						bv = b[bi*p.StrideB+j*p.LdB+k]
					} else {
						bv = b[bi*p.StrideB+k*p.LdB+j]
					}
					s += av * bv
				}
				at := bi*p.StrideC + i*p.LdC + j
				if p.Beta == 0 {
					out[at] = p.Alpha * s
				} else {
					out[at] = p.Alpha*s + p.Beta*c[at]
				}
			}
		}
	}
	return out
}

func TestGemmDevice(t *testing.T) {
	needDevice(t)
	if err := BLAS(); err != nil {
		t.Fatalf("no cuBLAS on a machine with a device: %v", err)
	}
	lib, ver, err := BLASVersion()
	t.Logf("cuBLAS: %s version %d (%v)", lib, ver, err)
	rng := rand.New(rand.NewSource(2))
	type gc struct {
		ta, tb    bool
		m, n, k   int
		pad       int // added to every leading dimension
		alpha     float64
		beta      float64
		batch     int
		tailBatch int // extra elements between batches
	}
	cases := []gc{
		{false, false, 1, 1, 1, 0, 1, 0, 1, 0},
		{false, false, 17, 33, 129, 0, 1, 0, 1, 0},
		{true, false, 17, 33, 129, 0, 1, 0, 1, 0},
		{false, true, 17, 33, 129, 0, 1, 0, 1, 0},
		{true, true, 17, 33, 129, 0, 1, 0, 1, 0},
		{false, false, 64, 48, 32, 3, 0.5, 2, 1, 0},
		{true, true, 31, 7, 300, 5, -1.5, 0.25, 1, 0},
		{false, false, 127, 129, 1, 0, 1, 1, 1, 0},
		{false, true, 16, 24, 40, 0, 1, 0, 3, 0},
		{true, false, 9, 11, 13, 2, 2, 0.5, 4, 7},
		{false, false, 5, 6, 0, 0, 1, 2, 1, 0}, // K = 0: C = beta·C
	}
	for _, dt := range dtypes {
		for _, c := range cases {
			name := fmt.Sprintf("%v/tA=%t/tB=%t/M=%d/N=%d/K=%d/pad=%d/beta=%g/batch=%d", dt, c.ta, c.tb, c.m, c.n, c.k, c.pad, c.beta, c.batch)
			t.Run(name, func(t *testing.T) {
				ar, ac := storedShape(c.ta, c.m, c.k)
				br, bc := storedShape(c.tb, c.k, c.n)
				p := GemmParams{TransA: c.ta, TransB: c.tb, M: c.m, N: c.n, K: c.k, Alpha: c.alpha, Beta: c.beta, Batch: c.batch,
					LdA: max(ac, 1) + c.pad, LdB: max(bc, 1) + c.pad, LdC: c.n + c.pad}
				p.StrideA, p.StrideB, p.StrideC = ar*p.LdA+c.tailBatch, br*p.LdB+c.tailBatch, c.m*p.LdC+c.tailBatch
				a := rounded(randn(rng, max(c.batch*p.StrideA, 1), 1), dt)
				b := rounded(randn(rng, max(c.batch*p.StrideB, 1), 1), dt)
				cv := rounded(randn(rng, c.batch*p.StrideC, 1), dt)
				want := refGemm(p, a, b, cv) // padding and gaps keep their values
				p.A, p.B, p.C = devBuf(t, dt, a), devBuf(t, dt, b), devBuf(t, dt, cv)
				if err := Gemm(p); err != nil {
					t.Fatal(err)
				}
				scale := math.Sqrt(float64(max(c.k, 1)))
				compare(t, "C", host(t, p.C), want, tol(dt)*scale)
			})
		}
	}
	// Beta = 0 must ignore C's contents, NaN included.
	t.Run("beta0-nan", func(t *testing.T) {
		p := GemmParams{M: 3, N: 4, K: 5, Alpha: 1, LdA: 5, LdB: 4, LdC: 4}
		a, b := randn(rng, 15, 1), randn(rng, 20, 1)
		c := make([]float64, 12)
		for i := range c {
			c[i] = math.NaN()
		}
		want := refGemm(p, a, b, make([]float64, 12))
		p.A, p.B, p.C = devBuf(t, Float64, a), devBuf(t, Float64, b), devBuf(t, Float64, c)
		if err := Gemm(p); err != nil {
			t.Fatal(err)
		}
		compare(t, "C", host(t, p.C), want, 1e-12)
	})
}

// TestGemmFloat32Precision checks that float32 products are computed in float32 (the math
// mode is pinned: no TF32 unless asked), and that TF32 is used when asked: at K = 4096 a
// float32 product errs by about 1e-6 relative to the largest entry, a TF32 one by about 1e-3.
func TestGemmFloat32Precision(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(3))
	const m, n, k = 64, 64, 4096
	a, b := rounded(randn(rng, m*k, 1), Float32), rounded(randn(rng, k*n, 1), Float32)
	want := refGemm(GemmParams{M: m, N: n, K: k, Alpha: 1, LdA: k, LdB: n, LdC: n}, a, b, make([]float64, m*n))
	errOf := func(tf32 bool) float64 {
		p := GemmParams{M: m, N: n, K: k, Alpha: 1, A: devBuf(t, Float32, a), B: devBuf(t, Float32, b), C: devOut(t, Float32, m*n), TF32: tf32}
		if err := Gemm(p); err != nil {
			t.Fatal(err)
		}
		got, worst, big := host(t, p.C), 0.0, 0.0
		for i := range got {
			worst = math.Max(worst, math.Abs(got[i]-want[i]))
			big = math.Max(big, math.Abs(want[i]))
		}
		return worst / big
	}
	e32, etf := errOf(false), errOf(true)
	e32again := errOf(false) // TF32 was switched off again after the call that asked for it
	t.Logf("relative error at K=%d: float32 %.3g, TF32 %.3g, float32 after TF32 %.3g", k, e32, etf, e32again)
	if e32 > 2e-5 || e32again > 2e-5 {
		t.Errorf("float32 product error %.3g (%.3g after a TF32 call): want float32 accuracy (< 2e-5)", e32, e32again)
	}
	if etf < 5*e32 {
		t.Errorf("TF32 product error %.3g is not larger than float32's %.3g: TF32 not in use", etf, e32)
	}
}

// BenchmarkSgemm times C = A·B at 4096³ in float32 (and TF32) on device buffers; the metric
// is TFLOP/s (2·M·N·K per product).
func BenchmarkSgemm(b *testing.B) {
	if !Enabled() {
		b.Skip("no device")
	}
	for _, tf32 := range []bool{false, true} {
		b.Run(fmt.Sprintf("4096/tf32=%t", tf32), func(b *testing.B) {
			const n = 4096
			p := GemmParams{M: n, N: n, K: n, Alpha: 1, A: devOut(b, Float32, n*n), B: devOut(b, Float32, n*n), C: devOut(b, Float32, n*n), TF32: tf32}
			for _, x := range []*Buffer{p.A, p.B} {
				if err := x.Zero(); err != nil {
					b.Fatal(err)
				}
			}
			benchDevice(b, func() error { return Gemm(p) }, 2*float64(n)*n*n, 0)
		})
	}
}

// benchDevice times f (which launches work) b.N times after a warm-up, waiting for the device
// at the end, and reports TFLOP/s (flops per call) and/or GB/s (bytes per call).
func benchDevice(b *testing.B, f func() error, flops, bytes float64) {
	if err := f(); err != nil {
		b.Fatal(err)
	}
	if err := Synchronize(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	if err := Synchronize(); err != nil {
		b.Fatal(err)
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	if flops > 0 {
		b.ReportMetric(flops/sec/1e12, "TFLOP/s")
	}
	if bytes > 0 {
		b.ReportMetric(bytes/sec/1e9, "GB/s")
	}
}
