package gemm

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gonum.org/v1/gonum/blas"
	gonum "gonum.org/v1/gonum/blas/gonum"
)

// naive computes alpha·op(A)·op(B) + beta·C in float64, straight from the
// definition.
func naive(tA, tB bool, m, n, k int, alpha float64, a []float32, lda int, b []float32, ldb int, beta float64, c []float32, ldc int) []float64 {
	out := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			for p := 0; p < k; p++ {
				var av, bv float32
				if tA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if tB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += float64(av) * float64(bv)
			}
			v := alpha * s
			if beta != 0 {
				v += beta * float64(c[i*ldc+j])
			}
			out[i*n+j] = v
		}
	}
	return out
}

func randF32(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

func TestSgemm(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	shapes := [][3]int{{1, 1, 1}, {6, 16, 1}, {7, 17, 3}, {5, 15, 300}, {48, 128, 256}, {50, 130, 257}, {97, 33, 513}, {3, 200, 64}, {130, 7, 9}}
	for _, s := range shapes {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, ab := range [][2]float32{{1, 0}, {0.5, 1}, {-2, 0.25}} {
					m, n, k := s[0], s[1], s[2]
					alpha, beta := ab[0], ab[1]
					pad := 3 // row strides larger than the rows
					lda := k + pad
					ar, ac := m, k
					if tA {
						lda, ar, ac = m+pad, k, m
					}
					ldb := n + pad
					br := k
					if tB {
						ldb, br = k+pad, n
					}
					_ = ac
					a, b := randF32(rng, ar*lda), randF32(rng, br*ldb)
					ldc := n + pad
					c := randF32(rng, m*ldc)
					if beta == 0 {
						for i := range c {
							c[i] = float32(math.NaN()) // must not leak through beta = 0
						}
					}
					want := naive(tA, tB, m, n, k, float64(alpha), a, lda, b, ldb, float64(beta), c, ldc)
					Sgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
					tol := 1e-5 * math.Sqrt(float64(k)) * 4
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							got, w := float64(c[i*ldc+j]), want[i*n+j]
							if !(math.Abs(got-w) <= tol*(1+math.Abs(w))) {
								t.Fatalf("m=%d n=%d k=%d tA=%t tB=%t alpha=%g beta=%g: C[%d,%d] = %g, want %g", m, n, k, tA, tB, alpha, beta, i, j, got, w)
							}
						}
						for j := n; j < ldc; j++ { // the padding of C is not touched
							if beta == 0 && !math.IsNaN(float64(c[i*ldc+j])) {
								t.Fatalf("padding C[%d,%d] written", i, j)
							}
						}
					}
				}
			}
		}
	}
}

// TestKernelsAgree checks the assembly micro-kernel against the Go one.
func TestKernelsAgree(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2/FMA kernel on this machine or build")
	}
	rng := rand.New(rand.NewSource(2))
	for _, depth := range []int{1, 2, 7, 256} {
		a, b := randF32(rng, mr*depth), randF32(rng, nr*depth)
		c1 := randF32(rng, mr*20)
		c2 := append([]float32(nil), c1...)
		micro(depth, a, b, c1, 20)
		microGo(depth, a, b, c2, 20)
		for i := range c1 {
			if d := math.Abs(float64(c1[i] - c2[i])); d > 1e-4*(1+math.Abs(float64(c2[i]))) {
				t.Fatalf("depth %d: entry %d: asm %g, Go %g", depth, i, c1[i], c2[i])
			}
		}
	}
}

func TestSgemmBadArgs(t *testing.T) {
	for _, f := range []func(){
		func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 3), 2, make([]float32, 4), 2, 0, make([]float32, 4), 2)
		},
		func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 4), 1, make([]float32, 4), 2, 0, make([]float32, 4), 2)
		},
		func() { Sgemm(false, false, -1, 2, 2, 1, nil, 2, nil, 2, 0, nil, 2) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("bad arguments did not panic")
				}
			}()
			f()
		}()
	}
}

// BenchmarkSgemm compares this package with gonum's Sgemm on the shapes of a
// width-128 transformer layer over 2048 tokens (forward x·W, and the two
// gradient products).
func BenchmarkSgemm(b *testing.B) {
	rng := rand.New(rand.NewSource(3))
	for _, s := range []struct {
		name    string
		tA, tB  bool
		m, n, k int
	}{
		{"xW", false, false, 2048, 512, 128},
		{"gWt", false, true, 2048, 128, 512},
		{"xtg", true, false, 128, 512, 2048},
	} {
		ar, ac := s.m, s.k
		if s.tA {
			ar, ac = s.k, s.m
		}
		br, bc := s.k, s.n
		if s.tB {
			br, bc = s.n, s.k
		}
		a, bb, c := randF32(rng, ar*ac), randF32(rng, br*bc), make([]float32, s.m*s.n)
		flops := float64(2 * s.m * s.n * s.k)
		b.Run(fmt.Sprintf("%s/gemm", s.name), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, ac, bb, bc, 0, c, s.n)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(fmt.Sprintf("%s/gonum", s.name), func(b *testing.B) {
			tA, tB := blas.NoTrans, blas.NoTrans
			if s.tA {
				tA = blas.Trans
			}
			if s.tB {
				tB = blas.Trans
			}
			for i := 0; i < b.N; i++ {
				gonum.Implementation{}.Sgemm(tA, tB, s.m, s.n, s.k, 1, a, ac, bb, bc, 0, c, s.n)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
