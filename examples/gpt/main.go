// Command gpt trains a character-level GPT on a text corpus and samples from
// it.
//
// With no flags it reads the Go standard library's own .go sources (found
// through `go env GOROOT`), so it needs no download; -data FILE takes any
// text file. It trains for a fixed number of steps (-steps; -time adds a
// time limit, off by default, since a run cut short depends on the
// machine's load), so that the same flags give the same result on any
// machine that picks the same CPU kernels. It shows a progress bar (step,
// loss, tokens/s, time left), evaluates the loss on held-out text at
// intervals, prints a generated sample, writes a loss-curve PNG and a
// checkpoint into -out, and ends with a line
//
//	result: val_loss=… unigram_entropy=… tokens_per_s=… steady_tokens_per_s=… steps=… params=… time_s=…
//
// Both losses are in nats per character: the model has learned something
// beyond character frequencies when val_loss is well below unigram_entropy.
// -resume continues from the checkpoint in -out (same corpus flags), drawing
// exactly the batches an uninterrupted run would have drawn. A run whose
// loss or parameters stop being finite stops with an error and leaves the
// last finite checkpoint in place.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/examples/internal/train"
	"github.com/flashgorgon/flashgorgon/machine"
	"github.com/flashgorgon/flashgorgon/nn"
)

type options struct {
	train.Common
	data      string
	maxBytes  int
	maxVocab  int
	valFrac   float64
	out       string
	resume    bool
	context   int
	kvHeads   int
	mlpRatio  int
	dropout   float64
	minLR     float64
	decay     float64
	clip      float64
	evalBatch int
	sampleLen int
	prompt    string
	temp      float64
}

// A preset is the flags' defaults for one kind of machine.
type preset struct {
	train.Common
	context int
	minLR   float64
}

// cpuPreset is the model and schedule of a sweep that gave the lowest
// validation loss in about two minutes on 2 idle cores with the SIMD
// kernels: 438k parameters (width 128, 4 heads, 2 blocks, context 64),
// batch 64, 1400 steps at a peak learning rate of 6e-3. Sweep on the
// AVX-512 development machine (2026-11-24, cmd/cpubench/results/
// dev-2026-11-24-s10.md), nats/char in runs of about two minutes: this
// 1.5616 (122.7 s there, 48k tokens/s); batch 32 for 2600 steps 1.5939 (lr 5e-3), 2500
// steps 1.6250 (3e-3), 2700 steps 1.5997 (8e-3); batch 64 at lr 8e-3
// 1.5684, batch 128 for 700 steps 1.6026; 3 blocks 1.6318, width 160
// 1.6325, 4 blocks 1.6819, width 192 1.7120, the previous default (width
// 256, 1.66M parameters) in 850 steps 1.7276: at two minutes the smaller
// model's extra steps win. That default needed 1800 steps (249 s here)
// for 1.5565. The sample it prints (temperature 0.8) begins
//
//	func (pfunc(x uintptr, addrlen) (perment) {
//		padding := offset, err := xythat {
//			if len(z) > 8)
//		}
//		if v == "x {
//			return false := len(*line) == c.darwardIndex == c.numStricKindScan && stricVals
var cpuPreset = preset{
	Common:  train.Common{Steps: 1400, Batch: 64, EvalEvery: 200, Warmup: 50, Layers: 2, Heads: 4, Width: 128, LR: 6e-3, Seed: 1},
	context: 64, minLR: 1e-3,
}

// gpuPreset is the default when the machine runs on a GPU: about 10.7M
// parameters (6 blocks of width 384, 6 heads) over a context of 256,
// sized to train in about two minutes on an H100 (cmd/trainbench/results).
var gpuPreset = preset{
	Common:  train.Common{Steps: 3000, Batch: 32, EvalEvery: 250, Warmup: 100, Layers: 6, Heads: 6, Width: 384, LR: 1e-3, Seed: 1},
	context: 256, minLR: 1e-4,
}

// presetFor returns the defaults for the device the machine runs on.
func presetFor(device string) preset {
	if device == "cpu" {
		return cpuPreset
	}
	return gpuPreset
}

