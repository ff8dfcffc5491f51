package gemm

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// forEachVariant runs f once per kernel variant of every instruction-set
// level this build and machine support, with the package switched to it.
func forEachVariant(t *testing.T, f func(t *testing.T)) {
	for _, l := range isa.Supported() {
		for _, v := range variants(l) {
			restore := useVariant(v)
			t.Run(v.name, f)
			restore()
		}
	}
}

// problem is one product with its stored operands; padding columns of A, B
// and C (stride beyond the row) hold NaN, so reading them shows in C.
type problem[T Float] struct {
	tA, tB        bool
	chain         bool // summed by GemmDepth or GemmBias: a chain per depth block
	m, n, k       int
	alpha, beta   T
	a, b, c       []T
	lda, ldb, ldc int
}

func newProblem[T Float](rng *rand.Rand, tA, tB bool, m, n, k, pad int, alpha, beta T) *problem[T] {
	p := &problem[T]{tA: tA, tB: tB, m: m, n: n, k: k, alpha: alpha, beta: beta}
	ar, ac := m, k
	if tA {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB {
		br, bc = n, k
	}
	p.lda, p.ldb, p.ldc = ac+pad, bc+pad, n+pad
	p.a = randPadded[T](rng, ar, ac, p.lda)
	p.b = randPadded[T](rng, br, bc, p.ldb)
	p.c = randPadded[T](rng, m, n, p.ldc)
	if beta == 0 { // C must not be read: NaN would show
		for i := range p.c {
			p.c[i] = T(math.NaN())
		}
	}
	return p
}

// randPadded returns a rows×cols matrix of standard normal values at row
// stride ld, the padding NaN; the slice ends right after the last row.
func randPadded[T Float](rng *rand.Rand, rows, cols, ld int) []T {
	if rows == 0 || cols == 0 {
		return nil
	}
	x := make([]T, (rows-1)*ld+cols)
	for i := range x {
		if i%ld < cols {
			x[i] = T(rng.NormFloat64())
		} else {
			x[i] = T(math.NaN())
		}
	}
	return x
}

func (p *problem[T]) at(x []T, ld int, trans bool, i, j int) float64 {
	if trans {
		return float64(x[j*ld+i])
	}
	return float64(x[i*ld+j])
}

// reference returns alpha·op(A)·op(B) + beta·C in float64 from the
// definition, and for each entry the magnitude |alpha|·Σ|a·b| + |beta·c|
// that bounds its rounding error.
func (p *problem[T]) reference() (want, mag []float64) {
	want, mag = make([]float64, p.m*p.n), make([]float64, p.m*p.n)
	for i := 0; i < p.m; i++ {
		for j := 0; j < p.n; j++ {
			var s, sa float64
			for l := 0; l < p.k; l++ {
				v := p.at(p.a, p.lda, p.tA, i, l) * p.at(p.b, p.ldb, p.tB, l, j)
				s += v
				sa += math.Abs(v)
			}
			w, g := float64(p.alpha)*s, math.Abs(float64(p.alpha))*sa
			if p.beta != 0 {
				cv := float64(p.beta) * float64(p.c[i*p.ldc+j])
				w, g = w+cv, g+math.Abs(cv)
			}
			want[i*p.n+j], mag[i*p.n+j] = w, g
		}
	}
	return want, mag
}

// errorBound is the worst-case relative error (in units of the element's
// unit roundoff) of the scheme for depth k: the chunk chain, the chain of
// chunk totals, the chain of depth blocks through C, alpha and beta; with
// chain (GemmDepth, GemmBias), the block's chain, the chain of blocks
// through C and the depth parts' sum.
func errorBound(k int, chain bool) float64 {
	// The larger of the bounds of both block depths (pagedA or not).
	var bound float64
	for _, paged := range []bool{false, true} {
		kc := depthBlock(max(k, 1), paged)
		if chain {
			bound = max(bound, float64(kc+(k+kc-1)/kc+depthMaxParts)+4)
			continue
		}
		kb := chunkSingle(kc) // the longer chains of the two schemes
		bound = max(bound, float64(kb+(kc+kb-1)/kb+(k+kc-1)/kc)+4)
	}
	return bound
}

func unitRoundoff[T Float]() float64 {
	var z T
	if unsafe.Sizeof(z) == 4 {
		return 0x1p-24
	}
	return 0x1p-53
}

// verify compares C after the product with the reference.
func (p *problem[T]) verify(t *testing.T, want, mag []float64) {
	t.Helper()
	if err := p.mismatch(want, mag); err != nil {
		t.Fatal(err)
	}
}

// mismatch returns an error naming the first entry of C farther from the
// reference than the error bound, or a padding entry that was written.
func (p *problem[T]) mismatch(want, mag []float64) error {
	tol := errorBound(p.k, p.chain) * unitRoundoff[T]()
	for i := 0; i < p.m; i++ {
		for j := 0; j < p.ldc && i*p.ldc+j < len(p.c); j++ {
			got := float64(p.c[i*p.ldc+j])
			if j >= p.n {
				if !math.IsNaN(got) { // padding starts as NaN
					return fmt.Errorf("padding C[%d,%d] = %g was written", i, j, got)
				}
				continue
			}
			w, g := want[i*p.n+j], mag[i*p.n+j]
			if !(math.Abs(got-w) <= tol*g+1e-300) {
				return fmt.Errorf("C[%d,%d] = %.9g, want %.9g (error %.3g, bound %.3g)", i, j, got, w, math.Abs(got-w), tol*g)
			}
		}
	}
	return nil
}

// shapes covers the edges of every tile (mr ∈ {4,6,12}, nr ∈ {4,8,16,32,64}),
// last column strips on the narrower kernels of a variant's rows (n mod
// 64 of 32, 16 and 26: whole and recomputed, B packed and read in place),
// depths around the chunk and block lengths, m < mr, n < nr, attention's
// tiles, and B read in place and packed (large B with many rows of C, or
// with long rows); 128×128×128 is attention's tile at d = 128.
var shapes = [][3]int{
	{1, 1, 1}, {1, 40, 3}, {5, 3, 17}, {6, 32, 8}, {7, 33, 9}, {12, 64, 64}, {13, 31, 129},
	{64, 64, 64}, {64, 64, 128}, {17, 100, 257}, {3, 70, 300}, {130, 7, 513}, {100, 40, 20},
	{100, 200, 100}, {20, 600, 120}, {128, 128, 128}, {31, 130, 100},
	{50, 96, 70}, {9, 80, 33}, {12, 90, 40},
}

func testGemm[T Float](t *testing.T, run func(p *problem[T]) error) {
	rng := rand.New(rand.NewSource(1))
	scalars := [][2]T{{1, 0}, {0.5, 1}, {-2, 0.25}}
	for si, s := range shapes {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for ai, ab := range scalars {
					if testing.Short() && ai != si%len(scalars) { // one (alpha, beta) per shape
						continue
					}
					name := fmt.Sprintf("%dx%dx%d/tA=%t/tB=%t/alpha=%g/beta=%g", s[0], s[1], s[2], tA, tB, ab[0], ab[1])
					p := newProblem(rng, tA, tB, s[0], s[1], s[2], 3, ab[0], ab[1])
					want, mag := p.reference()
					if err := run(p); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					t.Run(name, func(t *testing.T) { p.verify(t, want, mag) })
				}
			}
		}
	}
}

