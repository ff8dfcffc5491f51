package gemm

import (
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// The variant harness: every kernel variant of every level the machine
// runs is checked against the float64 reference (checkVariant) before
// BenchmarkVariants times it, on the micro-kernel alone with its operands
// in L1, on attention's tile products as ops/attention calls them, and on
// nn's products.

// variantShapes are the products checkVariant runs: edges of every tile
// (rows past a multiple of 6, 8, 12 and 14; columns past 16, 32, 64),
// depths across the chunk lengths and depth blocks, attention's tiles.
var variantShapes = [][3]int{{1, 1, 1}, {5, 33, 9}, {13, 70, 129}, {29, 65, 300}, {64, 64, 64}, {128, 128, 64}, {100, 40, 600}}

// checkVariant runs v's products on variantShapes, every transpose, in
// float32 and float64, against the float64 reference.
func checkVariant(v variant) error {
	defer useVariant(v)()
	rng := rand.New(rand.NewSource(9))
	for _, s := range variantShapes {
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			p := newProblem[float32](rng, tr[0], tr[1], s[0], s[1], s[2], 3, 0.5, 1)
			q := newProblem[float64](rng, tr[0], tr[1], s[0], s[1], s[2], 3, 1, 0)
			want, mag := p.reference()
			wq, mq := q.reference()
			var ws Workspace[float32]
			if err := ws.Gemm(p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc); err != nil {
				return err
			}
			if err := Gemm(q.tA, q.tB, q.m, q.n, q.k, q.alpha, q.a, q.lda, q.b, q.ldb, q.beta, q.c, q.ldc); err != nil {
				return err
			}
			if err := p.mismatch(want, mag); err != nil {
				return fmt.Errorf("%s float32 %v tA,tB=%v: %w", v.name, s, tr, err)
			}
			if err := q.mismatch(wq, mq); err != nil {
				return fmt.Errorf("%s float64 %v tA,tB=%v: %w", v.name, s, tr, err)
			}
		}
	}
	return nil
}

