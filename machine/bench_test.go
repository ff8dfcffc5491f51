package machine_test

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/machine"
	"github.com/flashgorgon/flashgorgon/nn"
	"github.com/flashgorgon/flashgorgon/ops/softmax"
)

// vms are the two machines the benchmarks compare: Gorgonia's TapeMachine
// (Reset and RunAll, as nn.Runner did) and this package's.
var vms = []struct {
	name string
	make func(g *gorgonia.ExprGraph, keep ...*gorgonia.Node) (gorgonia.VM, error)
}{
	{"tape", func(g *gorgonia.ExprGraph, _ ...*gorgonia.Node) (gorgonia.VM, error) {
		return gorgonia.NewTapeMachine(g), nil
	}},
	{"machine", func(g *gorgonia.ExprGraph, keep ...*gorgonia.Node) (gorgonia.VM, error) {
		return machine.New(g, machine.Keep(keep...), machine.OnDevice("cpu"))
	}},
}

// BenchmarkGPTStep times a training step of examples/gpt's default model
// (2 blocks, width 192, 6 heads, context 64, batch 32, a vocabulary of 128;
// float32) on each machine: forward and backward, then clipping to norm 1
// and AdamW on the gradients read from the machine, as nn.Runner.TrainStep
// does. Run with -benchmem for the allocations per step.
func BenchmarkGPTStep(b *testing.B) {
	cfg := nn.Config{Vocab: 128, Context: 64, Layers: 2, Heads: 6, Width: 192, MLPRatio: 4}
	const batch = 32
	for _, vm := range vms {
		b.Run(vm.name, func(b *testing.B) {
			g := gorgonia.NewGraph()
			loss, wrt, params, err := gptGraph(cfg, batch, g, tensor.Float32)
			if err != nil {
				b.Fatal(err)
			}
			grads, err := gorgonia.Grad(loss, wrt...)
			if err != nil {
				b.Fatal(err)
			}
			m, err := vm.make(g, append(grads, loss)...)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			opt, err := nn.NewAdamW(params, 0.9, 0.95, 1e-8, 0.1)
			if err != nil {
				b.Fatal(err)
			}
			gs := make([]*tensor.Dense, len(grads))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.Reset()
				if err := m.RunAll(); err != nil {
					b.Fatal(err)
				}
				for j, n := range grads {
					gs[j] = n.Value().(*tensor.Dense) // bound on the CPU by both machines
				}
				nn.ClipGradNorm(gs, 1)
				if err := opt.Step(gs, 1e-4); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(batch*cfg.Context*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// softmaxBytes is what a softmax over n float32 elements must at least move:
// read x once, write y once.
func softmaxBytes(n int) float64 { return float64(2 * 4 * n) }

// BenchmarkSoftmax times softmax over the rows of a 4096×4096 float32 matrix
// through each machine and reports GB/s of softmaxBytes; BenchmarkCopy is
// the streaming reference (copy of the same bytes).
func BenchmarkSoftmax(b *testing.B) {
	const n = 4096
	for _, vm := range vms {
		b.Run(fmt.Sprintf("%s/%dx%d", vm.name, n, n), func(b *testing.B) {
			g := gorgonia.NewGraph()
			x := graph.Input(g, "x", graph.RandTensor[float32](rand.New(rand.NewSource(1)), n, n))
			y, err := softmax.Softmax(x, -1)
			if err != nil {
				b.Fatal(err)
			}
			m, err := vm.make(g, y)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			b.SetBytes(int64(softmaxBytes(n * n)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.Reset()
				if err := m.RunAll(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCopy is the streaming bandwidth of this machine for the bytes
// BenchmarkSoftmax counts: copy 4096×4096 float32 values to another
// buffer.
func BenchmarkCopy(b *testing.B) {
	const n = 4096 * 4096
	src, dst := make([]float32, n), make([]float32, n)
	for i := range src {
		src[i] = float32(i)
	}
	copy(dst, src) // touch every page before timing
	b.SetBytes(int64(softmaxBytes(n)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(dst, src)
	}
}
