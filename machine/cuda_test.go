package machine_test

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/cuda"
	"github.com/flashgorgon/flashgorgon/machine"
	"github.com/flashgorgon/flashgorgon/nn"
	"github.com/flashgorgon/flashgorgon/ops/attention"
)

// needGPU skips a test without a CUDA device (and cuBLAS).
func needGPU(t *testing.T) {
	t.Helper()
	if _, err := machine.CUDA(); err != nil {
		t.Skipf("no CUDA backend: %v", err)
	}
}

// gpuTolerance is the relative error allowed between the CUDA and the CPU
// machine: the kernels sum in other orders (cuBLAS, tree reductions).
func gpuTolerance(dt tensor.Dtype) float64 {
	if dt == tensor.Float32 {
		return 1e-4
	}
	return 1e-10
}

// closeTo reports the first element of got farther from want than tol
// relative to want's largest magnitude (an index of -1: none).
func closeTo(got, want []float64, tol float64) (int, float64) {
	scale := 0.0
	for _, w := range want {
		scale = max(scale, math.Abs(w))
	}
	for i := range want {
		if d := math.Abs(got[i] - want[i]); !(d <= tol*max(scale, 1e-30)) {
			return i, d / max(scale, 1e-30)
		}
	}
	return -1, 0
}

// TestCUDAMatchesCPU runs every case on the CUDA and on the CPU machine and
// compares loss and gradients, and logs the ops that ran on the host.
func TestCUDAMatchesCPU(t *testing.T) {
	needGPU(t)
	for _, c := range cases {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(c.name+"/"+dt.String(), func(t *testing.T) {
				cpu, loss, _, grads := onMachine(t, c.build, dt)
				wantLoss, wantGrads := results(t, cpu, loss, grads)
				gpu, loss, _, grads := onMachine(t, c.build, dt, machine.OnDevice("cuda"))
				gotLoss, gotGrads := results(t, gpu, loss, grads)
				tol := gpuTolerance(dt)
				if i, e := closeTo([]float64{gotLoss}, []float64{wantLoss}, tol); i >= 0 {
					t.Errorf("loss %v on the GPU, %v on the CPU (relative error %.3g > %g)", gotLoss, wantLoss, e, tol)
				}
				for k := range wantGrads {
					if i, e := closeTo(gotGrads[k], wantGrads[k], tol); i >= 0 {
						t.Errorf("gradient %d [%d]: %v on the GPU, %v on the CPU (relative error %.3g > %g)", k, i, gotGrads[k][i], wantGrads[k][i], e, tol)
					}
				}
				r := gpu.Report()
				for _, h := range r.HostOps {
					t.Logf("on the host: %s", h)
				}
				t.Logf("%d of %d ops on the device", r.DeviceKernels, r.Ops)
			})
		}
	}
}

// TestCUDAHostOps lists the ops that have no CUDA kernel and run on the host
// with copies, in a GPT's training graph and in the graphs of Gorgonia's own
// general-purpose ops (TestCUDAMatchesCPU checks their values): there should
// be none.
func TestCUDAHostOps(t *testing.T) {
	needGPU(t)
	for _, name := range []string{"nn/gpt", "gorgonia/arithmetic", "gorgonia/mlp", "gorgonia/batched"} {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			t.Run(name+"/"+dt.String(), func(t *testing.T) {
				m, _, _, _ := onMachine(t, named(name), dt, machine.OnDevice("cuda"))
				r := m.Report()
				for _, h := range r.HostOps {
					t.Errorf("runs on the host: %s", h)
				}
				t.Logf("%d of %d ops run on %s", r.DeviceKernels, r.Ops, r.Device)
			})
		}
	}
}

// TestCUDAMemoryFlat: device memory in use does not grow from run to run.
func TestCUDAMemoryFlat(t *testing.T) {
	needGPU(t)
	m, loss, _, grads := onMachine(t, gpt(gptConfig, 2), tensor.Float32, machine.OnDevice("cuda"))
	results(t, m, loss, grads)
	before := cuda.MemoryInUse()
	for range 5 {
		results(t, m, loss, grads)
	}
	if after := cuda.MemoryInUse(); after != before {
		t.Fatalf("device memory in use %d bytes after 5 more runs, %d after the first", after, before)
	}
}

