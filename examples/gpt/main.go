// Command gpt trains a character-level GPT on a text corpus and samples from
// it.
//
// With no flags it reads the Go standard library's own .go sources (found
// through `go env GOROOT`), so it needs no download; -data FILE takes any
// text file. It shows a progress bar (step, loss, tokens/s), evaluates the
// loss on held-out text at intervals, prints a generated sample, writes a
// loss-curve PNG and a checkpoint into -out, and ends with a line
//
//	result: val_loss=… unigram_entropy=… tokens_per_s=… steps=… params=… time_s=…
//
// Both losses are in nats per character: the model has learned something
// beyond character frequencies when val_loss is well below unigram_entropy.
// -resume continues from the checkpoint in -out (same corpus flags), drawing
// exactly the batches an uninterrupted run would have drawn.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/nn"
)

type options struct {
	data      string
	maxBytes  int
	maxVocab  int
	valFrac   float64
	out       string
	resume    bool
	seed      int64
	steps     int
	batch     int
	context   int
	layers    int
	heads     int
	kvHeads   int
	width     int
	mlpRatio  int
	dropout   float64
	lr        float64
	minLR     float64
	warmup    int
	decay     float64
	clip      float64
	evalEvery int
	evalBatch int
	sampleLen int
	prompt    string
	temp      float64
	budget    time.Duration
	quiet     bool
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("gpt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.data, "data", "", "text file to train on (default: the Go standard library's .go sources)")
	fs.IntVar(&o.maxBytes, "max_bytes", 4<<20, "use at most this many bytes of the corpus (0: all)")
	fs.IntVar(&o.maxVocab, "max_vocab", 128, "keep the most frequent characters; the rest share one unknown id (0: keep all)")
	fs.Float64Var(&o.valFrac, "val_frac", 0.1, "fraction of the corpus (its tail) held out for validation")
	fs.StringVar(&o.out, "out", filepath.Join("out", "gpt"), "output folder for the checkpoint and the loss curve")
	fs.BoolVar(&o.resume, "resume", false, "continue from the checkpoint in -out (its model configuration, vocabulary and seed replace the flags)")
	fs.Int64Var(&o.seed, "seed", 1, "random seed (initialization, batches, dropout, sampling)")
	fs.IntVar(&o.steps, "steps", 1400, "total training steps (with -resume: the step to stop at)")
	fs.IntVar(&o.batch, "batch", 32, "sequences per step")
	fs.IntVar(&o.context, "context", 64, "context length in characters")
	fs.IntVar(&o.layers, "layers", 2, "transformer blocks")
	fs.IntVar(&o.heads, "heads", 4, "attention heads")
	fs.IntVar(&o.kvHeads, "kv_heads", 0, "key/value heads for grouped-query attention (0: one per head)")
	fs.IntVar(&o.width, "width", 64, "model width")
	fs.IntVar(&o.mlpRatio, "mlp_ratio", 4, "MLP hidden width as a multiple of the model width")
	fs.Float64Var(&o.dropout, "dropout", 0, "dropout probability during training")
	fs.Float64Var(&o.lr, "lr", 1e-2, "peak learning rate")
	fs.Float64Var(&o.minLR, "min_lr", 1e-3, "learning rate at the end of the cosine decay")
	fs.IntVar(&o.warmup, "warmup", 50, "linear warmup steps")
	fs.Float64Var(&o.decay, "weight_decay", 0.1, "AdamW weight decay (matrices and embeddings)")
	fs.Float64Var(&o.clip, "clip", 1, "clip gradients to this global norm (0: off)")
	fs.IntVar(&o.evalEvery, "eval_every", 200, "evaluate on held-out text every this many steps")
	fs.IntVar(&o.evalBatch, "eval_batches", 16, "batches per evaluation")
	fs.IntVar(&o.sampleLen, "sample_len", 300, "characters to generate at the end")
	fs.StringVar(&o.prompt, "prompt", "func (", "start of the generated sample")
	fs.Float64Var(&o.temp, "temperature", 0.8, "sampling temperature (0: greedy)")
	fs.DurationVar(&o.budget, "time", 150*time.Second, "stop training early once it has run this long, so that the whole run stays under 3 minutes on a busy machine (0: no limit; a run cut short is not reproducible)")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar (it is also off when stderr is not a terminal)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case o.context <= 0:
		return nil, fmt.Errorf("-context %d: the context length must be positive", o.context)
	case o.batch <= 0 || o.steps < 0 || o.evalEvery <= 0 || o.evalBatch <= 0 || o.warmup < 0 || o.sampleLen < 0:
		return nil, errors.New("-batch, -eval_every and -eval_batches must be positive; -steps, -warmup and -sample_len non-negative")
	case !(o.valFrac > 0 && o.valFrac < 1):
		return nil, fmt.Errorf("-val_frac %g must be in (0, 1)", o.valFrac)
	case !(o.lr > 0) || !(o.minLR >= 0) || !(o.decay >= 0) || !(o.clip >= 0) || !(o.temp >= 0):
		return nil, errors.New("-lr must be positive; -min_lr, -weight_decay, -clip and -temperature non-negative")
	case o.budget < 0:
		return nil, fmt.Errorf("-time %v must not be negative", o.budget)
	case o.maxVocab == 1:
		return nil, errors.New("-max_vocab 1 leaves no room for any character")
	}
	return o, nil
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "gpt:", err)
		os.Exit(1)
	}
}

