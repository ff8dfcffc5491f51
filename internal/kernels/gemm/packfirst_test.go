package gemm

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"strings"
	"testing"

	"github.com/flashgorgon/flashgorgon/internal/benchkit"
	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// TestPackingKernel checks every packing twin (kernel.packFirst) on one
// strip of Aᵀ read in place, lda apart: the copy it writes holds A's
// values bit for bit and nothing past the strip's k·mr values; its tile is
// its micro-kernel's, bit for bit, and within k·u·Σ|a·b| of the float64
// reference (a bound for any order of summation).
func TestPackingKernel(t *testing.T) {
	found := false
	for _, l := range isa.Supported() {
		for _, v := range variants(l) {
			if v.s.packFirst == nil {
				continue
			}
			found = true
			t.Run(v.name, func(t *testing.T) {
				rng := rand.New(rand.NewSource(12))
				testPackingKernel(t, v.s, rng)
				testPackingKernel(t, v.d, rng)
			})
		}
	}
	if !found && isa.Get() == isa.AVX512 {
		t.Fatal("no variant with a packing twin on an AVX-512 machine")
	}
}

func testPackingKernel[T Float](t *testing.T, kn *kernel[T], rng *rand.Rand) {
	mr, nr := kn.mr, kn.nr
	for _, k := range []int{1, 5, 64, 129, 256} {
		for _, load := range []bool{false, true} {
			lda, ldb := mr+7, nr+3
			a := randPadded[T](rng, k, mr, lda) // a strip of Aᵀ: A stored [k, ·]
			b := randPadded[T](rng, k, nr, ldb)
			c0 := randPadded[T](rng, mr, nr, nr)
			pa := make([]T, k*mr+2*mr)
			for i := range pa {
				pa[i] = T(math.NaN())
			}
			alpha, beta := T(1.5), T(0.5)
			c1, c2 := append([]T(nil), c0...), append([]T(nil), c0...)
			kb := kn.chunk(k)
			kn.micro(k, kb, &a[0], 1, lda, &b[0], ldb, &c1[0], nr, alpha, beta, load)
			kn.packFirst(k, kb, &a[0], 1, lda, &b[0], ldb, &c2[0], nr, alpha, beta, load, &pa[0])
			name := fmt.Sprintf("%T k=%d load=%t", a[0], k, load)
			for p := 0; p < k; p++ {
				for i := 0; i < mr; i++ {
					if got, want := pa[p*mr+i], a[p*lda+i]; got != want {
						t.Fatalf("%s: pa[%d·mr+%d] = %v, A holds %v", name, p, i, got, want)
					}
				}
			}
			for i := k * mr; i < len(pa); i++ {
				if !math.IsNaN(float64(pa[i])) {
					t.Fatalf("%s: pa[%d], past the strip, was written", name, i)
				}
			}
			for i := 0; i < mr; i++ {
				for j := 0; j < nr; j++ {
					got := c2[i*nr+j]
					if got != c1[i*nr+j] {
						t.Fatalf("%s: C[%d,%d] = %v, the micro-kernel gives %v", name, i, j, got, c1[i*nr+j])
					}
					var s, sa float64
					for p := 0; p < k; p++ {
						v := float64(a[p*lda+i]) * float64(b[p*ldb+j])
						s, sa = s+v, sa+math.Abs(v)
					}
					want, mag := float64(alpha)*s, float64(alpha)*sa
					if load {
						want += float64(beta) * float64(c0[i*nr+j])
						mag += math.Abs(float64(beta) * float64(c0[i*nr+j]))
					}
					if math.Abs(float64(got)-want) > float64(k+2)*unitRoundoff[T]()*mag {
						t.Fatalf("%s: C[%d,%d] = %v, want %v (Σ|a·b| %g)", name, i, j, got, want, mag)
					}
				}
			}
		}
	}
}

// TestPackFirst runs products of a transposed A on the variants with a
// packing twin (the first column strip packs each strip of Aᵀ, the others
// read the copy) against the float64 reference, and bit for bit against
// the same kernels without it (Aᵀ read in place by every tile): Workspace.Gemm
// and GemmChain, Gemm and GemmDepth at GOMAXPROCS 1 and 2. The shapes have
// edge rows and columns, several depth blocks, and depth parts (k ≥ 1024).
func TestPackFirst(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, l := range isa.Supported() {
		for _, v := range variants(l) {
			if v.s.packFirst == nil {
				continue
			}
			t.Run(v.name, func(t *testing.T) {
				rng := rand.New(rand.NewSource(13))
				testPackFirst[float32](t, v, rng, [][3]int{{40, 200, 300}, {13, 65, 129}, {100, 130, 1100}})
				testPackFirst[float64](t, v, rng, [][3]int{{40, 100, 300}, {50, 33, 1030}})
			})
		}
	}
}

