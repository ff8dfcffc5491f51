package gemm

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"

	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// TestGemmDepth runs depth-split products (small C, long depth: weight
// gradients), in one block of C or, at more cores, a grid of them
// (260×300 in two parts: 2×2, 4×2 and 8×2 blocks at 3, 8 and 16 cores in
// float32, 2×2, 2×4 and 4×4 in float64; column blocks of whole strips, the
// last with an edge), and products it leaves to Gemm, against the float64
// reference (within the error bound of a chain per depth block), and
// checks that they give the same bits at GOMAXPROCS 1, 3, 8 and 16. The
// matrices have padded rows (the parts are added to C a row at a time),
// and the last two sizes also unpadded ones (in spans of rows). Widths 96
// and 144 with A transposed run on the 8×48 tile where it is in use
// (kernel.exact; 61 rows: an edge of 5).
func TestGemmDepth(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	sizes := [][4]int{{64, 96, 2048, 3}, {50, 40, 1100, 3}, {7, 33, 1500, 3}, {1, 1, 1024, 3}, {256, 256, 1030, 3}, {300, 300, 1100, 3}, {260, 300, 1100, 3}, {61, 144, 1100, 3}, {256, 96, 4096, 1}, {64, 96, 2048, 0}, {260, 300, 1100, 0}}
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

// testDepth runs GemmDepth on s = (m, n, k, row padding).
func testDepth[T Float](t *testing.T, rng *rand.Rand, tA, tB bool, s [4]int) {
	p := newProblem[T](rng, tA, tB, s[0], s[1], s[2], s[3], 1, 0)
	p.chain = true
	want, mag := p.reference()
	var first []T
	for i, procs := range []int{1, 3, 8, 16} {
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

// TestDepthGrid checks the split of examples/gpt's weight gradients
// (xᵀ·g over 4096 tokens, C [In, Out]; the small model's MLP over 2048) at
// 1, 2 and 16 cores: the parts are
// those of the shape alone; every block holds at least two strips on a
// side that is cut and at least depthBlockMin entries; and there are at
// least as many units (part, block) as cores, so that none is idle (with
// C cut into strips over 16 cores, the 256×96 head gradient gave 43
// one-strip chunks, each reading all of the packed g).
func TestDepthGrid(t *testing.T) {
	for _, s := range [][3]int{{256, 768, 4096}, {256, 1024, 4096}, {1024, 256, 4096}, {256, 256, 4096}, {256, 96, 4096}, {64, 256, 2048}, {256, 64, 2048}} {
		m, n, k := s[0], s[1], s[2]
		kn := nnFor[float32]().forGradient(true, n) // GemmDepth's kernel
		mr, nr := kn.mr, kn.nr
		parts := DepthParts[float32](m, n, k)
		if parts < 2 {
			t.Errorf("%d×%d over %d: %d depth parts", m, n, k, parts)
			continue
		}
		for _, workers := range []int{1, 2, 16} {
			br, bc := depthGrid(mr, nr, m, n, parts, workers)
			rs, cs := (m+mr-1)/mr, (n+nr-1)/nr
			t.Logf("%d×%d over %d, %d cores: %d parts × %d×%d blocks of %d×%d", m, n, k, workers, parts, br, bc, m/br, n/bc)
			if br > 1 && rs/br < 2 || bc > 1 && cs/bc < 2 {
				t.Errorf("%d×%d, %d cores: blocks of %d row strips and %d column strips", m, n, workers, rs/br, cs/bc)
			}
			if br*bc > 1 && (m/br)*(n/bc) < depthBlockMin {
				t.Errorf("%d×%d, %d cores: blocks of %d×%d entries", m, n, workers, m/br, n/bc)
			}
			if parts*br*bc < workers {
				t.Errorf("%d×%d, %d cores: %d units", m, n, workers, parts*br*bc)
			}
		}
	}
}

// TestExactInUse requires nn's float32 kernel on an AVX-512 machine to run
// the 96-wide head gradient xᵀ·g on a tile that divides 96 (kernel.exact:
// its speed, not its results, depends on it), and a product of 96 columns
// with A not transposed, or of a width the tile divides, on the tile in
// use.
func TestExactInUse(t *testing.T) {
	if isa.Get() != isa.AVX512 {
		t.Skip("no AVX-512")
	}
	kn := nnFor[float32]()
	if x := kn.forGradient(true, 96); 96%x.nr != 0 {
		t.Fatalf("xᵀ·g of 96 columns runs on a %d×%d tile", x.mr, x.nr)
	}
	for _, c := range []struct {
		tA bool
		n  int
	}{{false, 96}, {true, 256}, {true, 768}} {
		if x := kn.forGradient(c.tA, c.n); x.mr != kn.mr || x.nr != kn.nr {
			t.Errorf("tA=%t, %d columns: a %d×%d tile, want %d×%d", c.tA, c.n, x.mr, x.nr, kn.mr, kn.nr)
		}
	}
}