func TestGemm(t *testing.T) {
	forEachVariant(t, func(t *testing.T) {
		t.Run("float32", func(t *testing.T) {
			var w Workspace[float32]
			testGemm(t, func(p *problem[float32]) error {
				return w.Gemm(p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc)
			})
		})
		t.Run("float64", func(t *testing.T) {
			var w Workspace[float64]
			testGemm(t, func(p *problem[float64]) error {
				return w.Gemm(p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc)
			})
		})
		// A type defined on float32 runs on float32's kernels.
		type f32 float32
		t.Run("defined", func(t *testing.T) {
			testGemm(t, func(p *problem[f32]) error {
				return Gemm(p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc)
			})
		})
	})
}

// TestGemmChain checks Workspace.GemmChain (one chain per depth block, alpha,
// beta, transposes, edges) against the reference within the chain's error
// bound, on every variant.
func TestGemmChain(t *testing.T) {
	forEachVariant(t, func(t *testing.T) {
		t.Run("float32", func(t *testing.T) {
			var w Workspace[float32]
			testGemm(t, func(p *problem[float32]) error {
				p.chain = true
				return w.GemmChain(p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc)
			})
		})
		t.Run("float64", func(t *testing.T) {
			var w Workspace[float64]
			testGemm(t, func(p *problem[float64]) error {
				p.chain = true
				return w.GemmChain(p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc)
			})
		})
	})
}