// checkpoint metadata keys of this program (besides nn's).
const (
	metaConfig  = "config"
	metaVocab   = "vocab"
	metaSeed    = "seed"
	metaHistory = "history"
)

// history is the loss curve, kept in the checkpoint so that a resumed run
// plots all of it.
type history struct {
	Train []float64    `json:"train"` // training loss of each step
	Val   [][2]float64 `json:"val"`   // (step, validation loss)
}

func run(args []string, stdout, stderr io.Writer) error {
	start := time.Now()
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	text, source, err := readCorpus(o.data, o.maxBytes)
	if err != nil {
		return err
	}
	if len(text) == 0 {
		return fmt.Errorf("the corpus %s is empty", source)
	}
	ckptPath := filepath.Join(o.out, "ckpt.safetensors")

	// Model, optimizer and vocabulary: fresh, or from the checkpoint.
	var (
		model *nn.GPT
		voc   *vocab
		ck    *nn.Checkpoint
		hist  history
	)
	if o.resume {
		if ck, err = nn.ReadCheckpoint(ckptPath); err != nil {
			return fmt.Errorf("-resume: %w", err)
		}
		cfg, err := nn.ParseConfig(ck.Metadata[metaConfig])
		if err != nil {
			return fmt.Errorf("-resume: %w", err)
		}
		var rs []rune
		if err := json.Unmarshal([]byte(ck.Metadata[metaVocab]), &rs); err != nil || len(rs) != cfg.Vocab {
			return fmt.Errorf("-resume: checkpoint vocabulary unreadable or of the wrong size (%v)", err)
		}
		voc = newVocab(rs)
		if s := ck.Metadata[metaSeed]; s != strconv.FormatInt(o.seed, 10) {
			fmt.Fprintf(stdout, "note: the checkpoint was trained with -seed %s; continuing with the checkpoint's seed\n", s)
			o.seed, _ = strconv.ParseInt(s, 10, 64)
		}
		if err := json.Unmarshal([]byte(ck.Metadata[metaHistory]), &hist); err != nil {
			return fmt.Errorf("-resume: checkpoint history: %w", err)
		}
		if model, err = nn.NewGPT(cfg, tensor.Float32, stepRNG(o.seed, -1)); err != nil {
			return err
		}
		o.context, o.dropout = cfg.Context, cfg.Dropout
	} else {
		voc = buildVocab(text, o.maxVocab)
		cfg := nn.Config{
			Vocab: voc.size(), Context: o.context, Layers: o.layers, Heads: o.heads, KVHeads: o.kvHeads,
			Width: o.width, MLPRatio: o.mlpRatio, Dropout: o.dropout,
		}
		if model, err = nn.NewGPT(cfg, tensor.Float32, stepRNG(o.seed, -1)); err != nil {
			return err
		}
	}
	ids, err := voc.encode(text)
	if err != nil {
		return fmt.Errorf("the corpus does not fit the checkpoint's vocabulary: %w", err)
	}
	nVal := int(float64(len(ids)) * o.valFrac)
	train, val := ids[:len(ids)-nVal], ids[len(ids)-nVal:]
	if len(train) <= o.context+1 || len(val) <= o.context+1 {
		return fmt.Errorf("the corpus (%d characters: %d for training, %d held out) is too short for -context %d", len(ids), len(train), len(val), o.context)
	}
	unigram := unigramEntropy(ids, voc.size())

	trainR, err := model.NewRunner(o.batch, o.context, nn.Train)
	if err != nil {
		return err
	}
	evalR, err := model.NewRunner(o.batch, o.context, nn.Eval)
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
		if len(hist.Train) > step {
			hist.Train = hist.Train[:step]
		}
	}
	sched := nn.CosineSchedule{Peak: o.lr, Min: o.minLR, Warmup: o.warmup, Total: o.steps}

	cfg := model.Config
	fmt.Fprintf(stdout, "corpus: %s: %d characters (%d training, %d held out), vocabulary %d\n", source, len(ids), len(train), len(val), voc.size())
	kv := cfg.KVHeads
	if kv == 0 {
		kv = cfg.Heads
	}
	fmt.Fprintf(stdout, "model: %d layers, width %d, %d heads (%d kv), context %d, %d parameters; batch %d, steps %d→%d\n",
		cfg.Layers, cfg.Width, cfg.Heads, kv, cfg.Context, model.NumParams(), o.batch, step, o.steps)
	fmt.Fprintf(stdout, "unigram entropy of the corpus: %.4f nats/char\n", unigram)

	// Validation: fixed windows spread evenly over the held-out text.
	evalStarts := make([]int, o.batch*o.evalBatch)
	for i := range evalStarts {
		evalStarts[i] = i * (len(val) - o.context - 1) / len(evalStarts)
	}
	tokens, targets := make([]int, o.batch*o.context), make([]int, o.batch*o.context)
	evaluate := func() (float64, error) {
		sum := 0.0
		for b := 0; b < o.evalBatch; b++ {
			windows(val, evalStarts[b*o.batch:(b+1)*o.batch], o.context, tokens, targets)
			l, err := evalR.Run(tokens, targets, nil)
			if err != nil {
				return 0, err
			}
			sum += l
		}
		return sum / float64(o.evalBatch), nil
	}
	save := func(done int) error {
		hb, _ := json.Marshal(hist)
		vb, _ := json.Marshal(voc.runes)
		return nn.SaveCheckpoint(ckptPath, model.Params(), opt, done, map[string]string{
			metaConfig: cfg.JSON(), metaVocab: string(vb), metaSeed: strconv.FormatInt(o.seed, 10), metaHistory: string(hb),
		})
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}

	var bar *progressbar.ProgressBar
	if !o.quiet && isTerminal(stderr) {
		bar = progressbar.NewOptions(o.steps,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetWidth(24),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		bar.Set(step)
	}
	trainStart := time.Now()
	trained := 0
	for ; step < o.steps; step++ {
		rng := stepRNG(o.seed, step)
		windows(train, randomStarts(rng, len(train), o.context, o.batch), o.context, tokens, targets)
		loss, _, err := trainR.TrainStep(opt, sched.LR(step), o.clip, tokens, targets, rng)
		if err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
		hist.Train = append(hist.Train, loss)
		trained++
		tps := float64(trained*o.batch*o.context) / time.Since(trainStart).Seconds()
		if bar != nil {
			bar.Set(step + 1)
			bar.Describe(fmt.Sprintf("loss %.3f, %.0f tok/s", loss, tps)) // the step is the bar's count
		}
		if o.budget > 0 && time.Since(trainStart) > o.budget && step+1 < o.steps {
			if bar != nil {
				bar.Clear()
			}
			fmt.Fprintf(stdout, "time budget -time %v reached: stopping after step %d of %d\n", o.budget, step+1, o.steps)
			step++
			break
		}
		if (step+1)%o.evalEvery == 0 && step+1 < o.steps {
			vl, err := evaluate()
			if err != nil {
				return err
			}
			hist.Val = append(hist.Val, [2]float64{float64(step + 1), vl})
			if bar != nil {
				bar.Clear()
			}
			fmt.Fprintf(stdout, "step %d: train loss %.4f, val loss %.4f, %.0f tokens/s\n", step+1, loss, vl, tps)
			if err := save(step + 1); err != nil {
				return err
			}
		}
	}
	if bar != nil {
		bar.Finish()
	}
	trainTime := time.Since(trainStart)
	tps := 0.0
	if trained > 0 {
		tps = float64(trained*o.batch*o.context) / trainTime.Seconds()
	}

	valLoss, err := evaluate()
	if err != nil {
		return err
	}
	if n := len(hist.Val); n == 0 || hist.Val[n-1][0] != float64(step) {
		hist.Val = append(hist.Val, [2]float64{float64(step), valLoss})
	}
	fmt.Fprintf(stdout, "step %d: val loss %.4f nats/char (unigram entropy %.4f)\n", step, valLoss, unigram)
	if err := save(step); err != nil {
		return err
	}
	pngPath := filepath.Join(o.out, "loss.png")
	if err := plotLoss(pngPath, hist, unigram); err != nil {
		return err
	}
	csvPath := filepath.Join(o.out, "loss.csv")
	if err := writeLossCSV(csvPath, hist); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s, %s and %s\n", ckptPath, pngPath, csvPath)

	// A sample, from a runner of batch 1 that shares the trained parameters.
	genR, err := model.NewRunner(1, o.context, nn.Infer)
	if err != nil {
		return err
	}
	prompt := voc.encodePrompt(o.prompt)
	out, err := nn.Generate(genR, [][]int{prompt}, o.sampleLen, o.temp, stepRNG(o.seed, -2))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "sample (temperature %g):\n%s%s\n", o.temp, voc.decode(prompt), voc.decode(out[0]))
	if math.IsNaN(valLoss) {
		return errors.New("validation loss is NaN")
	}
	fmt.Fprintf(stdout, "result: val_loss=%.4f unigram_entropy=%.4f tokens_per_s=%.0f steps=%d params=%d time_s=%.1f\n",
		valLoss, unigram, tps, step, model.NumParams(), time.Since(start).Seconds())
	return nil
}

// isTerminal tells whether w is a terminal (where the progress bar's
// carriage returns redraw one line instead of filling a log).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
