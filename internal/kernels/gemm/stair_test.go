package gemm

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// TestGemmChainStair checks GemmChainStair against float64 sums over each
// row's own depth k+i, on every variant: A stored both ways, depths 1 to
// the largest, one and two column strips, alpha and beta of 1 and not,
// beta = 0 over a C of NaN. The entries of op(A) a row does not sum hold
// NaN, and for each row i0 the rows of B from k+i0 on hold NaN or +Inf:
// rows up to i0 must still match. It also requires the stair kernel to run
// (ok) where the variant's kernel has one, and to decline where it has
// none.
func TestGemmChainStair(t *testing.T) {
	forEachVariant(t, func(t *testing.T) {
		t.Run("float32", func(t *testing.T) { testStair[float32](t, []int{64, 128}) })
		t.Run("float64", func(t *testing.T) { testStair[float64](t, []int{32, 64}) })
	})
}

func testStair[T Float](t *testing.T, widths []int) {
	rng := rand.New(rand.NewSource(7))
	// The variant in use runs the stair where its chained kernel has one
	// (TestStairInUse requires it of AVX-512's default).
	want := chainFor[T]().stair != nil
	for _, n := range widths {
		if HasStair[T](n) != want {
			t.Fatalf("HasStair(%d) = %v, want %v", n, !want, want)
		}
	}
	var w Workspace[T]
	const rows = StairRows
	for _, n := range widths {
		for _, k := range []int{1, 2, 5, 17, 64, stairMaxDepth - rows + 1} {
			for _, tA := range []bool{false, true} {
				for _, ab := range [][2]T{{1, 1}, {0.5, 0}, {-1.25, 0.75}} {
					alpha, beta := ab[0], ab[1]
					depth := k + rows - 1
					for poison := -1; poison < rows; poison++ {
						name := fmt.Sprintf("n%d/k%d/tA%v/a%v/b%v/poison%d", n, k, tA, alpha, beta, poison)
						p := newProblem[T](rng, tA, false, rows, n, depth, 3, alpha, beta)
						// The entries of op(A) row i does not sum: NaN.
						for i := 0; i < rows; i++ {
							for l := k + i; l < depth; l++ {
								p.a[stairAt(tA, p.lda, i, l)] = T(math.NaN())
							}
						}
						ref, mag := stairReference(p, k)
						check := rows
						if poison >= 0 { // B's rows from k+poison on: NaN, +Inf
							for l := k + poison; l < depth; l++ {
								for j := 0; j < n; j++ {
									p.b[l*p.ldb+j] = T(math.NaN())
									if j%2 == 1 {
										p.b[l*p.ldb+j] = T(math.Inf(1))
									}
								}
							}
							check = poison + 1
						}
						ok, err := w.GemmChainStair(tA, n, k, alpha, p.a, p.lda, p.b, p.ldb, beta, p.c, p.ldc)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						if ok != want {
							t.Fatalf("%s: ok = %v, want %v", name, ok, want)
						}
						if !ok {
							continue
						}
						for i := 0; i < check; i++ {
							tol := errorBound(k+i, true) * unitRoundoff[T]()
							for j := 0; j < n; j++ {
								got, w := float64(p.c[i*p.ldc+j]), ref[i*n+j]
								if !(math.Abs(got-w) <= tol*mag[i*n+j]+1e-300) {
									t.Fatalf("%s: C[%d,%d] = %.9g, want %.9g (bound %.3g)", name, i, j, got, w, tol*mag[i*n+j])
								}
							}
						}
					}
				}
			}
		}
	}
	// Declines: k = 0, a depth past one block, a width no tile divides.
	for _, c := range [][2]int{{0, widths[0]}, {stairMaxDepth - rows + 2, widths[0]}, {3, widths[0] + 1}} {
		k, n := c[0], c[1]
		p := newProblem[T](rng, false, false, rows, n, k+rows-1, 0, 1, 1)
		if ok, err := w.GemmChainStair(false, n, k, 1, p.a, p.lda, p.b, p.ldb, 1, p.c, p.ldc); ok || err != nil {
			t.Fatalf("k %d, n %d: ok %v, err %v: want a decline", k, n, ok, err)
		}
	}
}

// stairAt is the index of op(A)[i, l] in a stored A of stride lda.
func stairAt(tA bool, lda, i, l int) int {
	if tA {
		return l*lda + i
	}
	return i*lda + l
}

// stairReference returns alpha·Σ_{l<k+i} op(A)[i,l]·B[l,j] + beta·C[i,j]
// in float64 and the magnitude |alpha|·Σ|A||B| + |beta·C| it is bounded by.
func stairReference[T Float](p *problem[T], k int) (want, mag []float64) {
	want, mag = make([]float64, p.m*p.n), make([]float64, p.m*p.n)
	for i := 0; i < p.m; i++ {
		for j := 0; j < p.n; j++ {
			var s, g float64
			for l := 0; l < k+i; l++ {
				x := float64(p.a[stairAt(p.tA, p.lda, i, l)]) * float64(p.b[l*p.ldb+j])
				s += x
				g += math.Abs(x)
			}
			s, g = float64(p.alpha)*s, math.Abs(float64(p.alpha))*g
			if p.beta != 0 {
				cv := float64(p.beta) * float64(p.c[i*p.ldc+j])
				s += cv
				g += math.Abs(cv)
			}
			want[i*p.n+j], mag[i*p.n+j] = s, g
		}
	}
	return want, mag
}

// TestStairInUse requires the kernels in use on an AVX-512 machine to have
// their stair kernels: GemmChainStair runs there (ops/attention's causal
// diagonal depends on it for its speed, not its results).
func TestStairInUse(t *testing.T) {
	if isa.Get() != isa.AVX512 {
		t.Skip("no AVX-512")
	}
	if chainFor[float32]().stair == nil || chainFor[float64]().stair == nil {
		t.Fatal("the AVX-512 kernels in use have no stair kernel")
	}
}
