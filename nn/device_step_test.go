package nn

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/cuda"
	"github.com/flashgorgon/flashgorgon/machine"
)

// needCUDA skips a test without the machine's CUDA backend.
func needCUDA(tb testing.TB) {
	tb.Helper()
	if _, err := machine.CUDA(); err != nil {
		tb.Skipf("no CUDA backend: %v", err)
	}
}

// deviceRunner makes a training runner on the GPU with its device step made and replay set
// as asked (before the first step, which records when replay is on).
func deviceRunner(tb testing.TB, cfg Config, batch int, replay bool) (*Runner, *AdamW, machine.Replayer) {
	tb.Helper()
	tb.Setenv(machine.DeviceEnv, "cuda")
	model, err := NewGPT(cfg, tensor.Float32, rand.New(rand.NewSource(11)))
	if err != nil {
		tb.Fatal(err)
	}
	r, err := model.NewRunner(batch, cfg.Context, Train)
	if err != nil {
		tb.Fatal(err)
	}
	opt, err := NewAdamW(r.Params(), 0.9, 0.95, 1e-8, 0.1)
	if err != nil {
		tb.Fatal(err)
	}
	r.mu.Lock()
	ds := r.deviceStepFor(opt)
	r.mu.Unlock()
	if ds == nil {
		tb.Fatalf("no device step: %v", r.devErr)
	}
	rp, ok := ds.dev.(machine.Replayer)
	if !ok {
		tb.Fatalf("the CUDA optimizer %T does not replay", ds.dev)
	}
	rp.SetReplay(replay)
	return r, opt, rp
}

// batchOf draws a batch of n tokens and targets.
func batchOf(rng *rand.Rand, n, vocab int) (tok, tgt []int) {
	tok, tgt = make([]int, n), make([]int, n)
	for i := range tok {
		tok[i], tgt[i] = rng.Intn(vocab), rng.Intn(vocab)
	}
	return tok, tgt
}

