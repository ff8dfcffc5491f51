package gemm

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"
)

// sgemm is a float32 product with Gemm's arguments.
type sgemm = func(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) error

// accuracyOf measures the float32 error of C = op(A)·op(B) for m×n×k with
// entries drawn by draw: the RMS over the entries of
// |C − C₆₄| / Σ_p |a_ip·b_pj|, in units of u = 2⁻²⁴, where C₆₄ is a
// float64 loop; for the product gemm (Gemm's arguments, at the level in
// force), gonum's Sgemm, and a loop with one float32 FMA chain per entry.
func accuracyOf(gemm sgemm, rng *rand.Rand, tB bool, m, n, k int, draw func() float32) (ours, gonum, chain float64) {
	a := make([]float32, m*k)
	b := make([]float32, k*n)
	for i := range a {
		a[i] = draw()
	}
	for i := range b {
		b[i] = draw()
	}
	ldb := n
	bAt := func(p, j int) float32 { return b[p*n+j] }
	if tB {
		ldb = k
		bAt = func(p, j int) float32 { return b[j*k+p] }
	}
	ref, mag := make([]float64, m*n), make([]float64, m*n)
	single := make([]float32, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, g float64
			var c float32
			for p := 0; p < k; p++ {
				av, bv := a[i*k+p], bAt(p, j)
				s += float64(av) * float64(bv)
				g += math.Abs(float64(av) * float64(bv))
				c = float32(math.FMA(float64(av), float64(bv), float64(c)))
			}
			ref[i*n+j], mag[i*n+j], single[i*n+j] = s, g, c
		}
	}
	rms := func(c []float32) float64 {
		var e float64
		for i, v := range c {
			d := (float64(v) - ref[i]) / mag[i]
			e += d * d
		}
		return math.Sqrt(e/float64(len(c))) / 0x1p-24
	}
	c := make([]float32, m*n)
	if err := gemm(false, tB, m, n, k, 1, a, k, b, ldb, 0, c, n); err != nil {
		panic(err)
	}
	ours = rms(c)
	blas32.Implementation().Sgemm(trans(false), trans(tB), m, n, k, 1, a, k, b, ldb, 0, c, n)
	return ours, rms(c), rms(single)
}

// TestAccuracy is the float32 error rule: at every depth from 8 to 4096,
// on tiles (64×64, where gonum runs one dot product or axpy chain per row)
// and larger products (128×128, where gonum chains 64-deep blocks), A·B and
// A·Bᵀ, with entries of random sign (normal) and of one sign (uniform), the
// RMS error of this package must not exceed gonum's Sgemm's by more than
// accuracyMargin. The single float32 chain is shown for comparison.
func TestAccuracy(t *testing.T) {
	depths := []int{8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}
	if testing.Short() {
		depths = []int{8, 64, 300}
	}
	forEachVariant(t, func(t *testing.T) {
		accuracySweep(t, Gemm[float32], []int{64, 128}, depths, false,
			"float32 RMS error / u, relative to Σ|a·b| per entry; worst ratio to gonum")
	})
}

const accuracyMargin = 1.02

// TestAccuracyChain is the float32 error of nn's products (GemmDepth,
// GemmBias: a chain per depth block, depth blocks chained through C,
// depth parts added): at every depth of TestAccuracy, on its data and
// shapes, the RMS error must not exceed that of one float32 FMA chain per
// entry along the whole depth by more than accuracyMargin (it is that
// chain up to k = 256, the deepest block, and shorter chains beyond).
// gonum's error is shown for comparison.
func TestAccuracyChain(t *testing.T) {
	depths, sizes := []int{8, 64, 256, 300, 1024, 4096}, []int{64, 128}
	if testing.Short() {
		depths, sizes = []int{300, 1024}, []int{64}
	}
	depth := func(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) error {
		if alpha != 1 || beta != 0 {
			panic("GemmDepth has alpha 1 and beta 0")
		}
		return GemmDepth(tA, tB, m, n, k, a, lda, b, ldb, c, ldc)
	}
	forEachVariant(t, func(t *testing.T) {
		accuracySweep(t, depth, sizes, depths, true,
			"float32 RMS error / u of GemmDepth, relative to Σ|a·b| per entry; worst ratio to one chain")
	})
}

// accuracySweep measures gemm's float32 RMS error (accuracyOf) on entries of random sign
// (normal) and of one sign (uniform), A·B and A·Bᵀ, m = n in sizes, every k in depths, and
// fails t where it exceeds accuracyMargin times the reference's: one float32 FMA chain's
// (vsChain) or gonum's Sgemm's. The table goes to the log after title and the worst ratio.
func accuracySweep(t *testing.T, gemm sgemm, sizes, depths []int, vsChain bool, title string) {
	t.Helper()
	refName := "gonum's"
	if vsChain {
		refName = "one chain's"
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-8s %4s %5s %5s %8s %8s %8s %6s\n", "data", "tB", "m=n", "k", "ours", "gonum", "1-chain", "ratio")
	worst := 0.0
	for _, dist := range []string{"normal", "uniform"} {
		for _, tB := range []bool{true, false} {
			for _, mn := range sizes {
				for _, k := range depths {
					rng := rand.New(rand.NewSource(int64(k*mn) + 7))
					draw := func() float32 { return float32(rng.NormFloat64()) }
					if dist == "uniform" {
						draw = func() float32 { return rng.Float32() }
					}
					o, g, c := accuracyOf(gemm, rng, tB, mn, mn, k, draw)
					ref := g
					if vsChain {
						ref = c
					}
					fmt.Fprintf(&table, "%-8s %4t %5d %5d %8.3f %8.3f %8.3f %6.2f\n", dist, tB, mn, k, o, g, c, o/ref)
					worst = max(worst, o/ref)
					if o > accuracyMargin*ref {
						t.Errorf("%s tB=%t %d×%d×%d: RMS error %.3g u, %s %.3g u (ratio %.2f > %.2f)", dist, tB, mn, mn, k, o, refName, ref, o/ref, accuracyMargin)
					}
				}
			}
		}
	}
	t.Logf("%s %.2f\n%s", title, worst, table.String())
}