// TestGemmParallel runs products large enough to be split over cores, cut
// along rows (m ≥ n) and along columns, against the reference.
func TestGemmParallel(t *testing.T) {
	sizes := [][3]int{{203, 61, 150}, {37, 300, 129}, {256, 256, 64}}
	if testing.Short() {
		sizes = sizes[:2]
	}
	forEachVariant(t, func(t *testing.T) {
		rng := rand.New(rand.NewSource(2))
		for _, s := range sizes {
			for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}} {
				p := newProblem[float32](rng, tr[0], tr[1], s[0], s[1], s[2], 5, 1.5, 0.5)
				q := newProblem[float64](rng, tr[0], tr[1], s[0], s[1], s[2], 5, 1, 0)
				want, mag := p.reference()
				wq, mq := q.reference()
				if err := Gemm(p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc); err != nil {
					t.Fatal(err)
				}
				if err := Gemm(q.tA, q.tB, q.m, q.n, q.k, q.alpha, q.a, q.lda, q.b, q.ldb, q.beta, q.c, q.ldc); err != nil {
					t.Fatal(err)
				}
				t.Run(fmt.Sprintf("%v/%v/float32", s, tr), func(t *testing.T) { p.verify(t, want, mag) })
				t.Run(fmt.Sprintf("%v/%v/float64", s, tr), func(t *testing.T) { q.verify(t, wq, mq) })
			}
		}
	})
}

// TestTransposedAGroups runs products of a transposed A wide enough to be
// packed on variants that pack it (kernel.packAT, packABlock) and tall
// enough to be packed in several groups of strips (aStrips: 240 rows in
// float32 and 120 in float64 at the depth blocks of k = 600), with a last
// strip of 4 rows, on one goroutine, against the reference (on the other
// variants, A read in place in groups of strips).
func TestTransposedAGroups(t *testing.T) {
	forEachVariant(t, func(t *testing.T) {
		rng := rand.New(rand.NewSource(6))
		tBs := []bool{false, true}
		if testing.Short() {
			tBs = tBs[:1]
		}
		for _, tB := range tBs {
			p := newProblem[float32](rng, true, tB, 262, 140, 600, 3, 1.5, 0.5)
			q := newProblem[float64](rng, true, tB, 262, 140, 600, 3, 1, 0)
			want, mag := p.reference()
			wq, mq := q.reference()
			var w Workspace[float32]
			if err := w.Gemm(p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc); err != nil {
				t.Fatal(err)
			}
			var wd Workspace[float64]
			if err := wd.Gemm(q.tA, q.tB, q.m, q.n, q.k, q.alpha, q.a, q.lda, q.b, q.ldb, q.beta, q.c, q.ldc); err != nil {
				t.Fatal(err)
			}
			t.Run(fmt.Sprintf("tB=%t/float32", tB), func(t *testing.T) { p.verify(t, want, mag) })
			t.Run(fmt.Sprintf("tB=%t/float64", tB), func(t *testing.T) { q.verify(t, wq, mq) })
		}
	})
}

// TestPagedA runs products of a transposed A whose rows lie a page or more
// apart (pagedA: depth blocks of 128 where k > 512 would give 256), with
// op(B) packed whole and shared (tB) and read in place, on one goroutine
// (Workspace.Gemm, GemmChain) and split over cores (Gemm, GemmDepth at a
// depth it cuts in parts), against the float64 reference, and the split
// product bit for bit against the one-goroutine one.
func TestPagedA(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewSource(8))
	testPaged[float32](t, rng, 1030, 600)
	if testing.Short() { // the race detector's CI step: the float64 references are slow there
		return
	}
	testPaged[float64](t, rng, 520, 600)
	testPaged[float32](t, rng, 1024, 1100)
}

