package gemm

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"
)

// TestGemmBias checks C = op(A)·op(B) + bias against the float64 reference
// (GemmDepth's error bound plus the addition's rounding) and bit for bit
// against GemmDepth followed by adding the bias, for products split by rows, by
// columns and on one core, at GOMAXPROCS 1 and 4; 300×1024×64 adds the
// bias block of rows by block of rows (gemmPacked's row blocks of 60),
// 540×520×768 after all of a chunk's rows (two blocks of columns).
func TestGemmBias(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewSource(4))
	sizes := [][3]int{{2048, 64, 64}, {203, 61, 150}, {37, 300, 129}, {5, 3, 17}, {300, 1024, 64}, {540, 520, 768}}
	if testing.Short() {
		sizes = sizes[:4]
	}
	for _, s := range sizes {
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}} {
			for _, procs := range []int{1, 4} {
				runtime.GOMAXPROCS(procs)
				t.Run(fmt.Sprintf("%v/%v/procs=%d", s, tr, procs), func(t *testing.T) {
					p := newProblem[float32](rng, tr[0], tr[1], s[0], s[1], s[2], 3, 1, 0)
					p.chain = true
					bias := make([]float32, p.n)
					for i := range bias {
						bias[i] = float32(rng.NormFloat64())
					}
					want, mag := p.reference()
					for i := range want {
						want[i] += float64(bias[i%p.n])
						mag[i] += abs(float64(bias[i%p.n]))
					}
					ref := append([]float32(nil), p.c...)
					if parts := DepthParts[float32](p.m, p.n, p.k); parts != 1 {
						t.Fatalf("GemmDepth cuts the depth in %d parts: not GemmBias's product", parts)
					}
					if err := GemmDepth(p.tA, p.tB, p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, ref, p.ldc); err != nil {
						t.Fatal(err)
					}
					for i := 0; i < p.m; i++ {
						for j := 0; j < p.n; j++ {
							ref[i*p.ldc+j] += bias[j]
						}
					}
					if err := GemmBias(p.tA, p.tB, p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, bias, p.c, p.ldc); err != nil {
						t.Fatal(err)
					}
					p.verify(t, want, mag)
					for i := range ref {
						if ref[i] != p.c[i] && !(ref[i] != ref[i] && p.c[i] != p.c[i]) {
							t.Fatalf("C[%d] = %v, GemmDepth and then the bias: %v", i, p.c[i], ref[i])
						}
					}
				})
			}
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