func testPackFirst[T Float](t *testing.T, v variant, rng *rand.Rand, shapes [][3]int) {
	plain := v
	s, d := *v.s, *v.d
	s.packFirst, d.packFirst = nil, nil
	plain.s, plain.d = &s, &d
	for _, sh := range shapes {
		for _, tB := range []bool{false, true} {
			for _, way := range []string{"Workspace.Gemm", "GemmChain", "Gemm/procs=1", "Gemm/procs=2", "GemmDepth/procs=1", "GemmDepth/procs=2"} {
				p := newProblem[T](rng, true, tB, sh[0], sh[1], sh[2], 3, 1.5, 0.5)
				c0 := append([]T(nil), p.c...)
				if strings.HasPrefix(way, "GemmDepth") {
					p.alpha, p.beta = 1, 0
				}
				want, mag := p.reference() // before C is overwritten: it reads beta·C
				var out [2][]T
				for i, vv := range []variant{v, plain} {
					restore := useVariant(vv)
					copy(p.c, c0)
					var err error
					var w Workspace[T]
					switch way {
					case "Workspace.Gemm":
						err = w.Gemm(p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc)
					case "GemmChain":
						p.chain = true
						err = w.GemmChain(p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc)
					case "Gemm/procs=1", "Gemm/procs=2":
						runtime.GOMAXPROCS(int(way[len(way)-1] - '0'))
						err = Gemm(p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc)
					default:
						runtime.GOMAXPROCS(int(way[len(way)-1] - '0'))
						p.chain = true
						err = GemmDepth(p.tA, p.tB, p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, p.c, p.ldc)
					}
					restore()
					if err != nil {
						t.Fatal(err)
					}
					out[i] = append([]T(nil), p.c...)
				}
				name := fmt.Sprintf("%dx%dx%d/%T/tB=%t/%s", sh[0], sh[1], sh[2], p.a[0], tB, way)
				copy(p.c, out[0])
				if err := p.mismatch(want, mag); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for i := range out[0] {
					if out[0][i] != out[1][i] && !(out[0][i] != out[0][i] && out[1][i] != out[1][i]) {
						t.Fatalf("%s: C[%d] = %v, without the packing twin %v", name, i, out[0][i], out[1][i])
					}
				}
			}
		}
	}
}

// BenchmarkPackFirstAB times nn's weight gradients xᵀ·g (GemmDepth, over
// GOMAXPROCS cores) at the GPT's shapes over 4096 and 2048 tokens on the
// first variant that has a packing twin, with and without it (kernel.packFirst),
// alternating in rounds (each way three products a round, first in turn),
// and reports each way's % of the FMA peak loop per CPU-second and the
// ratio pack/inplace of their CPU times' rates.
func BenchmarkPackFirstAB(b *testing.B) {
	var v variant // the first variant of the level (the one in use first) with a packing twin
	for _, x := range variants(isa.Get()) {
		if x.s.packFirst != nil {
			v = x
			break
		}
	}
	if v.s == nil {
		b.Skip("no variant of this level has a packing twin")
	}
	plain := v
	s, d := *v.s, *v.d
	s.packFirst, d.packFirst = nil, nil
	plain.s, plain.d = &s, &d
	rng := rand.New(rand.NewSource(1))
	var shapes []benchShape
	for _, tokens := range []int{4096, 2048} {
		for _, sh := range gptShapes(fmt.Sprintf("T%d", tokens), tokens, [][2]int{{256, 768}, {256, 1024}, {1024, 256}, {256, 256}, {256, 96}}) {
			if sh.tA {
				shapes = append(shapes, sh)
			}
		}
	}
	for _, sh := range shapes {
		a, bb, c, lda, ldb := operands(rng, sh)
		flops := 2 * float64(sh.m) * float64(sh.n) * float64(sh.k)
		run := func() {
			if err := GemmDepth(sh.tA, sh.tB, sh.m, sh.n, sh.k, a, lda, bb, ldb, c, sh.n); err != nil {
				panic(err)
			}
		}
		b.Run(sh.name, func(b *testing.B) {
			pk := cachedPeak(isa.Get(), runtime.GOMAXPROCS(0))
			ways := []variant{plain, v}
			var cpu [2]float64
			for _, w := range ways {
				restore := useVariant(w)
				run() // warm
				restore()
			}
			const reps = 3
			for r := range b.N {
				for o := range 2 {
					i := (r + o) % 2
					restore := useVariant(ways[i])
					c0 := benchkit.CPUSeconds()
					for range reps {
						run()
					}
					cpu[i] += benchkit.CPUSeconds() - c0
					restore()
				}
			}
			gflop := flops * reps * float64(b.N) / 1e9
			if cpu[0] > 0 && cpu[1] > 0 && pk.cpu > 0 {
				b.ReportMetric(100*gflop/cpu[0]/pk.cpu, "inplace_pct")
				b.ReportMetric(100*gflop/cpu[1]/pk.cpu, "pack_pct")
				b.ReportMetric(cpu[0]/cpu[1], "pack/inplace")
			}
		})
	}
}