// TestVariants checks every variant of every level on variantShapes (the
// check BenchmarkVariants runs before timing).
func TestVariants(t *testing.T) {
	for _, l := range isa.Supported() {
		for _, v := range variants(l) {
			t.Run(v.name, func(t *testing.T) {
				if err := checkVariant(v); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// attnTiles are the tile products of ops/attention (kernel.go) at head
// dimension d, with the query block 128 and the key block 64, as it calls
// them: A and B row-major at the strides it passes.
func attnTiles(d int) []benchShape {
	return []benchShape{
		{fmt.Sprintf("d%d/fwd/S=QKt", d), false, false, 128, 64, d},    // S = Q·(Kᵀ block)
		{fmt.Sprintf("d%d/fwd/O+=PV", d), false, false, 128, d, 64},    // O += P·V
		{fmt.Sprintf("d%d/bwd/St=KQt", d), false, false, 64, 128, d},   // Sᵀ = K·Qᵀ (and dPᵀ = V·dOᵀ)
		{fmt.Sprintf("d%d/bwd/dV+=PtdO", d), false, false, 64, d, 128}, // dV += Pᵀ·dO (and dK += dSᵀ·Q)
		{fmt.Sprintf("d%d/bwd/dQ+=dSK", d), true, false, 128, d, 64},   // dQ += (dSᵀ)ᵀ·K
	}
}

// peaks caches the peak loops' rates per (level, goroutines): measured
// once per process, not once per benchmark call.
var peaks sync.Map

func cachedPeak(l isa.Level, procs int) peak {
	key := [2]int{int(l), procs}
	if p, ok := peaks.Load(key); ok {
		return p.(peak)
	}
	p := peakRate(l, procs)
	peaks.Store(key, p)
	return p
}

// BenchmarkVariants times every variant (after checkVariant passes) on
//
//   - micro/k: the register tile alone, k deep, A read by rows, B
//     contiguous, all in L1, C loaded (alpha = beta = 1): the kernel's
//     rate with nothing around it, one goroutine;
//   - tile/…: attention's tile products (attnTiles) on one goroutine, as
//     each attention worker runs them;
//   - nn/…: nn's products (nnShapes, GemmDepth) split over GOMAXPROCS goroutines.
//
// pct_peak is over the peak loop of the variant's level on as many
// goroutines as the benchmark runs.
func BenchmarkVariants(b *testing.B) {
	for _, v := range checkedVariants(b) {
		b.Run(v.name, func(b *testing.B) { benchVariant(b, v.s.level, v) })
	}
}

// checkedVariants returns the variants of every supported vector level
// (not Generic), each checked by checkVariant before it is timed.
func checkedVariants(b *testing.B) []variant {
	var vs []variant
	for _, l := range isa.Supported() {
		if l == isa.Generic {
			continue
		}
		for _, v := range variants(l) {
			if err := checkVariant(v); err != nil {
				b.Fatal(err)
			}
			vs = append(vs, v)
		}
	}
	return vs
}

func benchVariant(b *testing.B, l isa.Level, v variant) {
	defer useVariant(v)()
	rng := rand.New(rand.NewSource(1))
	kn := v.s
	// micro times the micro-kernel alone on an mr×k A of row stride rsA and
	// column stride csA (A is ar×ac in memory), a k×nr B and an mr×nr C.
	micro := func(name string, k, ar, ac, rsA, csA int) {
		b.Run(fmt.Sprintf("%s/%dx%dx%d", name, kn.mr, kn.nr, k), func(b *testing.B) {
			a := randPadded[float32](rng, ar, ac, ac)
			bb := randPadded[float32](rng, k, kn.nr, kn.nr)
			c := make([]float32, kn.mr*kn.nr)
			kb := kn.chunk(k)
			const calls = 64
			measure(b, 2*float64(kn.mr*kn.nr*k)*calls, cachedPeak(l, 1), func() {
				for range b.N {
					for range calls {
						kn.micro(k, kb, &a[0], rsA, csA, &bb[0], kn.nr, &c[0], kn.nr, 1, 1, true)
					}
				}
			})
		})
	}
	for _, k := range []int{64, 128, 256} {
		micro("micro", k, kn.mr, k, k, 1)
	}
	// A packed (as a transposed A is for wide products): a strip's rows
	// at one depth step are contiguous.
	micro("microPackedA", 128, 128, kn.mr, 1, kn.mr)
	for _, s := range append(attnTiles(64), attnTiles(128)...) {
		b.Run("tile/"+s.name, func(b *testing.B) {
			a, bb, c, lda, ldb := operands(rng, s)
			var w Workspace[float32]
			const calls = 16
			measure(b, 2*float64(s.m*s.n*s.k)*calls, cachedPeak(l, 1), func() {
				for range b.N {
					for range calls {
						if err := w.Gemm(s.tA, s.tB, s.m, s.n, s.k, 0.125, a, lda, bb, ldb, 1, c, s.n); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		})
	}
	for _, s := range nnShapes {
		b.Run("nn/"+s.name, func(b *testing.B) {
			a, bb, c, lda, ldb := operands(rng, s)
			measure(b, 2*float64(s.m)*float64(s.n)*float64(s.k), cachedPeak(l, runtime.GOMAXPROCS(0)), func() {
				for range b.N {
					if err := GemmDepth(s.tA, s.tB, s.m, s.n, s.k, a, lda, bb, ldb, c, s.n); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkVariantTable times every variant round-robin: each round runs
// each variant for at least tableSlice, and a variant's rate is its best
// round's. On a machine shared with other work (the GPU machine's Xeon
// slowed some of a run's benchmarks twofold) the best of interleaved
// rounds compares the variants at the same moments, where one benchmark
// after another would compare them at different ones. Each sub-benchmark
// reports, per variant, its best GFLOP/s (<variant>_GF/s) and that over
// the best rate of the level's peak loop, timed in the same rounds, on as
// many goroutines (<variant>_pct). Run it with -benchtime 1x; -cpu n sets
// the goroutines of the nn products.
func BenchmarkVariantTable(b *testing.B) {
	vs := checkedVariants(b)
	rng := rand.New(rand.NewSource(1))
	type item struct {
		name  string
		procs int                                         // goroutines of the product (and of the peak loop)
		setup func(v variant) (run func(), flops float64) // one product with v's kernels
	}
	var items []item
	procs := runtime.GOMAXPROCS(0)
	if procs == 1 {
		for _, k := range []int{64, 128, 256} {
			items = append(items, item{name: fmt.Sprintf("micro/k%d", k), procs: 1, setup: func(v variant) (func(), float64) {
				kn := v.s
				a := randPadded[float32](rng, kn.mr, k, k)
				bb := randPadded[float32](rng, k, kn.nr, kn.nr)
				c := make([]float32, kn.mr*kn.nr)
				kb := kn.chunk(k)
				return func() { kn.micro(k, kb, &a[0], k, 1, &bb[0], kn.nr, &c[0], kn.nr, 1, 1, true) }, 2 * float64(kn.mr*kn.nr*k)
			}})
		}
		for _, s := range append(attnTiles(64), attnTiles(128)...) {
			a, bb, c, lda, ldb := operands(rng, s)
			items = append(items, item{name: "tile/" + s.name, procs: 1, setup: func(variant) (func(), float64) {
				var w Workspace[float32]
				return func() {
					if err := w.Gemm(s.tA, s.tB, s.m, s.n, s.k, 0.125, a, lda, bb, ldb, 1, c, s.n); err != nil {
						panic(err)
					}
				}, 2 * float64(s.m*s.n*s.k)
			}})
		}
	}
	for _, s := range nnShapes {
		a, bb, c, lda, ldb := operands(rng, s)
		items = append(items, item{name: "nn/" + s.name, procs: procs, setup: func(variant) (func(), float64) {
			return func() {
				if err := GemmDepth(s.tA, s.tB, s.m, s.n, s.k, a, lda, bb, ldb, c, s.n); err != nil {
					panic(err)
				}
			}, 2 * float64(s.m) * float64(s.n) * float64(s.k)
		}})
	}
	for _, it := range items {
		b.Run(it.name, func(b *testing.B) {
			runs := make([]func(), len(vs))
			flops := make([]float64, len(vs))
			for i, v := range vs {
				restore := useVariant(v)
				runs[i], flops[i] = it.setup(v)
				runs[i]() // grow workspaces, warm the caches
				restore()
			}
			best := make([]float64, len(vs))
			peakBest := map[isa.Level]float64{}
			for range b.N {
				for range tableRounds {
					for i, v := range vs {
						restore := useVariant(v)
						best[i] = max(best[i], rateOf(runs[i], flops[i]))
						restore()
						if _, ok := peakBest[v.s.level]; !ok || i == 0 || vs[i-1].s.level != v.s.level {
							peakBest[v.s.level] = max(peakBest[v.s.level], peakRate(v.s.level, it.procs).wall)
						}
					}
				}
			}
			for i, v := range vs {
				short := v.name[:strings.IndexByte(v.name+"_", '_')]
				b.ReportMetric(best[i], short+"_GF/s")
				if p := peakBest[v.s.level]; p > 0 {
					b.ReportMetric(100*best[i]/p, short+"_pct")
				}
			}
		})
	}
}

// tableRounds and tableSlice are BenchmarkVariantTable's rounds and the
// least time of a variant's turn in a round.
const (
	tableRounds = 7
	tableSlice  = 10 * time.Millisecond
)

// rateOf runs f until tableSlice has passed and returns GFLOP/s at flops
// per call.
func rateOf(f func(), flops float64) float64 {
	start := time.Now()
	n := 0
	for {
		f()
		n++
		if el := time.Since(start); el >= tableSlice {
			return flops * float64(n) / el.Seconds() / 1e9
		}
	}
}
