package train

import (
	"math/rand"
	"runtime"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/nn"
)

// TestFootprintIsALowerBound builds the model, a training and an
// evaluation runner, does a training step and an evaluation, and checks
// that the heap then holds at least Footprint bytes, and not more than 40
// times as much (the estimate is meant to catch absurd flags, so it must
// not be far off). It measures the CPU backend, where every tensor lives on
// the Go heap.
func TestFootprintIsALowerBound(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 100 MB")
	}
	cfg := nn.Config{Vocab: 128, Context: 64, Layers: 2, Heads: 4, Width: 64, MLPRatio: 4}
	batch := 32
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := nn.NewGPT(cfg, tensor.Float32, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	trainR, err := m.NewRunner(batch, cfg.Context, nn.Train)
	if err != nil {
		t.Fatal(err)
	}
	evalR, err := m.NewRunner(batch, cfg.Context, nn.Eval)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := nn.NewAdamW(trainR.Params(), 0.9, 0.95, 1e-8, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	tokens := make([]int, batch*cfg.Context)
	for i := range tokens {
		tokens[i] = i % cfg.Vocab
	}
	if _, _, err := trainR.TrainStep(opt, 1e-3, 1, tokens, tokens, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := evalR.Run(tokens, tokens, nil); err != nil {
		t.Fatal(err)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	used := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	est := Footprint(cfg, batch, cfg.Context, batch)
	t.Logf("Footprint %.1f MB, heap grew by %.1f MB", est/1e6, used/1e6)
	if !(est <= used && used <= 40*est) {
		t.Fatalf("Footprint %.0f bytes, heap grew by %.0f: want Footprint ≤ heap ≤ 40·Footprint", est, used)
	}
	runtime.KeepAlive(trainR)
	runtime.KeepAlive(evalR)
	runtime.KeepAlive(opt)
}

func TestCheckMemory(t *testing.T) {
	if _, ok := memTotal(); !ok {
		t.Skip("no /proc/meminfo")
	}
	if err := CheckMemory(1<<20, "-x"); err != nil {
		t.Fatalf("1 MiB: %v", err)
	}
	// 2^60 bytes (an exbibyte) is more than any machine has.
	err := CheckMemory(1<<60, "-batch or -width")
	if err == nil || !strings.Contains(err.Error(), "need at least 1073741824.0 GiB") || !strings.Contains(err.Error(), "lower -batch or -width") {
		t.Fatalf("error %v", err)
	}
	// Absurd flags give a finite, huge estimate, not an overflow.
	huge := Footprint(nn.Config{Vocab: 1 << 40, Context: 1 << 40, Layers: 1 << 40, Width: 1 << 40, MLPRatio: 1 << 40}, 1<<40, 1<<40, 1<<40)
	if !(huge > 1e60) {
		t.Fatalf("Footprint of absurd flags %g", huge)
	}
}