// TestCUDATraining trains two copies of a small GPT, one per machine, for a
// few AdamW steps on the same batches and compares the losses.
func TestCUDATraining(t *testing.T) {
	needGPU(t)
	cfg := nn.Config{Vocab: 29, Context: 16, Layers: 2, Heads: 4, KVHeads: 2, Width: 32, MLPRatio: 4}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			losses, params := map[string][]float64{}, map[string][]float64{}
			var mem []int64
			for _, dev := range []string{"cpu", "cuda"} {
				t.Setenv(machine.DeviceEnv, dev)
				model, err := nn.NewGPT(cfg, dt, rand.New(rand.NewSource(7)))
				if err != nil {
					t.Fatal(err)
				}
				r, err := model.NewRunner(4, cfg.Context, nn.Train)
				if err != nil {
					t.Fatal(err)
				}
				opt, err := nn.NewAdamW(r.Params(), 0.9, 0.95, 1e-8, 0.1)
				if err != nil {
					t.Fatal(err)
				}
				data := rand.New(rand.NewSource(8))
				for step := range 6 {
					tok, tgt := make([]int, 4*cfg.Context), make([]int, 4*cfg.Context)
					for i := range tok {
						tok[i], tgt[i] = data.Intn(cfg.Vocab), data.Intn(cfg.Vocab)
					}
					loss, _, err := r.TrainStep(opt, 1e-3, 1.0, tok, tgt, nil)
					if err != nil {
						t.Fatal(err)
					}
					losses[dev] = append(losses[dev], loss)
					if dev == "cuda" && step >= 1 {
						mem = append(mem, cuda.MemoryInUse())
					}
				}
				onDev, why := r.DeviceOptimizer()
				if onDev != (dev == "cuda") {
					t.Errorf("on %s: the optimizer runs on the device: %t (%v)", dev, onDev, why)
				}
				// Close brings the device's parameters to the host.
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
				for _, p := range model.Params() {
					params[dev] = append(params[dev], flat(t, p.Value)...)
				}
			}
			tol := 1e-3 // AdamW's first steps move each parameter by about ±lr whatever its gradient's size
			if dt == tensor.Float64 {
				tol = 1e-9
			}
			for i, want := range losses["cpu"] {
				got := losses["cuda"][i]
				if math.Abs(got-want) > tol*math.Abs(want) {
					t.Errorf("step %d: loss %v on the GPU, %v on the CPU", i, got, want)
				}
			}
			t.Logf("losses: cpu %v, cuda %v", losses["cpu"], losses["cuda"])
			if i, e := closeTo(params["cuda"], params["cpu"], tol); i >= 0 {
				t.Errorf("parameter element %d after training: %v on the GPU, %v on the CPU (relative error %.3g)", i, params["cuda"][i], params["cpu"][i], e)
			}
			for _, m := range mem[1:] {
				if m != mem[0] {
					t.Errorf("device memory in use per step: %v, want flat", mem)
					break
				}
			}
		})
	}
}

