package nn

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// BenchmarkTrainStep times one training step (forward, backward, AdamW) of a
// character-level GPT of the sizes the examples use, in float32.
func BenchmarkTrainStep(b *testing.B) {
	for _, tc := range []struct {
		layers, width, ctx, batch int
	}{
		{2, 64, 64, 16},
		{4, 128, 128, 16},
	} {
		b.Run(fmt.Sprintf("L%d_D%d_T%d_B%d", tc.layers, tc.width, tc.ctx, tc.batch), func(b *testing.B) {
			cfg := Config{Vocab: 96, Context: tc.ctx, Layers: tc.layers, Heads: 4, Width: tc.width, MLPRatio: 4}
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