// newFlags defines the program's flags, writing into o, with the defaults
// of the preset d.
func newFlags(o *options, d preset, stderr io.Writer) *train.Flags {
	f := train.NewFlags("gpt", stderr)
	o.Common.Register(f, d.Common)
	f.StringVar(&o.data, "data", "", "text file to train on (default: the Go standard library's .go sources)")
	f.Int(&o.maxBytes, "max_bytes", 4<<20, train.NonNegative, "use at most this many bytes of the corpus (0: all)")
	f.Int(&o.maxVocab, "max_vocab", 128, train.NonNegative, "keep the most frequent characters; the rest share one unknown id (0: keep all; 1 is too few)")
	f.Float(&o.valFrac, "val_frac", 0.1, train.Range{Lo: 0, Hi: 1, LoOpen: true, HiOpen: true}, "fraction of the corpus (its tail) held out for validation")
	f.StringVar(&o.out, "out", filepath.Join("out", "gpt"), "output folder for the checkpoint and the loss curve")
	f.BoolVar(&o.resume, "resume", false, "continue from the checkpoint in -out up to -steps (its model configuration, vocabulary and seed replace the flags)")
	f.Int(&o.context, "context", d.context, train.AtLeast(1), "context length in characters")
	f.Int(&o.kvHeads, "kv_heads", 0, train.NonNegative, "key/value heads for grouped-query attention (0: one per head)")
	f.Int(&o.mlpRatio, "mlp_ratio", 4, train.AtLeast(1), "MLP hidden width as a multiple of the model width")
	f.Float(&o.dropout, "dropout", 0, train.Range{Lo: 0, Hi: 1, HiOpen: true}, "dropout probability during training")
	f.Float(&o.minLR, "min_lr", d.minLR, train.NonNegative, "learning rate at the end of the cosine decay (at most -lr)")
	f.Float(&o.decay, "weight_decay", 0.1, train.NonNegative, "AdamW weight decay (matrices and embeddings)")
	f.Float(&o.clip, "clip", 1, train.NonNegative, "clip gradients to this global norm (0: off)")
	f.Int(&o.evalBatch, "eval_batches", 16, train.AtLeast(1), "batches per evaluation")
	f.Int(&o.sampleLen, "sample_len", 300, train.NonNegative, "characters to generate at the end")
	f.StringVar(&o.prompt, "prompt", "func (", "start of the generated sample")
	f.Float(&o.temp, "temperature", 0.8, train.NonNegative, "sampling temperature (0: greedy)")
	f.Check(func() error {
		switch {
		case o.maxVocab == 1:
			return errors.New("-max_vocab 1 leaves no room for any character: use 0 (all) or at least 2")
		case o.kvHeads > 0 && o.Heads%o.kvHeads != 0:
			return fmt.Errorf("-heads %d must be a multiple of -kv_heads %d", o.Heads, o.kvHeads)
		case o.minLR > o.LR:
			return fmt.Errorf("-min_lr %g exceeds -lr %g: the schedule decays from -lr to -min_lr", o.minLR, o.LR)
		}
		return nil
	})
	return f
}

func main() { train.Main("gpt", run) }

// checkpoint metadata keys of this program (besides nn's and
// train.HistoryKey).
const (
	metaConfig = "config"
	metaVocab  = "vocab"
	metaSeed   = "seed"
)

