package gemm

import (
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/flashgorgon/flashgorgon/internal/benchkit"
	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// Benchmarks report GFLOP/s (2·m·n·k per product, wall clock) and
// pct_peak, that rate over the float32 FMA peak of the level in force
// (peak, measured in the same run on as many goroutines as GOMAXPROCS). On
// a machine shared with other processes the wall clock counts time the
// benchmark was not running, so they also report cpu_pct_peak: the FLOPs
// per CPU-second of the process over the peak loop's FLOPs per CPU-second,
// the kernels' efficiency on the cores they had. Run them with -cpu 1,2 for
// one and two cores, and take the best of several runs (-count).

// peak is a peak loop's float32 FMA rate.
type peak struct{ wall, cpu float64 } // GFLOP/s, GFLOP per CPU-second

// peakRate measures level l's peak loop on procs goroutines at once, the
// best of three short runs; zero when the level has no loop (generic).
func peakRate(l isa.Level, procs int) peak {
	loop, flops := peakLoop(l)
	if loop == nil {
		return peak{}
	}
	const iters = 4 << 20
	var best peak
	for range 3 {
		var wg sync.WaitGroup
		start, cpu0 := time.Now(), benchkit.CPUSeconds()
		for range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				loop(iters)
			}()
		}
		wg.Wait()
		total := float64(procs*iters*flops) / 1e9
		best.wall = max(best.wall, total/time.Since(start).Seconds())
		if cpu := benchkit.CPUSeconds() - cpu0; cpu > 0 {
			best.cpu = max(best.cpu, total/cpu)
		}
	}
	return best
}

// BenchmarkPeakFMA is the FMA peak of each level's loop on GOMAXPROCS
// goroutines: the denominator of pct_peak. shared/tools/peak.c measures
// the AVX2 one from C.
func BenchmarkPeakFMA(b *testing.B) {
	for _, l := range isa.Supported() {
		loop, flops := peakLoop(l)
		if loop == nil {
			continue
		}
		b.Run(l.String(), func(b *testing.B) {
			const iters = 1 << 20
			cpu0 := benchkit.CPUSeconds()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					loop(iters)
				}
			})
			total := float64(b.N) * iters * float64(flops) / 1e9
			b.ReportMetric(total/b.Elapsed().Seconds(), "GFLOP/s")
			if cpu := benchkit.CPUSeconds() - cpu0; cpu > 0 {
				b.ReportMetric(total/cpu, "GFLOP/cpu-s")
			}
		})
	}
}

// measure runs body b.N times and reports the rates of flopsPerOp.
func measure(b *testing.B, flopsPerOp float64, pk peak, body func()) {
	b.ResetTimer()
	cpu0 := benchkit.CPUSeconds()
	body()
	cpu := benchkit.CPUSeconds() - cpu0
	b.StopTimer()
	total := flopsPerOp * float64(b.N) / 1e9
	rate := total / b.Elapsed().Seconds()
	b.ReportMetric(rate, "GFLOP/s")
	if pk.wall > 0 {
		b.ReportMetric(100*rate/pk.wall, "pct_peak")
	}
	if pk.cpu > 0 && cpu > 0 {
		b.ReportMetric(100*total/cpu/pk.cpu, "cpu_pct_peak")
	}
}

type benchShape struct {
	name    string
	tA, tB  bool
	m, n, k int
}

// nnShapes are the products of nn's GPT layers (nn/linear.go: y = x·W,
// ∂x = g·Wᵀ, ∂W = xᵀ·g): those of the large configuration of
// scripts/train-bench.sh (width 256 over B·N = 4096 tokens: the q,k,v
// projection 256→768, the MLP's 256→1024 and 1024→256, the attention's
// output projection 256→256 and the vocabulary head 256→96), as nn's
// BenchmarkMatMulGPT times them, and of the small one (width 64 over 2048
// tokens).
var nnShapes = append(gptShapes("D256", 4096, [][2]int{{256, 768}, {256, 1024}, {1024, 256}, {256, 256}, {256, 96}}),
	benchShape{"D64/qkv/xW", false, false, 2048, 192, 64},
	benchShape{"D64/fc/xW", false, false, 2048, 256, 64},
	benchShape{"D64/proj/xW", false, false, 2048, 64, 256},
	benchShape{"D64/fc/gWt", false, true, 2048, 64, 256},
	benchShape{"D64/fc/xtg", true, false, 64, 256, 2048},
)