// BenchmarkCUDATrainStep times nn.Runner.TrainStep (forward, backward,
// clipping and AdamW, parameters and moments on the device, the loss and the
// gradient norm read back) on the CUDA machine at the two configurations of
// scripts/train-bench.sh, with a vocabulary of 96, float32.
func BenchmarkCUDATrainStep(b *testing.B) {
	if _, err := machine.CUDA(); err != nil {
		b.Skipf("no CUDA backend: %v", err)
	}
	for _, c := range []struct {
		name  string
		cfg   nn.Config
		batch int
	}{
		{"L2-W64-H4-C64-B32", nn.Config{Vocab: 96, Context: 64, Layers: 2, Heads: 4, Width: 64, MLPRatio: 4}, 32},
		{"L4-W256-H8-C256-B16", nn.Config{Vocab: 96, Context: 256, Layers: 4, Heads: 8, Width: 256, MLPRatio: 4}, 16},
	} {
		b.Run(c.name, func(b *testing.B) {
			model, err := nn.NewGPT(c.cfg, tensor.Float32, rand.New(rand.NewSource(1)))
			if err != nil {
				b.Fatal(err)
			}
			r, err := model.NewRunner(c.batch, c.cfg.Context, nn.Train)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			opt, err := nn.NewAdamW(r.Params(), 0.9, 0.95, 1e-8, 0.1)
			if err != nil {
				b.Fatal(err)
			}
			data := rand.New(rand.NewSource(2))
			n := c.batch * c.cfg.Context
			tok, tgt := make([]int, n), make([]int, n)
			for i := range tok {
				tok[i], tgt[i] = data.Intn(c.cfg.Vocab), data.Intn(c.cfg.Vocab)
			}
			if _, _, err := r.TrainStep(opt, 1e-3, 1, tok, tgt, nil); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, _, err := r.TrainStep(opt, 1e-3, 1, tok, tgt, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// TestOpen: the default and FLASHGORGON_DEVICE=cuda give the GPU when there
// is one and the CPU otherwise; FLASHGORGON_DEVICE=cpu gives the CPU;
// "cuda" by name without a GPU is an error.
func TestOpen(t *testing.T) {
	_, gpuErr := machine.CUDA()
	gpu := gpuErr == nil
	for _, c := range []struct {
		env, device string
		cpu         bool // want the CPU backend (else the GPU's, or an error without one)
	}{
		{"", "", !gpu},
		{"cpu", "", true},
		{"cuda", "", !gpu},
		{"cuda", "cpu", true},
		{"cpu", "cuda", false},
	} {
		t.Run(c.env+"/"+c.device, func(t *testing.T) {
			t.Setenv(machine.DeviceEnv, c.env)
			b, err := machine.Open(c.device)
			switch {
			case c.device == "cuda" && !gpu:
				if err == nil {
					t.Fatalf("Open(%q) without a GPU gave %s, want an error", c.device, b.Name())
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			defer b.Close()
			if got := b.Name() == "cpu"; got != c.cpu {
				t.Errorf("%s=%q, Open(%q): backend %s", machine.DeviceEnv, c.env, c.device, b.Name())
			}
		})
	}
}

// TestCUDAAttentionPrecisions runs attention with tensor-core shapes (d = 64, causal, GQA, key
// lengths) on the CUDA machine in each float32 precision and compares the gradients with the
// same graph in float64 (whose attention runs the exact float64 kernels): within each
// precision's rounding, and for TF32 and BF16 above float32's level, so a precision that never
// reached the kernels shows. (A float32 graph on the CPU machine is no reference here: with a
// device present the attention op itself runs its float32 kernels on it.) The BF16 backward
// reads the bfloat16 planes of its pre-pass from a scratch buffer the machine plans with the
// others.
func TestCUDAAttentionPrecisions(t *testing.T) {
	needGPU(t)
	for _, c := range []struct {
		prec         cuda.Precision
		lower, upper float64 // the largest gradient error, relative to the gradient's largest entry
	}{
		{cuda.PrecisionExact, 0, 5e-5}, // the float64 graph's inputs are not rounded to float32
		{cuda.PrecisionTF32, 1e-5, 2e-2},
		{cuda.PrecisionBF16, 1e-4, 8e-2},
	} {
		t.Run(c.prec.String(), func(t *testing.T) {
			build := attn(2, 4, 2, 70, 90, 64, attention.Options{Causal: true, KeyLengths: []int{90, 41}, Precision: c.prec}, false)
			ref, loss, _, grads := onMachine(t, build, tensor.Float64)
			_, wantGrads := results(t, ref, loss, grads)
			gpu, loss, _, grads := onMachine(t, build, tensor.Float32, machine.OnDevice("cuda"))
			_, gotGrads := results(t, gpu, loss, grads)
			if r := gpu.Report(); len(r.HostOps) > 0 {
				t.Errorf("ops on the host: %v", r.HostOps)
			}
			for k := range wantGrads {
				scale, e := 0.0, 0.0
				for i, w := range wantGrads[k] {
					scale = max(scale, math.Abs(w))
					e = max(e, math.Abs(gotGrads[k][i]-w))
				}
				e /= max(scale, 1e-30)
				if !(e >= c.lower && e <= c.upper) {
					t.Errorf("gradient %d: largest error %.3g relative to its largest entry, want it in [%g, %g]", k, e, c.lower, c.upper)
				}
				t.Logf("gradient %d: error %.3g", k, e)
			}
		})
	}
}
