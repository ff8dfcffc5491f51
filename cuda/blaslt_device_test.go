package cuda

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestGemmBiasDevice checks C = op(A)·op(B) + bias against a float64 loop: every transpose,
// sizes from 1 to a linear layer of a GPT, K = 0 (C = bias), float32 and float64, twice per
// problem with the same bits (the algorithm cuBLASLt picks is the same for the same problem),
// and float32 computed in float32 (at K = 4096 a TF32 product would err by about 1e-3).
func TestGemmBiasDevice(t *testing.T) {
	needDevice(t)
	if err := BLAS(); err != nil {
		t.Fatalf("no cuBLAS on a machine with a device: %v", err)
	}
	if err := loadLt(); err != nil {
		t.Logf("%v: GemmBias runs as a cuBLAS product and Affine", err)
	} else {
		t.Logf("cuBLASLt: %s", ltLib)
	}
	rng := rand.New(rand.NewSource(31))
	for _, dt := range dtypes {
		for _, c := range []struct {
			ta, tb  bool
			m, n, k int
		}{
			{false, false, 1, 1, 1},
			{false, false, 17, 33, 129},
			{true, false, 17, 33, 129},
			{false, true, 17, 33, 129},
			{true, true, 31, 7, 300},
			{false, false, 5, 6, 0},
			{false, false, 4096, 768, 256},
			{false, false, 64, 64, 4096},
		} {
			t.Run(fmt.Sprintf("%v/tA=%t/tB=%t/M=%d/N=%d/K=%d", dt, c.ta, c.tb, c.m, c.n, c.k), func(t *testing.T) {
				a := rounded(randn(rng, max(c.m*c.k, 1), 1), dt)
				b := rounded(randn(rng, max(c.k*c.n, 1), 1), dt)
				bias := rounded(randn(rng, c.n, 1), dt)
				ref := GemmParams{TransA: c.ta, TransB: c.tb, M: c.m, N: c.n, K: c.k, Alpha: 1,
					LdA: max(pickCols(c.ta, c.m, c.k), 1), LdB: max(pickCols(c.tb, c.k, c.n), 1), LdC: c.n}
				want := refGemm(ref, a, b, make([]float64, c.m*c.n))
				for i := 0; i < c.m; i++ {
					for j := 0; j < c.n; j++ {
						want[i*c.n+j] += bias[j]
					}
				}
				p := GemmBiasParams{TransA: c.ta, TransB: c.tb, M: c.m, N: c.n, K: c.k,
					A: devBuf(t, dt, a), B: devBuf(t, dt, b), Bias: devBuf(t, dt, bias), C: devOut(t, dt, c.m*c.n)}
				if err := GemmBias(p); err != nil {
					t.Fatal(err)
				}
				got := host(t, p.C)
				// float32: the error of a float32 dot product of length K, well below TF32's.
				e := compare(t, "C", got, want, tol(dt)*math.Sqrt(float64(max(c.k, 1))))
				if dt == Float32 && c.k == 4096 && e > 2e-5 {
					t.Errorf("float32 product error %.3g: want float32 accuracy (< 2e-5), not TF32's", e)
				}
				if err := GemmBias(p); err != nil {
					t.Fatal(err)
				}
				for i, v := range host(t, p.C) {
					if v != got[i] {
						t.Fatalf("second run: C[%d] = %v, first run %v", i, v, got[i])
					}
				}
			})
		}
	}
	// Where cuBLASLt loaded, every product above ran on it: no call failed and switched it off.
	var off bool
	if err := run("test", func(*state) error { off = lt.off; return nil }); err != nil {
		t.Fatal(err)
	}
	if loadLt() == nil && off {
		t.Errorf("a cuBLASLt call failed and switched it off (the log says why)")
	}
	t.Run("errors", func(t *testing.T) {
		a, b, c := devOut(t, Float32, 6), devOut(t, Float32, 6), devOut(t, Float32, 4)
		for _, p := range []GemmBiasParams{
			{M: 2, N: 2, K: 3, A: a, B: b, C: c},                              // no bias
			{M: 2, N: 2, K: 3, A: a, B: b, Bias: devOut(t, Float32, 3), C: c}, // bias of 3
			{M: 2, N: 2, K: 3, A: a, B: b, Bias: devOut(t, Float64, 2), C: c}, // bias float64
			{M: 2, N: 3, K: 3, A: a, B: b, Bias: devOut(t, Float32, 3), C: c}, // C too short
		} {
			if err := GemmBias(p); err == nil {
				t.Errorf("M=%d N=%d K=%d bias %v: no error", p.M, p.N, p.K, p.Bias)
			}
		}
	})
}

// pickCols returns the columns of the stored [rows, cols] operand of a product, transposed
// when trans.
func pickCols(trans bool, rows, cols int) int {
	if trans {
		return rows
	}
	return cols
}
