// Command trainbench times nn's GPT training step, the Go side of gpt_twin.py: the same
// flags, the same work (random tokens and targets of a fixed batch, float32, AdamW with betas
// 0.9, 0.95, eps 1e-8 and decay 0.1, clipping at 1.0, learning rate 1e-3), the same JSON line.
//
//	go build -o trainbench ./cmd/trainbench
//	FLASHGORGON_DEVICE=cpu ./trainbench -threads 16 -layers 4 -width 256 -heads 8 -context 256 -batch 16 -steps 12 -cpuprofile step.prof
//
// examples/gpt (what scripts/train-bench.sh times) also draws its batches from a corpus and
// reads the loss every step; this times nn.Runner.TrainStep alone, on one batch, as the PyTorch
// twin does. -cpuprofile writes a CPU profile of the timed steps only (not the model's
// construction, the graph's planning or the warm-up step), which `go tool pprof -top` reads
// without the binary. The device is the machine's (package machine): FLASHGORGON_DEVICE=cpu
// keeps it on the CPU; -threads sets GOMAXPROCS.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/nn"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "trainbench:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("trainbench", flag.ContinueOnError)
	threads := fs.Int("threads", 0, "GOMAXPROCS (0: leave as is)")
	layers := fs.Int("layers", 2, "transformer blocks")
	width := fs.Int("width", 64, "model width")
	heads := fs.Int("heads", 4, "attention heads")
	context := fs.Int("context", 64, "sequence length")
	batch := fs.Int("batch", 32, "sequences per step")
	steps := fs.Int("steps", 50, "timed steps (after one warm-up step)")
	vocab := fs.Int("vocab", 128, "vocabulary size")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the timed steps to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *threads < 0 || *steps < 1 || *batch < 1 || *context < 1 || *vocab < 1 {
		return fmt.Errorf("-threads %d, -steps %d, -batch %d, -context %d, -vocab %d: want threads ≥ 0 and the others ≥ 1",
			*threads, *steps, *batch, *context, *vocab)
	}
	if *threads > 0 {
		runtime.GOMAXPROCS(*threads)
	}
	cfg := nn.Config{Vocab: *vocab, Context: *context, Layers: *layers, Heads: *heads, Width: *width, MLPRatio: 4}
	rng := rand.New(rand.NewSource(1))
	m, err := nn.NewGPT(cfg, tensor.Float32, rng)
	if err != nil {
		return err
	}
	r, err := m.NewRunner(*batch, *context, nn.Train)
	if err != nil {
		return err
	}
	defer r.Close()
	opt, err := nn.NewAdamW(r.Params(), 0.9, 0.95, 1e-8, 0.1)
	if err != nil {
		return err
	}
	n := *batch * *context
	tok, tgt := make([]int, n), make([]int, n)
	for i := range tok {
		tok[i], tgt[i] = rng.Intn(*vocab), rng.Intn(*vocab)
	}
	step := func() error {
		_, _, err := r.TrainStep(opt, 1e-3, 1, tok, tgt, rng)
		return err
	}
	if err := step(); err != nil { // warm-up
		return err
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	t0 := time.Now()
	for s := 0; s < *steps; s++ {
		if err := step(); err != nil {
			return err
		}
	}
	dt := time.Since(t0).Seconds()
	params := 0
	for _, p := range r.Params() {
		params += p.Value.Shape().TotalSize()
	}
	return json.NewEncoder(stdout).Encode(map[string]any{
		"threads": runtime.GOMAXPROCS(0), "layers": *layers, "width": *width, "heads": *heads,
		"context": *context, "batch": *batch, "steps": *steps, "vocab": *vocab, "params": params,
		"tokens_per_s": float64(*steps*n) / dt,
	})
}
