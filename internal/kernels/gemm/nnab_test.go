package gemm

import (
	"cmp"
	"fmt"
	"math"
	"math/rand"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flashgorgon/flashgorgon/internal/benchkit"
	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// spotCheck compares entries of C = op(A)·op(B) (float32, rows n apart)
// with a float64 loop over the definition, within the bound of a chain
// per depth block (errorBound), at count entries picked by rng: a check of
// a benchmark's result that costs O(count·k), not O(m·n·k).
func spotCheck(rng *rand.Rand, s benchShape, a []float32, lda int, bb []float32, ldb int, c []float32, count int) error {
	at := func(x []float32, ld int, trans bool, i, j int) float64 {
		if trans {
			return float64(x[j*ld+i])
		}
		return float64(x[i*ld+j])
	}
	tol := errorBound(s.k, true) * unitRoundoff[float32]()
	for range count {
		i, j := rng.Intn(s.m), rng.Intn(s.n)
		var sum, mag float64
		for l := range s.k {
			v := at(a, lda, s.tA, i, l) * at(bb, ldb, s.tB, l, j)
			sum, mag = sum+v, mag+math.Abs(v)
		}
		if got := float64(c[i*s.n+j]); !(math.Abs(got-sum) <= tol*mag) {
			return fmt.Errorf("%s: C[%d,%d] = %g, float64 %g (bound %g)", s.name, i, j, got, sum, tol*mag)
		}
	}
	return nil
}

// An abWay is a configuration of nn's products that BenchmarkNNAB times:
// set switches the package to it and returns the function that switches
// back.
type abWay struct {
	name string
	set  func() (restore func())
}

// abWays are BenchmarkNNAB's configurations: main (the kernels in use),
// packAT (variant 15: Aᵀ packed a group of strips at a time), inplace
// (the variant in use without its packing twin: Aᵀ read in place by every
// tile) and noexact (the variant in use without kernel.exact: the 96-wide
// head gradient on the 6×64 and 6×32 tiles). The twelfth session's
// experiments (nn14: GemmDepth computing a weight gradient with n < m as
// its transpose, the packing twin prefetching its strip's lines of A 24
// depth steps ahead, depth blocks of 256 in the parts, four units a
// worker) ran here too and lost or tied on the GPU machine's Xeon
// (cmd/cpubench/results/xeon-2026-11-24-s12/nn14).
func abWays() []abWay {
	variant := func(num int) func() func() {
		return func() func() {
			for _, v := range variants(isa.Get()) {
				if v.num == num {
					return useVariant(v)
				}
			}
			return func() {}
		}
	}
	// changed is the variant in use with copies of its kernels changed by
	// f32 and f64.
	changed := func(f32 func(*kernel[float32]), f64 func(*kernel[float64])) func() func() {
		return func() func() {
			v := variants(isa.Get())[0]
			s, d := *v.s, *v.d
			f32(&s)
			f64(&d)
			v.s, v.d = &s, &d
			return useVariant(v)
		}
	}
	inPlace := changed(func(k *kernel[float32]) { k.packFirst = nil }, func(k *kernel[float64]) { k.packFirst = nil })
	noExact := changed(func(k *kernel[float32]) { k.exact = nil }, func(k *kernel[float64]) { k.exact = nil })
	return []abWay{{"main", func() func() { return func() {} }}, {"packAT", variant(15)}, {"inplace", inPlace}, {"noexact", noExact}}
}

// BenchmarkNNAB times nn's products through GemmDepth (the weight
// gradients xᵀ·g of examples/gpt's large configuration over 4096 tokens,
// and the small one's 256×64 over 2048; FG_NNAB_PRODS=xW,gWt,xtg picks
// others of nnShapes' D256 set) under the configurations of abWays
// (FG_NNAB_WAYS: a comma list of their names, default all), alternating in
// rounds in one process (each way first in turn), after checking each
// way's result against a float64 loop at 256 entries. Each round also
// runs the FMA peak loop on GOMAXPROCS goroutines and the micro-kernel in
// use alone on one goroutine (one mr×nr tile over a 256-deep block in one
// chain, A and B hot in L1: BenchmarkChunks' k256/chain), each about as
// long as a way, so that a round's rates can be read against what the
// cores gave in that round. It reports each way's median over the rounds
// of the rate per CPU-second as % of the FMA peak loop's measured at the
// start (<way>_pct) and of the round's own peak loop (<way>_rpct), the
// tile's (tile_rpct), and the median of the rounds' ratios to the first
// way's (<way>/<first>). Products that a way does not change run the
// same code: their ratio is the noise of the rounds.
func BenchmarkNNAB(b *testing.B) {
	ways := abWays()
	if env := os.Getenv("FG_NNAB_WAYS"); env != "" {
		var sel []abWay
		for _, n := range strings.Split(env, ",") {
			for _, w := range ways {
				if w.name == n {
					sel = append(sel, w)
				}
			}
		}
		ways = sel
	}
	prods := strings.Split(cmp.Or(os.Getenv("FG_NNAB_PRODS"), "xtg"), ",")
	var shapes []benchShape
	for _, sh := range nnShapes {
		for _, p := range prods {
			if strings.HasPrefix(sh.name, "D256/") && strings.HasSuffix(sh.name, "/"+p) {
				shapes = append(shapes, sh)
			}
		}
	}
	if slices.Contains(prods, "xtg") {
		shapes = append(shapes, benchShape{"D64/256x64/xtg", true, false, 256, 64, 2048})
	}
	rng := rand.New(rand.NewSource(1))
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
			for _, w := range ways {
				r := w.set()
				clear(c)
				run()
				err := spotCheck(rng, sh, a, lda, bb, ldb, c, 256)
				r()
				if err != nil {
					b.Fatalf("%s: %v", w.name, err)
				}
			}
			reps := max(1, int(2e9/flops)) // a round of a way: ≥ 2 GFLOP (about 15 ms)
			rate := make([][]float64, len(ways))
			ratio := make([][]float64, len(ways))
			var rpct [][]float64 = make([][]float64, len(ways))
			var tile []float64
			loop, loopFlops := peakLoop(isa.Get())
			procs := runtime.GOMAXPROCS(0)
			kn := chainFor[float32]()
			ta, tb, tc := make([]float32, kn.mr*256), make([]float32, 256*kn.nr), make([]float32, kn.mr*kn.nr)
			for i := range ta {
				ta[i] = float32(i%7) * 0.125
			}
			for i := range tb {
				tb[i] = float32(i%5) * 0.25
			}
			tileCalls := int(float64(reps) * flops / float64(procs) / (2 * float64(kn.mr*kn.nr*256)))
			for r := range b.N {
				// The round's peak (GFLOP per CPU-second) and tile rate.
				var roundPeak float64
				if loop != nil {
					iters := int(float64(reps) * flops / float64(procs) / float64(loopFlops))
					var wg sync.WaitGroup
					c0 := benchkit.CPUSeconds()
					for range procs {
						wg.Add(1)
						go func() { defer wg.Done(); loop(iters) }()
					}
					wg.Wait()
					roundPeak = float64(iters*procs*loopFlops) / 1e9 / (benchkit.CPUSeconds() - c0)
					c0 = benchkit.CPUSeconds()
					for range tileCalls {
						kn.micro(256, 256, &ta[0], 256, 1, &tb[0], kn.nr, &tc[0], kn.nr, 1, 1, true)
					}
					tile = append(tile, 100*float64(tileCalls)*2*float64(kn.mr*kn.nr*256)/1e9/(benchkit.CPUSeconds()-c0)/roundPeak)
				}
				cpu := make([]float64, len(ways))
				for o := range ways {
					i := (r + o) % len(ways)
					restore := ways[i].set()
					c0 := benchkit.CPUSeconds()
					for range reps {
						run()
					}
					cpu[i] = benchkit.CPUSeconds() - c0
					restore()
				}
				if slices.Min(cpu) > 0 {
					for i := range ways {
						rate[i] = append(rate[i], flops*float64(reps)/1e9/cpu[i])
						ratio[i] = append(ratio[i], cpu[0]/cpu[i])
						if roundPeak > 0 {
							rpct[i] = append(rpct[i], 100*flops*float64(reps)/1e9/cpu[i]/roundPeak)
						}
					}
				}
			}
			if len(rate[0]) > 0 && pk.cpu > 0 {
				if len(tile) > 0 {
					b.ReportMetric(median(tile), "tile_rpct")
				}
				for i, w := range ways {
					b.ReportMetric(100*median(rate[i])/pk.cpu, w.name+"_pct")
					if len(rpct[i]) > 0 {
						b.ReportMetric(median(rpct[i]), w.name+"_rpct")
					}
					if i > 0 {
						b.ReportMetric(median(ratio[i]), w.name+"/"+ways[0].name)
					}
				}
			}
		})
	}
}

// median returns the median of xs (which it sorts).
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