func run(args []string, stdout, stderr io.Writer) error {
	start := time.Now()
	// The device decides the defaults: the runners open the same one
	// (machine.Open with FLASHGORGON_DEVICE), so this only asks which.
	dev, err := machine.Open("")
	if err != nil {
		return err
	}
	device := dev.Name()
	if err := dev.Close(); err != nil {
		return err
	}
	o := &options{}
	if err := newFlags(o, presetFor(device), stderr).Parse(args); err != nil {
		return err
	}
	if err := train.PrepareOut(o.out); err != nil {
		return err
	}
	ckptPath := filepath.Join(o.out, "ckpt.safetensors")
	var (
		ck   *nn.Checkpoint
		hist train.History
	)
	if o.resume {
		if ck, err = nn.ReadCheckpoint(ckptPath); err != nil {
			return fmt.Errorf("-resume: %w", err)
		}
		if ck.Step > o.Steps {
			return fmt.Errorf("-resume: the checkpoint is at step %d, past -steps %d", ck.Step, o.Steps)
		}
		if hist, err = train.ParseHistory(ck.Metadata[train.HistoryKey]); err != nil {
			return fmt.Errorf("-resume: checkpoint %w", err)
		}
		hist.Truncate(ck.Step)
	}
	text, source, err := readCorpus(o.data, o.maxBytes)
	if err != nil {
		return err
	}
	if len(text) == 0 {
		return fmt.Errorf("the corpus %s is empty", source)
	}

	// Model configuration and vocabulary: fresh, or from the checkpoint.
	var (
		cfg nn.Config
		voc *vocab
	)
	if ck != nil {
		if cfg, err = nn.ParseConfig(ck.Metadata[metaConfig]); err != nil {
			return fmt.Errorf("-resume: %w", err)
		}
		var rs []rune
		if err := json.Unmarshal([]byte(ck.Metadata[metaVocab]), &rs); err != nil || len(rs) != cfg.Vocab {
			return fmt.Errorf("-resume: checkpoint vocabulary unreadable or of the wrong size (%v)", err)
		}
		voc = newVocab(rs)
		if s := ck.Metadata[metaSeed]; s != strconv.FormatInt(o.Seed, 10) {
			if o.Seed, err = strconv.ParseInt(s, 10, 64); err != nil {
				return fmt.Errorf("-resume: checkpoint seed %q: %w", s, err)
			}
			fmt.Fprintf(stdout, "note: the checkpoint was trained with -seed %s; continuing with the checkpoint's seed\n", s)
		}
		o.context, o.dropout = cfg.Context, cfg.Dropout
	} else {
		voc = buildVocab(text, o.maxVocab)
		cfg = nn.Config{
			Vocab: voc.size(), Context: o.context, Layers: o.Layers, Heads: o.Heads, KVHeads: o.kvHeads,
			Width: o.Width, MLPRatio: o.mlpRatio, Dropout: o.dropout,
		}
	}
	ids, err := voc.encode(text)
	if err != nil {
		return fmt.Errorf("the corpus does not fit the checkpoint's vocabulary: %w", err)
	}
	nVal := int(float64(len(ids)) * o.valFrac)
	trainIDs, val := ids[:len(ids)-nVal], ids[len(ids)-nVal:]
	if len(trainIDs) <= o.context+1 || len(val) <= o.context+1 {
		return fmt.Errorf("the corpus %s (%d characters: %d for training, %d held out by -val_frac %g) is too short for -context %d: each part needs more than %d",
			source, len(ids), len(trainIDs), len(val), o.valFrac, o.context, o.context+1)
	}
	unigram := unigramEntropy(ids, voc.size())

	// The tensors, and the validation windows' starts.
	need := train.Footprint(cfg, o.Batch, cfg.Context, o.Batch) + 8*float64(o.Batch)*float64(o.evalBatch)
	if err := train.CheckMemory(need, "-batch, -eval_batches, -context, -width, -layers or -mlp_ratio"); err != nil {
		return err
	}
	model, err := nn.NewGPT(cfg, tensor.Float32, stepRNG(o.Seed, -1))
	if err != nil {
		if ck != nil {
			return fmt.Errorf("-resume: %w", err)
		}
		return err
	}

	trainR, err := model.NewRunner(o.Batch, o.context, nn.Train)
	if err != nil {
		return err
	}
	evalR, err := model.NewRunner(o.Batch, o.context, nn.Eval)
	if err != nil {
		return err
	}
	opt, err := nn.NewAdamW(trainR.Params(), 0.9, 0.95, 1e-8, o.decay)
	if err != nil {
		return err
	}
	step := 0
	if ck != nil {
		if err := ck.Restore(model.Params(), opt); err != nil {
			return fmt.Errorf("-resume: %w", err)
		}
		step = ck.Step
	}
	sched := nn.CosineSchedule{Peak: o.LR, Min: o.minLR, Warmup: o.Warmup, Total: o.Steps}

	fmt.Fprintf(stdout, "corpus: %s: %d characters (%d training, %d held out), vocabulary %d\n", source, len(ids), len(trainIDs), len(val), voc.size())
	kv := cfg.KVHeads
	if kv == 0 {
		kv = cfg.Heads
	}
	fmt.Fprintf(stdout, "device: %s\n", device)
	fmt.Fprintf(stdout, "model: %d layers, width %d, %d heads (%d kv), context %d, %d parameters; batch %d, steps %d→%d\n",
		cfg.Layers, cfg.Width, cfg.Heads, kv, cfg.Context, model.NumParams(), o.Batch, step, o.Steps)
	fmt.Fprintf(stdout, "unigram entropy of the corpus: %.4f nats/char\n", unigram)

	// Validation: fixed windows spread evenly over the held-out text.
	evalStarts := make([]int, o.Batch*o.evalBatch)
	for i := range evalStarts {
		evalStarts[i] = i * (len(val) - o.context - 1) / len(evalStarts)
	}
	tokens, targets := make([]int, o.Batch*o.context), make([]int, o.Batch*o.context)
	vb, err := json.Marshal(voc.runes)
	if err != nil {
		return fmt.Errorf("encoding the vocabulary: %w", err)
	}
	meta := map[string]string{metaConfig: cfg.JSON(), metaVocab: string(vb), metaSeed: strconv.FormatInt(o.Seed, 10)}
	saved := -1 // the step of the last checkpoint this run wrote
	valLoss := 0.0
	loop := train.Loop{
		Steps: o.Steps, EvalEvery: o.EvalEvery, TimeLimit: o.Time, Tokens: o.Batch * o.context, Out: stdout,
		Step: func(s int) (float64, error) {
			rng := stepRNG(o.Seed, s)
			windows(trainIDs, randomStarts(rng, len(trainIDs), o.context, o.Batch), o.context, tokens, targets)
			loss, err := train.TrainStep(trainR, opt, sched.LR(s), o.clip, tokens, targets, rng)
			if err == nil {
				hist.Train = append(hist.Train, loss)
			}
			return loss, err
		},
		Eval: func(done int) (string, bool, error) {
			sum := 0.0
			for b := 0; b < o.evalBatch; b++ {
				windows(val, evalStarts[b*o.Batch:(b+1)*o.Batch], o.context, tokens, targets)
				l, err := evalR.Run(tokens, targets, nil)
				if err != nil {
					return "", false, err
				}
				sum += l
			}
			valLoss = sum / float64(o.evalBatch)
			if !train.Finite(valLoss) {
				return "", false, &train.Diverged{What: fmt.Sprintf("validation loss %g", valLoss)}
			}
			hist.AddVal(done, valLoss)
			if err := train.SaveCheckpoint(ckptPath, model.Params(), opt, done, &hist, meta); err != nil {
				return "", false, err
			}
			saved = done
			return fmt.Sprintf("val loss %.4f", valLoss), false, nil
		},
	}
	if !o.Quiet {
		loop.Progress = stderr
	}
	res, err := loop.Run(step)
	if train.IsDiverged(err) {
		keep := "no checkpoint was written"
		switch {
		case saved >= 0:
			keep = fmt.Sprintf("%s keeps step %d, the last finite state", ckptPath, saved)
		case ck != nil:
			keep = fmt.Sprintf("%s still holds step %d", ckptPath, ck.Step)
		}
		return fmt.Errorf("%w; %s (a lower -lr than %g may help)", err, keep, o.LR)
	}
	if err != nil {
		return err
	}
	pngPath := filepath.Join(o.out, "loss.png")
	if err := hist.Plot(pngPath, "character-level GPT", "loss (nats/char)", train.Ref{Label: "unigram entropy", Y: unigram}); err != nil {
		return err
	}
	csvPath := filepath.Join(o.out, "loss.csv")
	if err := hist.WriteCSV(csvPath); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s, %s and %s\n", ckptPath, pngPath, csvPath)

	// A sample, from a runner of batch 1 that shares the trained parameters.
	genR, err := model.NewRunner(1, o.context, nn.Infer)
	if err != nil {
		return err
	}
	prompt := voc.encodePrompt(o.prompt)
	out, err := nn.Generate(genR, [][]int{prompt}, o.sampleLen, o.temp, stepRNG(o.Seed, -2))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "sample (temperature %g):\n%s%s\n", o.temp, voc.decode(prompt), voc.decode(out[0]))
	fmt.Fprintf(stdout, "result: val_loss=%.4f unigram_entropy=%.4f tokens_per_s=%.0f steady_tokens_per_s=%.0f steps=%d params=%d time_s=%.1f\n",
		valLoss, unigram, res.TokensPerSecond(o.Batch*o.context), res.SteadyTokensPerSecond(o.Batch*o.context), res.Done, model.NumParams(), time.Since(start).Seconds())
	return nil
}
