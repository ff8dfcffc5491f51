package attention

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/flashgorgon/flashgorgon/internal/kernels/gemm"
)

// TestGemmPrefix checks gemmPrefix (not transposed, as the forward's O +=
// P·V calls it) against float64: c_r = c0_r + alpha·Σ_{l<n[r]} a[r,l]·b_l
// with a's entries past n[r] zero, on staircases of row lengths (a causal
// diagonal from 1 or from 0, steps of several keys, all equal), with b's
// rows finite and with a NaN or an Inf in a row of b that only later rows
// see (which must not reach the rows that do not see it), in float32
// within 2⁻¹⁹ of the row's Σ|a·b| and in float64 within 1e-12.
func TestGemmPrefix(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, m := range []int{1, 5, 6, 13, 64, 128} {
		for _, nc := range []int{16, 64, 128} {
			for _, kind := range []string{"diag1", "diag0", "steps", "equal"} {
				for _, poison := range []float64{0, math.NaN(), math.Inf(1)} {
					name := fmt.Sprintf("m%d_nc%d_%s_%v", m, nc, kind, poison)
					testGemmPrefix[float32](t, rng, name, m, nc, kind, poison, 0x1p-19)
					testGemmPrefix[float64](t, rng, name, m, nc, kind, poison, 1e-12)
				}
			}
		}
	}
}

func testGemmPrefix[T Float](t *testing.T, rng *rand.Rand, name string, m, nc int, kind string, poison float64, tol float64) {
	n := make([]int, m)
	for r := range n {
		switch kind {
		case "diag1":
			n[r] = r + 1
		case "diag0":
			n[r] = r
		case "steps":
			n[r] = 3 + r/4*5
		case "equal":
			n[r] = m
		}
	}
	k := n[m-1]
	const pad = 3
	lda, ldb, ldc := k+pad, nc+pad, nc+pad
	a := convert[T](randn(rng, m*lda))
	for r := range m {
		for l := n[r]; l < lda; l++ {
			a[r*lda+l] = 0 // the forward's P past a row's keys
		}
	}
	b := convert[T](randn(rng, max(k, 1)*ldb))
	poisoned := -1
	if poison != 0 && n[0] < k {
		poisoned = n[0] + (k-n[0])/2 // seen by the rows with n[r] > poisoned only
		b[poisoned*ldb+nc/2] = T(poison)
	}
	c0 := convert[T](randn(rng, m*ldc))
	c := append([]T(nil), c0...)
	const alpha = 0.75
	var w gemm.Workspace[T]
	var pb prefixBuf[T]
	gemmPrefix(&w, &pb, false, m, nc, n, alpha, a, lda, b, ldb, false, c, ldc)
	for r := range m {
		for j := range nc {
			want, mag := float64(c0[r*ldc+j]), math.Abs(float64(c0[r*ldc+j]))
			for l := range n[r] {
				x := alpha * float64(a[r*lda+l]) * float64(b[l*ldb+j])
				want += x
				mag += math.Abs(x)
			}
			got := float64(c[r*ldc+j])
			if math.IsNaN(want) || math.IsInf(want, 0) {
				if !math.IsNaN(got) && !math.IsInf(got, 0) {
					t.Errorf("%s: c[%d,%d] = %v, want %v", name, r, j, got, want)
				}
				continue
			}
			if !(math.Abs(got-want) <= tol*mag) {
				t.Errorf("%s: c[%d,%d] = %v, want %v (row sees %d keys, poisoned key %d)", name, r, j, got, want, n[r], poisoned)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}
