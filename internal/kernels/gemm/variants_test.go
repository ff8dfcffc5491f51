package gemm

import (
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"testing"

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
//   - nn/…: nn's products (nnShapes) split over GOMAXPROCS goroutines.
//
// pct_peak is over the peak loop of the variant's level on as many
// goroutines as the benchmark runs.
func BenchmarkVariants(b *testing.B) {
	for _, l := range isa.Supported() {
		if l == isa.Generic {
			continue
		}
		for _, v := range variants(l) {
			if err := checkVariant(v); err != nil {
				b.Fatal(err)
			}
			b.Run(v.name, func(b *testing.B) { benchVariant(b, l, v) })
		}
	}
}

func benchVariant(b *testing.B, l isa.Level, v variant) {
	defer useVariant(v)()
	rng := rand.New(rand.NewSource(1))
	kn := v.s
	for _, k := range []int{64, 128, 256} {
		b.Run(fmt.Sprintf("micro/%dx%dx%d", kn.mr, kn.nr, k), func(b *testing.B) {
			a := randPadded[float32](rng, kn.mr, k, k)
			bb := randPadded[float32](rng, k, kn.nr, kn.nr)
			c := make([]float32, kn.mr*kn.nr)
			kb := kn.chunk(k)
			const calls = 64
			measure(b, 2*float64(kn.mr*kn.nr*k)*calls, cachedPeak(l, 1), func() {
				for range b.N {
					for range calls {
						kn.micro(k, kb, &a[0], k, 1, &bb[0], kn.nr, &c[0], kn.nr, 1, 1, true)
					}
				}
			})
		})
	}
	// A packed (as a transposed A is for wide products): a strip's rows
	// at one depth step are contiguous.
	b.Run(fmt.Sprintf("microPackedA/%dx%dx%d", kn.mr, kn.nr, 128), func(b *testing.B) {
		const k = 128
		a := randPadded[float32](rng, k, kn.mr, kn.mr)
		bb := randPadded[float32](rng, k, kn.nr, kn.nr)
		c := make([]float32, kn.mr*kn.nr)
		kb := kn.chunk(k)
		const calls = 64
		measure(b, 2*float64(kn.mr*kn.nr*k)*calls, cachedPeak(l, 1), func() {
			for range b.N {
				for range calls {
					kn.micro(k, kb, &a[0], 1, kn.mr, &bb[0], kn.nr, &c[0], kn.nr, 1, 1, true)
				}
			}
		})
	})
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
					if err := Gemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