// gptShapes returns the three products of each layer in→out over tokens
// rows: x·W [tokens, in]·[in, out], g·Wᵀ [tokens, out]·[in, out]ᵀ and
// xᵀ·g [tokens, in]ᵀ·[tokens, out], named <prefix>/<in>x<out>/<product>.
func gptShapes(prefix string, tokens int, layers [][2]int) []benchShape {
	var ss []benchShape
	for _, l := range layers {
		in, out := l[0], l[1]
		name := fmt.Sprintf("%s/%dx%d/", prefix, in, out)
		ss = append(ss,
			benchShape{name + "xW", false, false, tokens, out, in},
			benchShape{name + "gWt", false, true, tokens, in, out},
			benchShape{name + "xtg", true, false, in, out, tokens})
	}
	return ss
}

// tileShapes are attention's tile products (Br×Bc tiles, head dim d):
// S = Q·Kᵀ (tB), O += P·V with V stored as it is (NN) or as Vᵀ (tB).
var tileShapes = []benchShape{
	{"QKt/64x64x64", false, true, 64, 64, 64},
	{"PV/64x64x64", false, false, 64, 64, 64},
	{"PVt/64x64x64", false, true, 64, 64, 64},
	{"QKt/128x128x64", false, true, 128, 128, 64},
	{"PV/128x64x128", false, false, 128, 64, 128},
	{"QKt/64x64x128", false, true, 64, 64, 128},
	{"PV/64x128x64", false, false, 64, 128, 64},
}

func operands(rng *rand.Rand, s benchShape) (a, bb, c []float32, lda, ldb int) {
	ar, ac := s.m, s.k
	if s.tA {
		ar, ac = s.k, s.m
	}
	br, bc := s.k, s.n
	if s.tB {
		br, bc = s.n, s.k
	}
	return randPadded[float32](rng, ar, ac, ac), randPadded[float32](rng, br, bc, bc), make([]float32, s.m*s.n), ac, bc
}