func testPaged[T Float](t *testing.T, rng *rand.Rand, m, k int) {
	var z T
	size := int(unsafe.Sizeof(z))
	for _, tB := range []bool{false, true} {
		for _, chain := range []bool{false, true} {
			p := newProblem[T](rng, true, tB, m, 70, k, 3, 1.5, 0.5)
			if !pagedA(true, p.lda, size) || depthBlock(k, true) == depthBlock(k, false) {
				t.Fatalf("m=%d k=%d: the problem does not take the paged depth blocks", m, k)
			}
			p.chain = chain
			want, mag := p.reference()
			c0 := append([]T(nil), p.c...)
			var w Workspace[T]
			run := w.Gemm
			if chain {
				run = w.GemmChain
			}
			if err := run(p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc); err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%dx%dx%d/size=%d/tB=%t/chain=%t", m, p.n, k, size, tB, chain)
			t.Run(name+"/serial", func(t *testing.T) { p.verify(t, want, mag) })
			serial := append([]T(nil), p.c...)
			procsList := []int{1, 2, 3}
			if testing.Short() {
				procsList = []int{2}
			}
			for _, procs := range procsList {
				runtime.GOMAXPROCS(procs)
				copy(p.c, c0)
				if chain {
					// GemmDepth: alpha 1, beta 0.
					p.alpha, p.beta = 1, 0
					want, mag = p.reference()
					err := GemmDepth(p.tA, p.tB, p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, p.c, p.ldc)
					if err != nil {
						t.Fatal(err)
					}
					t.Run(fmt.Sprintf("%s/GemmDepth/procs=%d", name, procs), func(t *testing.T) { p.verify(t, want, mag) })
					continue
				}
				if err := Gemm(p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc); err != nil {
					t.Fatal(err)
				}
				t.Run(fmt.Sprintf("%s/Gemm/procs=%d", name, procs), func(t *testing.T) {
					p.verify(t, want, mag)
					for i := range serial {
						if serial[i] != p.c[i] && !(serial[i] != serial[i] && p.c[i] != p.c[i]) {
							t.Fatalf("C[%d] = %v, on one goroutine %v", i, p.c[i], serial[i])
						}
					}
				})
			}
		}
	}
}

// TestRowsParallelBits checks the row-split product (op(B) packed once
// and shared, or read in place; ForDynamic's chunks) against the float64
// reference and bit for bit against the same product on one goroutine
// (Workspace.Gemm), at several GOMAXPROCS (at 1, one chunk of all the rows,
// in blocks of rows that keep C in the cache across depth blocks): shapes
// with op(B) transposed, narrower than a strip, deeper than one depth
// block, columns that are not a multiple of the kernel's, alpha and beta
// not 1 and 0.
func TestRowsParallelBits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	sizes := [][3]int{{700, 100, 600}, {500, 40, 300}, {390, 256, 256}, {300, 20, 1100}}
	if testing.Short() {
		sizes = sizes[:2]
	}
	// The problems and their references, once for all the variants.
	type item struct {
		s         [3]int
		tr        [2]bool
		p         *problem[float32]
		c0        []float32
		want, mag []float64
	}
	var items []item
	rng := rand.New(rand.NewSource(5))
	for _, s := range sizes {
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			p := newProblem[float32](rng, tr[0], tr[1], s[0], s[1], s[2], 3, 1.5, 0.5)
			want, mag := p.reference()
			items = append(items, item{s, tr, p, append([]float32(nil), p.c...), want, mag})
		}
	}
	forEachVariant(t, func(t *testing.T) {
		for _, it := range items {
			s, tr, p, c0, want, mag := it.s, it.tr, it.p, it.c0, it.want, it.mag
			serial := append([]float32(nil), c0...)
			var w Workspace[float32]
			if err := w.Gemm(p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, serial, p.ldc); err != nil {
				t.Fatal(err)
			}
			for _, procs := range []int{1, 2, 3, 16} {
				runtime.GOMAXPROCS(procs)
				t.Run(fmt.Sprintf("%v/%v/procs=%d", s, tr, procs), func(t *testing.T) {
					copy(p.c, c0)
					if err := Gemm(p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc); err != nil {
						t.Fatal(err)
					}
					p.verify(t, want, mag)
					for i := range serial {
						if serial[i] != p.c[i] && !(serial[i] != serial[i] && p.c[i] != p.c[i]) {
							t.Fatalf("C[%d] = %v, on one goroutine %v", i, p.c[i], serial[i])
						}
					}
				})
			}
		}
	})
}

