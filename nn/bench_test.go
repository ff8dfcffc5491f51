package nn

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/internal/benchkit"
)

// BenchmarkTrainStep times one training step (forward, backward, clipping,
// AdamW) of a character-level GPT of the sizes the examples use, in float32;
// the third and fourth are the configurations of scripts/train-bench.sh,
// the last examples/gpt's CPU default.
func BenchmarkTrainStep(b *testing.B) {
	for _, tc := range []struct {
		layers, width, heads, ctx, batch int
	}{
		{2, 64, 4, 64, 16},
		{4, 128, 4, 128, 16},
		{2, 64, 4, 64, 32},
		{4, 256, 8, 256, 16},
		{2, 128, 4, 64, 64},
	} {
		b.Run(fmt.Sprintf("L%d_D%d_H%d_T%d_B%d", tc.layers, tc.width, tc.heads, tc.ctx, tc.batch), func(b *testing.B) {
			cfg := Config{Vocab: 96, Context: tc.ctx, Layers: tc.layers, Heads: tc.heads, Width: tc.width, MLPRatio: 4}
			rng := rand.New(rand.NewSource(1))
			m, err := NewGPT(cfg, tensor.Float32, rng)
			if err != nil {
				b.Fatal(err)
			}
			r, err := m.NewRunner(tc.batch, tc.ctx, Train)
			if err != nil {
				b.Fatal(err)
			}
			opt, _ := NewAdamW(r.Params(), 0.9, 0.95, 1e-8, 0.1)
			n := tc.batch * tc.ctx
			tok, tgt := make([]int, n), make([]int, n)
			for i := range tok {
				tok[i], tgt[i] = rng.Intn(96), rng.Intn(96)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, _, err := r.TrainStep(opt, 1e-3, 1, tok, tgt, rng); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkGELU times the forward and gradient kernels on an MLP activation
// of 1024 rows × 256 (float32).
func BenchmarkGELU(b *testing.B) {
	x, g := newDense(tensor.Float32, 1024, 256), newDense(tensor.Float32, 1024, 256)
	xs, gs := floats[float32](x), floats[float32](g)
	for i := range xs {
		xs[i], gs[i] = float32(i%97)*0.05-2.4, 1
	}
	for _, grad := range []bool{false, true} {
		b.Run(fmt.Sprintf("grad=%t", grad), func(b *testing.B) {
			op, in := geluOp{dims: 2}, []*tensor.Dense{x}
			if grad {
				op.grad, in = true, []*tensor.Dense{x, g}
			}
			for i := 0; i < b.N; i++ {
				if _, err := run(op, in...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(xs))/b.Elapsed().Seconds()/1e6, "Melem/s")
		})
	}
}

// BenchmarkMatMulGPT times nn's matrix products at the shapes of a GPT
// training step (float32): the forward x·W, and the two gradients g·Wᵀ and
// xᵀ·g, for the layers of the two configurations of scripts/train-bench.sh
// (M = batch·context rows, width D, hidden 4·D, the q,k,v projection 3·D,
// vocabulary 96). Beside GFLOP/s (wall clock) it reports GFLOP/cpu-s, the
// FLOPs per CPU-second of the process: a core's rate (at -cpu 2 about half
// of GFLOP/s when both cores ran it throughout, more when another process
// held one of them). Each product runs after the one before
// it, as long as -benchtime says; internal/kernels/gemm's
// BenchmarkGemmRounds alternates a layer's products in rounds instead.
func BenchmarkMatMulGPT(b *testing.B) {
	for _, tc := range []struct{ m, in, out int }{
		{2048, 64, 256}, {2048, 64, 192}, {2048, 256, 64}, {2048, 64, 96}, {2048, 64, 64},
		{4096, 256, 1024}, {4096, 1024, 256}, {4096, 256, 768}, {4096, 256, 256}, {4096, 256, 96},
	} {
		x, w, g := newDense(tensor.Float32, tc.m, tc.in), newDense(tensor.Float32, tc.in, tc.out), newDense(tensor.Float32, tc.m, tc.out)
		for _, t := range []*tensor.Dense{x, w, g} {
			d := floats[float32](t)
			for i := range d {
				d[i] = float32(i%13)*0.1 - 0.6
			}
		}
		for _, p := range []struct {
			name string
			k    matmulOp
			a, b *tensor.Dense
			out  tensor.Shape
		}{
			{"xW", matmulOp{}, x, w, tensor.Shape{tc.m, tc.out}},
			{"gWt", matmulOp{tB: true}, g, w, tensor.Shape{tc.m, tc.in}},
			{"xtg", matmulOp{tA: true}, x, g, tensor.Shape{tc.in, tc.out}},
		} {
			b.Run(fmt.Sprintf("M%d_%dx%d/%s", tc.m, tc.in, tc.out, p.name), func(b *testing.B) {
				out := newDense(tensor.Float32, p.out...)
				cpu0 := benchkit.CPUSeconds()
				for i := 0; i < b.N; i++ {
					if err := p.k.do(out, []*tensor.Dense{p.a, p.b}); err != nil {
						b.Fatal(err)
					}
				}
				gflop := float64(2*tc.m*tc.in*tc.out*b.N) / 1e9
				b.ReportMetric(gflop/b.Elapsed().Seconds(), "GFLOP/s")
				if cpu := benchkit.CPUSeconds() - cpu0; cpu > 0 {
					b.ReportMetric(gflop/cpu, "GFLOP/cpu-s")
				}
			})
		}
	}
}