// TestDeviceStepReplay trains two copies of a GPT on the GPU on the same batches (a new batch,
// dropout masks and learning rate every step), one launching every kernel of every step, one
// replaying the step recorded at its first TrainStep (a CUDA graph), and compares the losses,
// the gradient norms and the parameters after training: a replay must read each step's
// tokens, targets, masks and learning rate from memory, never the first step's. It also checks
// that the replaying copy did record, and that device memory stays flat over the replays.
// (TestCUDATraining in package machine compares the replaying GPU with the CPU.)
func TestDeviceStepReplay(t *testing.T) {
	needCUDA(t)
	for _, dropout := range []float64{0, 0.1} {
		t.Run(fmt.Sprintf("dropout=%g", dropout), func(t *testing.T) {
			cfg := Config{Vocab: 29, Context: 16, Layers: 2, Heads: 4, KVHeads: 2, Width: 32, MLPRatio: 4, Dropout: dropout}
			const batch, steps = 4, 25
			type trace struct {
				loss, norm, params []float64
				free               []int64
				used               []int64
				recorded           bool
			}
			var runs [2]trace
			for k, replay := range []bool{false, true} {
				r, opt, rp := deviceRunner(t, cfg, batch, replay)
				data, drop := rand.New(rand.NewSource(12)), rand.New(rand.NewSource(13))
				tr := &runs[k]
				for step := range steps {
					tok, tgt := batchOf(data, batch*cfg.Context, cfg.Vocab)
					lr := 1e-3 * (1 + math.Cos(math.Pi*float64(step)/steps)) / 2 // a new value every step
					loss, norm, err := r.TrainStep(opt, lr, 0.5, tok, tgt, drop)
					if err != nil {
						t.Fatalf("replay %t, step %d: %v", replay, step, err)
					}
					tr.loss, tr.norm = append(tr.loss, loss), append(tr.norm, norm)
					if step >= 1 {
						free, _, err := cuda.MemInfo()
						if err != nil {
							t.Fatal(err)
						}
						tr.free, tr.used = append(tr.free, free), append(tr.used, cuda.MemoryInUse())
					}
				}
				tr.recorded = rp.Recorded()
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
				for _, p := range r.Model.Params() {
					tr.params = append(tr.params, toF64(p.Value)...)
				}
			}
			plain, rep := runs[0], runs[1]
			if plain.recorded || !rep.recorded {
				t.Fatalf("recorded: %t with replay off, %t with replay on; want false, true", plain.recorded, rep.recorded)
			}
			same := true
			worst := 0.0
			for i := range plain.loss {
				for _, x := range [][2]float64{{plain.loss[i], rep.loss[i]}, {plain.norm[i], rep.norm[i]}} {
					if x[0] != x[1] {
						same = false
					}
					e := math.Abs(x[0]-x[1]) / math.Max(math.Abs(x[0]), 1e-30)
					worst = math.Max(worst, e)
					if !(e <= 1e-5) {
						t.Errorf("step %d: loss %v norm %v replayed, %v %v launched one by one", i, rep.loss[i], rep.norm[i], plain.loss[i], plain.norm[i])
					}
				}
			}
			pw := 0.0
			for i := range plain.params {
				if plain.params[i] != rep.params[i] {
					same = false
				}
				pw = math.Max(pw, math.Abs(plain.params[i]-rep.params[i]))
			}
			if pw > 1e-4 {
				t.Errorf("parameters after %d steps differ by up to %g between replay and plain launches", steps, pw)
			}
			t.Logf("bit-identical: %t (losses and norms: largest relative difference %.3g; parameters: largest difference %.3g); losses %v", same, worst, pw, rep.loss)
			for _, tr := range runs {
				for i := range tr.used {
					if tr.used[i] != tr.used[0] || tr.free[0]-tr.free[i] > 2<<20 {
						t.Errorf("device memory from step 2 on: package %v bytes, device free %v bytes: want flat", tr.used, tr.free)
						break
					}
				}
			}
			t.Logf("device free memory at steps 2 and %d: %d, %d bytes (replay)", steps, rep.free[0], rep.free[len(rep.free)-1])
		})
	}
}

