package gemm

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"
)

// TestGemmDepth runs depth-split products (small C, long depth: weight
// gradients), in one block of C or, at more cores, a grid of them
// (260×300: 4×2 blocks at 8 cores, 1×2 at 3, column blocks of 2 and 3
// strips, the last with an edge), and products it leaves to Gemm, against
// the float64 reference (within the error bound of a chain per depth
// block), and checks that they give the same bits at any GOMAXPROCS.
func TestGemmDepth(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	sizes := [][3]int{{64, 96, 2048}, {50, 40, 1100}, {7, 33, 1500}, {1, 1, 1024}, {256, 256, 1030}, {300, 300, 1100}, {260, 300, 1100}}
	if testing.Short() {
		sizes = sizes[:4]
	}
	rng := rand.New(rand.NewSource(3))
	for _, s := range sizes {
		for _, tr := range [][2]bool{{true, false}, {false, false}, {false, true}, {true, true}} {
			name := fmt.Sprintf("%v/tA=%t/tB=%t/parts=%d", s, tr[0], tr[1], DepthParts[float32](s[0], s[1], s[2]))
			t.Run(name+"/float32", func(t *testing.T) { testDepth[float32](t, rng, tr[0], tr[1], s) })
			t.Run(name+"/float64", func(t *testing.T) { testDepth[float64](t, rng, tr[0], tr[1], s) })
		}
	}
}

func testDepth[T Float](t *testing.T, rng *rand.Rand, tA, tB bool, s [3]int) {
	p := newProblem[T](rng, tA, tB, s[0], s[1], s[2], 3, 1, 0)
	p.chain = true
	want, mag := p.reference()
	var first []T
	for i, procs := range []int{1, 3, 8} {
		runtime.GOMAXPROCS(procs)
		if err := GemmDepth(p.tA, p.tB, p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, p.c, p.ldc); err != nil {
			t.Fatal(err)
		}
		p.verify(t, want, mag)
		if i == 0 {
			first = append([]T(nil), p.c...)
			continue
		}
		for j := range first {
			if p.c[j] != first[j] && !(p.c[j] != p.c[j] && first[j] != first[j]) { // NaN padding
				t.Fatalf("GOMAXPROCS=%d: C[%d] = %v, with 1 core %v", procs, j, p.c[j], first[j])
			}
		}
	}
}