// TestFloat64Exact checks the gradient-check path: float64 products
// (Gemm, GemmDepth, GemmBias) within 1e-12 of the float64 reference,
// relative to Σ|a·b|.
func TestFloat64Exact(t *testing.T) {
	forEachVariant(t, func(t *testing.T) {
		rng := rand.New(rand.NewSource(3))
		for _, s := range [][3]int{{64, 64, 64}, {31, 45, 1025}, {96, 40, 4096}} {
			p := newProblem[float64](rng, false, true, s[0], s[1], s[2], 0, 1, 0)
			want, mag := p.reference()
			// Gemm, and nn's GemmDepth and GemmBias (a chain per depth block).
			zero := make([]float64, p.n)
			for _, f := range []struct {
				name string
				run  func() error
			}{
				{"Gemm", func() error {
					return Gemm(p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc)
				}},
				{"GemmDepth", func() error { return GemmDepth(p.tA, p.tB, p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, p.c, p.ldc) }},
				{"GemmBias", func() error {
					return GemmBias(p.tA, p.tB, p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, zero, p.c, p.ldc)
				}},
			} {
				if err := f.run(); err != nil {
					t.Fatal(err)
				}
				for i, w := range want {
					if d := math.Abs(p.c[i] - w); d > 1e-12*mag[i] {
						t.Fatalf("%s %v: entry %d: %.17g, want %.17g (relative error %.3g)", f.name, s, i, p.c[i], w, d/mag[i])
					}
				}
			}
		}
	})
}

// TestMicroKernels checks each micro-kernel alone: depths around the chunk
// length, A read by rows, by columns and packed, C loaded or not.
func TestMicroKernels(t *testing.T) {
	forEachVariant(t, func(t *testing.T) {
		testMicro(t, kernelFor[float32]())
		testMicro(t, kernelFor[float64]())
	})
}

func testMicro[T float32 | float64](t *testing.T, kn *kernel[T]) {
	for _, x := range kn.narrow {
		testMicro(t, x)
	}
	testMicroRows(t, kn, kn.micro, kn.mr)
	for h := 1; h < kn.mr; h++ {
		if e := kn.edgeKernel(h); e != nil {
			testMicroRows(t, kn, e, h)
		}
	}
}

// testMicroRows checks micro, a kernel of mr rows and kn.nr columns.
func testMicroRows[T float32 | float64](t *testing.T, kn *kernel[T], micro microKernel[T], mr int) {
	rng := rand.New(rand.NewSource(4))
	nr := kn.nr
	for _, k := range []int{1, 2, 7, 8, 9, 16, 17, 64, 100} {
		for _, kb := range []int{1, 3, 8, 16} {
			for _, layout := range []struct{ rs, ps int }{{k + 2, 1}, {1, mr + 1}, {1, mr}} {
				for li, load := range []bool{false, true} {
					// alpha = 1, beta = 1 take the kernels' shortcuts.
					alpha, beta := T(0.75), T(-1.5)
					if (k+kb+li)%2 == 0 {
						alpha, beta = 1, 1
					}
					a := make([]T, (mr-1)*layout.rs+(k-1)*layout.ps+1)
					b := make([]T, (k-1)*(nr+3)+nr)
					c := make([]T, (mr-1)*(nr+5)+nr+5) // C's padding must stay as it is
					for _, x := range [][]T{a, b, c} {
						for i := range x {
							x[i] = T(rng.NormFloat64())
						}
					}
					c0 := append([]T(nil), c...)
					want := make([]float64, mr*nr)
					for i := 0; i < mr; i++ {
						for j := 0; j < nr; j++ {
							var s float64
							for p := 0; p < k; p++ {
								s += float64(a[i*layout.rs+p*layout.ps]) * float64(b[p*(nr+3)+j])
							}
							want[i*nr+j] = float64(alpha) * s
							if load {
								want[i*nr+j] += float64(beta) * float64(c[i*(nr+5)+j])
							}
						}
					}
					micro(k, kb, &a[0], layout.rs, layout.ps, &b[0], nr+3, &c[0], nr+5, alpha, beta, load)
					tol := 1e-5
					if unitRoundoff[T]() < 1e-10 {
						tol = 1e-13
					}
					for i := 0; i < mr; i++ {
						for j := nr; j < nr+5; j++ {
							if c[i*(nr+5)+j] != c0[i*(nr+5)+j] {
								t.Fatalf("%v %d×%d k=%d: padding c[%d,%d] written", kn.level, mr, nr, k, i, j)
							}
						}
						for j := 0; j < nr; j++ {
							if got := float64(c[i*(nr+5)+j]); math.Abs(got-want[i*nr+j]) > tol*(1+math.Abs(want[i*nr+j]))*math.Sqrt(float64(k)) {
								t.Fatalf("%v %d×%d k=%d kb=%d layout=%v load=%t: c[%d,%d] = %g, want %g", kn.level, mr, nr, k, kb, layout, load, i, j, got, want[i*nr+j])
							}
						}
					}
				}
			}
		}
	}
}