// TestDeviceStepNonFinite: a step whose loss is not finite is an error and changes no
// parameter and no moment on the device, with replay (the recorded AdamW skips itself) and
// without, and the next good step goes on from the same state.
func TestDeviceStepNonFinite(t *testing.T) {
	needCUDA(t)
	cfg := Config{Vocab: 29, Context: 16, Layers: 1, Heads: 2, Width: 16, MLPRatio: 4}
	for _, replay := range []bool{false, true} {
		t.Run(fmt.Sprintf("replay=%t", replay), func(t *testing.T) {
			r, opt, _ := deviceRunner(t, cfg, 2, replay)
			defer r.Close()
			data := rand.New(rand.NewSource(5))
			for range 3 {
				tok, tgt := batchOf(data, 2*cfg.Context, cfg.Vocab)
				if _, _, err := r.TrainStep(opt, 1e-3, 1, tok, tgt, nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Sync(); err != nil {
				t.Fatal(err)
			}
			// Poison the token embedding: every loss is NaN from here.
			emb := r.Params()[0]
			set := func(x float64) {
				switch d := emb.Value.Data().(type) {
				case []float32:
					for i := range d {
						d[i] = float32(x)
					}
				case []float64:
					for i := range d {
						d[i] = x
					}
				}
			}
			set(math.Inf(1))
			markHostNewer(r.Params())
			var before []float64
			for i, p := range r.Params() {
				before = append(before, toF64(p.Value)...)
				before = append(before, toF64(opt.m[i])...)
				before = append(before, toF64(opt.v[i])...)
			}
			t0 := opt.t
			tok, tgt := batchOf(data, 2*cfg.Context, cfg.Vocab)
			loss, norm, err := r.TrainStep(opt, 1e-3, 1, tok, tgt, nil)
			if err == nil || !strings.Contains(err.Error(), "not finite") {
				t.Fatalf("a step with a poisoned embedding: loss %v norm %v, error %v; want a not-finite error", loss, norm, err)
			}
			if opt.t != t0 {
				t.Errorf("the step count moved from %d to %d on a skipped step", t0, opt.t)
			}
			r.dev.newer.Store(true) // read the device's values back whatever the runner thinks
			if err := r.Sync(); err != nil {
				t.Fatal(err)
			}
			var after []float64
			for i, p := range r.Params() {
				after = append(after, toF64(p.Value)...)
				after = append(after, toF64(opt.m[i])...)
				after = append(after, toF64(opt.v[i])...)
			}
			for i := range before {
				if before[i] != after[i] && !(math.IsNaN(before[i]) && math.IsNaN(after[i])) {
					t.Fatalf("value %d changed on a skipped step: %v, was %v", i, after[i], before[i])
				}
			}
			// Heal the embedding: training goes on.
			set(0.01)
			markHostNewer(r.Params())
			if _, _, err := r.TrainStep(opt, 1e-3, 1, tok, tgt, nil); err != nil {
				t.Fatalf("a good step after a skipped one: %v", err)
			}
			if opt.t != t0+1 {
				t.Errorf("step count %d after a good step, want %d", opt.t, t0+1)
			}
		})
	}
}

// trainBenchConfigs are scripts/train-bench.sh's two configurations (vocabulary 96, float32).
var trainBenchConfigs = []struct {
	name  string
	cfg   Config
	batch int
}{
	{"L2-W64-H4-C64-B32", Config{Vocab: 96, Context: 64, Layers: 2, Heads: 4, Width: 64, MLPRatio: 4}, 32},
	{"L4-W256-H8-C256-B16", Config{Vocab: 96, Context: 256, Layers: 4, Heads: 8, Width: 256, MLPRatio: 4}, 16},
}

// BenchmarkCUDAStepModes times a training step on the GPU three ways, at the two
// configurations of scripts/train-bench.sh (vocabulary 96, float32): calls, the run, the
// gradient norm, the loss and the clip and AdamW each handed to the cuda worker thread call by
// call (every launcher call a hand-off: the path before machine.TrainStep); do, the whole
// step in one hand-off with every kernel launched; graph, the whole step one hand-off and one
// CUDA graph launch.
func BenchmarkCUDAStepModes(b *testing.B) {
	needCUDA(b)
	for _, c := range trainBenchConfigs {
		for _, mode := range []string{"calls", "do", "graph"} {
			b.Run(c.name+"/"+mode, func(b *testing.B) {
				r, opt, _ := deviceRunner(b, c.cfg, c.batch, mode == "graph")
				defer r.Close()
				n := c.batch * c.cfg.Context
				tok, tgt := batchOf(rand.New(rand.NewSource(2)), n, c.cfg.Vocab)
				step := func() {
					if mode != "calls" {
						if _, _, err := r.TrainStep(opt, 1e-3, 1, tok, tgt, nil); err != nil {
							b.Fatal(err)
						}
						return
					}
					r.mu.Lock()
					defer r.mu.Unlock()
					if err := r.exec(tok, tgt, nil); err != nil {
						b.Fatal(err)
					}
					if _, err := r.dev.dev.GradNorm(); err != nil {
						b.Fatal(err)
					}
					if _, err := r.loss(); err != nil {
						b.Fatal(err)
					}
					opt.t++
					if err := r.dev.dev.Step(machine.AdamWStep{LR: 1e-3, Beta1: opt.Beta1, Beta2: opt.Beta2, Eps: opt.Eps, WeightDecay: opt.WeightDecay, Clip: 1, Step: opt.t}); err != nil {
						b.Fatal(err)
					}
				}
				step()
				step() // (the graph is recorded at the second step)
				b.ResetTimer()
				for b.Loop() {
					step()
				}
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}
