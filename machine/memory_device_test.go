package machine_test

import (
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/cuda"
	"github.com/flashgorgon/flashgorgon/machine"
	"github.com/flashgorgon/flashgorgon/nn"
)

// TestCUDATrainingMemoryFlat trains a small GPT for 1000 AdamW steps on the
// CUDA machine and checks that device memory does not grow: the package's
// own allocations (cuda.MemoryInUse) stay what they were after step 1, and
// the whole device's use as the driver reports it (total − free from
// cuMemGetInfo, which also sees cuBLAS's and the CUDA graph's memory) stays
// what it was after step 2, the step that records the graph (on the H100 the
// recording takes 2 MiB once, logged), sampled every 100 steps.
func TestCUDATrainingMemoryFlat(t *testing.T) {
	needGPU(t)
	t.Setenv(machine.DeviceEnv, "cuda")
	cfg := nn.Config{Vocab: 64, Context: 32, Layers: 2, Heads: 4, KVHeads: 4, Width: 64, MLPRatio: 4}
	model, err := nn.NewGPT(cfg, tensor.Float32, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	const batch = 8
	r, err := model.NewRunner(batch, cfg.Context, nn.Train)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := nn.NewAdamW(r.Params(), 0.9, 0.95, 1e-8, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	data := rand.New(rand.NewSource(2))
	tok, tgt := make([]int, batch*cfg.Context), make([]int, batch*cfg.Context)
	deviceUse := func() int64 {
		free, total, err := cuda.MemInfo()
		if err != nil {
			t.Fatal(err)
		}
		return total - free
	}
	var pool0, dev0, dev1 int64
	for step := 1; step <= 1000; step++ {
		for i := range tok {
			tok[i], tgt[i] = data.Intn(cfg.Vocab), data.Intn(cfg.Vocab)
		}
		if _, _, err := r.TrainStep(opt, 1e-3, 1.0, tok, tgt, nil); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		switch {
		case step == 1:
			pool0, dev0 = cuda.MemoryInUse(), deviceUse()
			t.Logf("step 1: %d bytes in the package's pool, %d bytes used on the device", pool0, dev0)
		case step == 2:
			dev1 = deviceUse()
			t.Logf("step 2 (the step recorded as a CUDA graph): device %+d bytes against step 1", dev1-dev0)
		case step%100 == 0:
			pool, dev := cuda.MemoryInUse(), deviceUse()
			t.Logf("step %d: pool %+d bytes against step 1, device %+d bytes against step 2", step, pool-pool0, dev-dev1)
			if pool != pool0 || dev != dev1 {
				t.Errorf("step %d: pool %d bytes (step 1: %d), device %d bytes (step 2: %d): memory grew",
					step, pool, pool0, dev, dev1)
			}
		}
	}
}