// TestPacking checks the packing of op(B) into strips and of op(A) into one
// strip, with each level's SIMD copier and transposer, against reading the
// operands directly.
func TestPacking(t *testing.T) {
	forEachVariant(t, func(t *testing.T) {
		testPacking(t, kernelFor[float32]())
		testPacking(t, kernelFor[float64]())
	})
}

func testPacking[T float32 | float64](t *testing.T, kn *kernel[T]) {
	rng := rand.New(rand.NewSource(6))
	mr, nr := kn.mr, kn.nr
	for _, tr := range []bool{false, true} {
		for _, s := range [][2]int{{1, 1}, {7, 9}, {16, 2 * nr}, {33, 3*nr + 5}, {64, nr - 1}} {
			kcb, ncb := s[0], s[1]
			pc, jc := 3, 2 // an offset into B
			rows, cols := pc+kcb, jc+ncb
			if tr {
				rows, cols = cols, rows
			}
			ld := cols + 1
			b := randPadded[T](rng, rows, cols, ld)
			dst := make([]T, kcb*(ncb+nr-1)/nr*nr)
			packBlock(kn, dst, b, tr, ld, pc, jc, kcb, ncb)
			for p := 0; p < kcb; p++ {
				for j := 0; j < (ncb+nr-1)/nr*nr; j++ {
					want := T(0)
					if j < ncb {
						if tr {
							want = b[(jc+j)*ld+pc+p]
						} else {
							want = b[(pc+p)*ld+jc+j]
						}
					}
					if got := dst[(j/nr)*kcb*nr+p*nr+j%nr]; got != want {
						t.Fatalf("%v packBlock tB=%t kcb=%d ncb=%d: op(B)[%d,%d] packed as %g, want %g", kn.level, tr, kcb, ncb, p, j, got, want)
					}
				}
			}
			for h := 1; h <= mr; h++ {
				i0 := 1
				ar, ac := i0+h, pc+kcb
				if tr {
					ar, ac = ac, ar
				}
				a := randPadded[T](rng, ar, ac, ac+2)
				strip := make([]T, kcb*mr)
				packStrip(kn, strip, a, tr, ac+2, i0, pc, kcb, h)
				for p := 0; p < kcb; p++ {
					for r := 0; r < mr; r++ {
						want := T(0)
						if r < h {
							if tr {
								want = a[(pc+p)*(ac+2)+i0+r]
							} else {
								want = a[(i0+r)*(ac+2)+pc+p]
							}
						}
						if got := strip[p*mr+r]; got != want {
							t.Fatalf("%v packStrip tA=%t kcb=%d h=%d: op(A)[%d,%d] packed as %g, want %g", kn.level, tr, kcb, h, r, p, got, want)
						}
					}
				}
			}
		}
	}
}