// BenchmarkGemm runs nn's products at nn's shapes, in float32 at the level
// in force, split over GOMAXPROCS cores: GemmDepth (what nn's matmul op
// calls), GemmBias (…/bias) at a linear layer's forward, and Gemm
// (…/split: the split-accumulator scheme of attention's error rule) for
// comparison; BenchmarkGemmGonum runs gonum's Sgemm there.
func BenchmarkGemm(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	for _, s := range nnShapes {
		a, bb, c, lda, ldb := operands(rng, s)
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		bias := make([]float32, s.n)
		for i := range bias {
			bias[i] = float32(i%7) * 0.25
		}
		for _, p := range []struct {
			name string
			run  func() error
		}{
			{"", func() error { return GemmDepth(s.tA, s.tB, s.m, s.n, s.k, a, lda, bb, ldb, c, s.n) }},
			{"/bias", func() error { return GemmBias(s.tA, s.tB, s.m, s.n, s.k, a, lda, bb, ldb, bias, c, s.n) }},
			{"/split", func() error { return Gemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n) }},
		} {
			if p.name == "/bias" && (s.tA || s.tB) { // only the forward x·W + b
				continue
			}
			b.Run(s.name+p.name, func(b *testing.B) {
				pk := peakRate(isa.Get(), runtime.GOMAXPROCS(0))
				measure(b, flops, pk, func() {
					for range b.N {
						if err := p.run(); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		}
	}
}

// BenchmarkGemmGonum runs gonum's Sgemm at BenchmarkGemm's shapes (a
// benchmark of its own, so that -bench 'Gemm$' times ours alone).
func BenchmarkGemmGonum(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	for _, s := range nnShapes {
		a, bb, c, lda, ldb := operands(rng, s)
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		b.Run(s.name, func(b *testing.B) {
			measure(b, flops, peak{}, func() {
				for range b.N {
					blas32.Implementation().Sgemm(trans(s.tA), trans(s.tB), s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
				}
			})
		})
	}
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// BenchmarkTile runs attention's tile products on Workspace.Gemm, one
// product per goroutine on each of GOMAXPROCS goroutines (as the attention
// op runs them), beside gonum's Sgemm (the tile products' kernel before this package).
func BenchmarkTile(b *testing.B) {
	for _, s := range tileShapes {
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		b.Run(s.name, func(b *testing.B) {
			pk := peakRate(isa.Get(), runtime.GOMAXPROCS(0))
			var seed atomic.Int64
			measure(b, flops, pk, func() {
				b.RunParallel(func(pb *testing.PB) {
					rng := rand.New(rand.NewSource(seed.Add(1)))
					a, bb, c, lda, ldb := operands(rng, s)
					var w Workspace[float32]
					for pb.Next() {
						if err := w.Gemm(s.tA, s.tB, s.m, s.n, s.k, 0.125, a, lda, bb, ldb, 1, c, s.n); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		})
		b.Run(s.name+"/gonum", func(b *testing.B) {
			measure(b, flops, peak{}, func() {
				b.RunParallel(func(pb *testing.PB) {
					a, bb, c, lda, ldb := operands(rand.New(rand.NewSource(1)), s)
					for pb.Next() {
						blas32.Implementation().Sgemm(trans(s.tA), trans(s.tB), s.m, s.n, s.k, 0.125, a, lda, bb, ldb, 1, c, s.n)
					}
				})
			})
		})
	}
}

// BenchmarkTileAllocs is the single-threaded tile product with its
// allocation count (0 once the workspace has grown).
func BenchmarkTileAllocs(b *testing.B) {
	s := tileShapes[0]
	a, bb, c, lda, ldb := operands(rand.New(rand.NewSource(1)), s)
	var w Workspace[float32]
	_ = w.Gemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
	b.ReportAllocs()
	measure(b, 2*float64(s.m*s.n*s.k), peak{}, func() {
		for range b.N {
			_ = w.Gemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
		}
	})
}

// BenchmarkChunks times the micro-kernel in force alone on one register
// tile (mr×nr, A and B hot in L1, C added to), over depths of 64, 128 and
// 256 (one depth block each), summed in chunks of 8 and 16 steps and in one
// chain (kb = depth): what the chunk flushes of the split-accumulator
// scheme cost (see Accumulation in the package comment; Workspace.Gemm
// uses chunkSingle's kb, GemmDepth and Workspace.GemmChain one chain). The
// kernels are those TestVariants checks against a float64 loop.
//
//	go test -run '^$' -bench Chunks -cpu 1 ./internal/kernels/gemm
func BenchmarkChunks(b *testing.B) {
	kn := kernelFor[float32]()
	mr, nr := kn.mr, kn.nr
	for _, k := range []int{64, 128, 256} {
		a, bb, c := make([]float32, mr*k), make([]float32, k*nr), make([]float32, mr*nr)
		for i := range a {
			a[i] = float32(i%7) * 0.125
		}
		for i := range bb {
			bb[i] = float32(i%5) * 0.25
		}
		for _, kb := range []int{8, 16, k} {
			name := fmt.Sprintf("k%d/kb%d", k, kb)
			if kb == k {
				name = fmt.Sprintf("k%d/chain", k)
			}
			b.Run(name, func(b *testing.B) {
				measure(b, 2*float64(mr*nr*k), cachedPeak(isa.Get(), 1), func() {
					for range b.N {
						kn.micro(k, kb, &a[0], k, 1, &bb[0], nr, &c[0], nr, 1, 1, true)
					}
				})
			})
		}
	}
}

// BenchmarkChainSplit times attention's tile products on one goroutine
// summed both ways, Workspace.Gemm (chunks into four totals) and
// Workspace.GemmChain (one chain per depth block), alternating every few
// products in one loop, so that a machine shared with other work slows
// both alike: the reported ratio chain/split is the speed-up of the chain.
// Shapes (m×n×k, A·B with B read in place, or Aᵀ·B): O += P·V and
// dV += Pᵀ·dO, dK += dSᵀ·Q (128×64×128), dQ += dS·K with dSᵀ stored
// (Aᵀ·B, 128×64×128), and the scores S = Q·Kᵀ with Kᵀ stored (128×128×64).
//
//	go test -run '^$' -bench ChainSplit -cpu 1 ./internal/kernels/gemm
func BenchmarkChainSplit(b *testing.B) {
	shapes := []benchShape{
		{"PV/128x64x128", false, false, 128, 64, 128},
		{"dQ/128x64x128/tA", true, false, 128, 64, 128},
		{"S/128x128x64", false, false, 128, 128, 64},
	}
	rng := rand.New(rand.NewSource(1))
	for _, s := range shapes {
		a, bb, c, lda, ldb := operands(rng, s)
		b.Run(s.name, func(b *testing.B) {
			var w Workspace[float32]
			const burst = 4
			var split, chain time.Duration
			for range b.N {
				t0 := time.Now()
				for range burst {
					if err := w.Gemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 1, c, s.n); err != nil {
						b.Fatal(err)
					}
				}
				t1 := time.Now()
				for range burst {
					if err := w.GemmChain(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 1, c, s.n); err != nil {
						b.Fatal(err)
					}
				}
				split += t1.Sub(t0)
				chain += time.Since(t1)
			}
			flops := 2 * float64(s.m*s.n*s.k) * burst * float64(b.N) / 1e9
			b.ReportMetric(flops/split.Seconds(), "split_GFLOP/s")
			b.ReportMetric(flops/chain.Seconds(), "chain_GFLOP/s")
			b.ReportMetric(split.Seconds()/chain.Seconds(), "chain_speedup")
		})
	}
}

// BenchmarkGemmRounds runs nn's products of each layer of the large GPT
// (nnShapes' D256 ones: x·W, g·Wᵀ, xᵀ·g on GemmDepth over GOMAXPROCS
// cores) in rounds, each product three times a round, one after the
// other, so that a machine shared with other work slows them alike; beside
// them g·Wᵀ with Wᵀ stored as it is (gWt=Wt: the same product, op(B) not
// packed through the transposer). It reports each product's FLOPs per
// CPU-second as a percentage of the FMA peak loop's (<product>_pct,
// measured once per process on GOMAXPROCS goroutines) and its wall-clock
// GFLOP/s (<product>_GF).
//
//	go test -run '^$' -bench GemmRounds -cpu 2,1 -benchtime 16x ./internal/kernels/gemm
func BenchmarkGemmRounds(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i+2 < len(nnShapes); i += 3 {
		layer := nnShapes[i : i+3] // xW, gWt, xtg of one layer
		if !strings.HasPrefix(layer[0].name, "D256/") {
			continue
		}
		gw := layer[1]
		gw.name, gw.tB = gw.name+"=Wt", false
		type product struct {
			name      string
			run       func()
			flops     float64
			cpu, wall float64
		}
		var ps []*product
		for _, s := range []benchShape{layer[0], layer[1], gw, layer[2]} {
			a, bb, c, lda, ldb := operands(rng, s)
			ps = append(ps, &product{
				name:  s.name[strings.LastIndex(s.name, "/")+1:],
				flops: 2 * float64(s.m) * float64(s.n) * float64(s.k),
				run: func() {
					if err := GemmDepth(s.tA, s.tB, s.m, s.n, s.k, a, lda, bb, ldb, c, s.n); err != nil {
						panic(err)
					}
				},
			})
		}
		b.Run(strings.TrimSuffix(layer[0].name, "/xW"), func(b *testing.B) {
			pk := cachedPeak(isa.Get(), runtime.GOMAXPROCS(0))
			for _, p := range ps {
				p.cpu, p.wall = 0, 0
				p.run() // warm: workspaces, scratch
			}
			const reps = 3
			for range b.N {
				for _, p := range ps {
					t0, c0 := time.Now(), benchkit.CPUSeconds()
					for range reps {
						p.run()
					}
					p.cpu += benchkit.CPUSeconds() - c0
					p.wall += time.Since(t0).Seconds()
				}
			}
			for _, p := range ps {
				gflop := p.flops * reps * float64(b.N) / 1e9
				if p.cpu > 0 && pk.cpu > 0 {
					b.ReportMetric(100*gflop/p.cpu/pk.cpu, p.name+"_pct")
				}
				b.ReportMetric(gflop/p.wall, p.name+"_GF")
			}
		})
	}
}