// TestPackABlock checks packABlock (a group of strips of a transposed A,
// with each level's piece copier) against reading A directly, and that it
// writes nothing past the group's strips.
func TestPackABlock(t *testing.T) {
	forEachVariant(t, func(t *testing.T) {
		testPackABlock(t, kernelFor[float32]())
		testPackABlock(t, kernelFor[float64]())
	})
}

func testPackABlock[T float32 | float64](t *testing.T, kn *kernel[T]) {
	rng := rand.New(rand.NewSource(7))
	mr := kn.mr
	for _, strips := range []int{1, 3, 7} {
		for _, kcb := range []int{1, 7, 33} {
			const i0, pc, guard = 2, 3, 17
			lda := i0 + strips*mr + 3
			a := randPadded[T](rng, pc+kcb, lda, lda)
			dst := make([]T, strips*kcb*mr+guard)
			for i := range dst {
				dst[i] = -7
			}
			packABlock(kn, dst, a, lda, i0, pc, kcb, strips)
			for st := 0; st < strips; st++ {
				for p := 0; p < kcb; p++ {
					for r := 0; r < mr; r++ {
						want := a[(pc+p)*lda+i0+st*mr+r]
						if got := dst[st*kcb*mr+p*mr+r]; got != want {
							t.Fatalf("%v packABlock strips=%d kcb=%d: strip %d, depth %d, row %d packed as %g, want %g", kn.level, strips, kcb, st, p, r, got, want)
						}
					}
				}
			}
			for i := strips * kcb * mr; i < len(dst); i++ {
				if dst[i] != -7 {
					t.Fatalf("%v packABlock strips=%d kcb=%d: wrote dst[%d] past the strips", kn.level, strips, kcb, i)
				}
			}
		}
	}
}

// TestTileAllocs checks that a workspace, once grown, runs attention's tile
// products without allocating.
func TestTileAllocs(t *testing.T) {
	forEachVariant(t, func(t *testing.T) {
		rng := rand.New(rand.NewSource(5))
		q, k, s := randPadded[float32](rng, 64, 64, 64), randPadded[float32](rng, 64, 64, 64), make([]float32, 64*64)
		var w Workspace[float32]
		for _, tB := range []bool{false, true} {
			allocs := testing.AllocsPerRun(20, func() {
				if err := w.Gemm(false, tB, 64, 64, 64, 0.125, q, 64, k, 64, 0, s, 64); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Fatalf("tB=%t: %g allocations per tile product, want 0", tB, allocs)
			}
		}
	})
}

func TestBadArgs(t *testing.T) {
	f := make([]float32, 16)
	cases := []struct {
		name string
		run  func() error
		want string
	}{
		{"negative", func() error { return Gemm(false, false, -1, 2, 2, 1, f, 2, f, 2, 0, f, 2) }, "negative size m=-1"},
		{"short A", func() error { return Gemm(false, false, 3, 2, 4, 1, f[:11], 4, f, 2, 0, f, 2) }, "A [m,k] = [3,4] at row stride 4 needs 12 elements, the slice holds 11"},
		{"short Bt", func() error { return Gemm(false, true, 2, 3, 4, 1, f, 4, f[:10], 4, 0, f, 3) }, "B [n,k] (tB) = [3,4] at row stride 4 needs 12"},
		{"stride A", func() error { return Gemm(true, false, 2, 2, 2, 1, f, 1, f, 2, 0, f, 2) }, "A [k,m] (tA) = [2,2] with row stride 1"},
		{"short C", func() error {
			var w Workspace[float32]
			return w.Gemm(false, false, 4, 4, 1, 1, f, 1, f, 4, 0, f[:15], 4)
		}, "C [m,n] = [4,4] at row stride 4 needs 16"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	// Empty products are fine with empty operands; k = 0 scales C.
	c := []float32{1, 2, 3, 4}
	if err := Gemm(false, false, 2, 2, 0, 1, nil, 1, nil, 2, 0.5, c, 2); err != nil {
		t.Fatal(err)
	}
	if c[0] != 0.5 || c[3] != 2 {
		t.Fatalf("k = 0, beta = 0.5: C = %v, want [0.5 1 1.5 2]", c)
	}
	if err := Gemm[float64](false, false, 0, 3, 3, 1, nil, 3, nil, 3, 0, nil, 3); err != nil {
		t.Fatal(err)
	}
}
