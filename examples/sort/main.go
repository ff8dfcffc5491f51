// Command sort trains a small transformer to sort sequences of digits, a
// task that needs attention: every output position must find, among all the
// input digits, the next one in order.
//
// A sequence of -len digits is followed by a separator and the same digits
// sorted, e.g. for -len 4
//
//	3 1 4 1 = 1 1 3 4
//
// The model reads the whole line and is trained to predict only the sorted
// half (the other targets are the loss's ignore index). It is evaluated by
// greedy decoding: given the digits and the separator, it writes -len digits,
// and a sequence counts as right only when all of them are. Training stops at
// -steps or once the accuracy on a validation set reaches -target; the final
// figure is measured on a separate test set that no training batch contains.
// The program ends with a line
//
//	result: seq_acc=… digit_acc=… steps=… time_s=…
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"slices"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/nn"
)

const (
	digits = 10
	sep    = digits // the separator token; the vocabulary is 0–9 and sep
	vocab  = digits + 1
)

type options struct {
	length    int
	steps     int
	batch     int
	layers    int
	heads     int
	width     int
	lr        float64
	warmup    int
	seed      int64
	evalEvery int
	valSize   int
	testSize  int
	target    float64
	quiet     bool
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("sort", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.length, "len", 16, "digits per sequence")
	fs.IntVar(&o.steps, "steps", 1500, "training steps (the learning rate decays to a tenth over them)")
	fs.IntVar(&o.batch, "batch", 32, "sequences per step")
	fs.IntVar(&o.layers, "layers", 2, "transformer blocks")
	fs.IntVar(&o.heads, "heads", 4, "attention heads")
	fs.IntVar(&o.width, "width", 64, "model width")
	fs.Float64Var(&o.lr, "lr", 3e-3, "peak learning rate")
	fs.IntVar(&o.warmup, "warmup", 100, "linear warmup steps")
	fs.Int64Var(&o.seed, "seed", 1, "random seed")
	fs.IntVar(&o.evalEvery, "eval_every", 250, "measure the validation accuracy every this many steps")
	fs.IntVar(&o.valSize, "val", 500, "validation sequences")
	fs.IntVar(&o.testSize, "test", 2000, "held-out test sequences")
	fs.Float64Var(&o.target, "target", 0.998, "stop early once the validation accuracy reaches this (1: never)")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar (it is also off when stderr is not a terminal)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.length < 2 || o.steps < 0 || o.batch <= 0 || o.evalEvery <= 0 || o.valSize <= 0 || o.testSize <= 0 || !(o.lr > 0) || o.warmup < 0 {
		return nil, errors.New("-len must be at least 2; -batch, -eval_every, -val, -test and -lr positive; -steps and -warmup non-negative")
	}
	return o, nil
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "sort:", err)
		os.Exit(1)
	}
}

// problem draws random digit sequences and lays them out for the model.
type problem struct {
	length int
	// heldOut holds the validation and test sequences (as strings of
	// digits); training never draws one of them.
	heldOut map[string]bool
}

func (p *problem) draw(rng *rand.Rand) []int {
	for {
		x := make([]int, p.length)
		for i := range x {
			x[i] = rng.Intn(digits)
		}
		if !p.heldOut[key(x)] {
			return x
		}
	}
}

func key(x []int) string {
	b := make([]byte, len(x))
	for i, d := range x {
		b[i] = byte('0' + d)
	}
	return string(b)
}

// layout writes one training example at row b: input x, sep, sorted(x)
// without its last digit; targets: ignored over the input, then sorted(x).
func (p *problem) layout(x []int, b int, tokens, targets []int) {
	l := p.length
	seq := 2 * l
	y := slices.Clone(x)
	slices.Sort(y)
	row, tgt := tokens[b*seq:(b+1)*seq], targets[b*seq:(b+1)*seq]
	copy(row, x)
	row[l] = sep
	copy(row[l+1:], y[:l-1])
	for i := 0; i < l; i++ {
		tgt[i] = nn.IgnoreIndex
	}
	copy(tgt[l:], y)
}

// accuracy decodes each sequence greedily with r and returns the fractions of
// sequences and of digits that are right.
func accuracy(r *nn.Runner, set [][]int) (seqAcc, digitAcc float64, err error) {
	right, rightDigits := 0, 0
	l := len(set[0])
	for lo := 0; lo < len(set); lo += r.Batch {
		hi := min(lo+r.Batch, len(set))
		prompts := make([][]int, hi-lo)
		for i := range prompts {
			prompts[i] = append(slices.Clone(set[lo+i]), sep)
		}
		out, err := nn.Generate(r, prompts, l, 0, nil)
		if err != nil {
			return 0, 0, err
		}
		for i, o := range out {
			want := slices.Clone(set[lo+i])
			slices.Sort(want)
			ok := true
			for j := range want {
				if o[j] == want[j] {
					rightDigits++
				} else {
					ok = false
				}
			}
			if ok {
				right++
			}
		}
	}
	return float64(right) / float64(len(set)), float64(rightDigits) / float64(len(set)*l), nil
}

func run(args []string, stdout, stderr io.Writer) error {
	start := time.Now()
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	seq := 2 * o.length
	cfg := nn.Config{Vocab: vocab, Context: seq, Layers: o.layers, Heads: o.heads, Width: o.width, MLPRatio: 4}
	rng := rand.New(rand.NewSource(o.seed))
	model, err := nn.NewGPT(cfg, tensor.Float32, rng)
	if err != nil {
		return err
	}

	// Validation and test sets, drawn first and excluded from training.
	p := &problem{length: o.length, heldOut: map[string]bool{}}
	drawSet := func(n int) [][]int {
		set := make([][]int, 0, n)
		for len(set) < n {
			x := p.draw(rng)
			if !p.heldOut[key(x)] {
				p.heldOut[key(x)] = true
				set = append(set, x)
			}
		}
		return set
	}
	valSet, testSet := drawSet(o.valSize), drawSet(o.testSize)

	trainR, err := model.NewRunner(o.batch, seq, nn.Train)
	if err != nil {
		return err
	}
	evalR, err := model.NewRunner(250, seq, nn.Infer)
	if err != nil {
		return err
	}
	opt, err := nn.NewAdamW(trainR.Params(), 0.9, 0.98, 1e-8, 0.01)
	if err != nil {
		return err
	}
	sched := nn.CosineSchedule{Peak: o.lr, Min: o.lr / 10, Warmup: o.warmup, Total: o.steps}
	fmt.Fprintf(stdout, "task: sort %d digits; model: %d layers, width %d, %d heads, %d parameters; batch %d\n",
		o.length, cfg.Layers, cfg.Width, cfg.Heads, model.NumParams(), o.batch)

	var bar *progressbar.ProgressBar
	if !o.quiet && isTerminal(stderr) {
		bar = progressbar.NewOptions(o.steps, progressbar.OptionSetWriter(stderr), progressbar.OptionSetWidth(24),
			progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	tokens, targets := make([]int, o.batch*seq), make([]int, o.batch*seq)
	step := 0
	for step < o.steps {
		for b := 0; b < o.batch; b++ {
			p.layout(p.draw(rng), b, tokens, targets)
		}
		loss, _, err := trainR.TrainStep(opt, sched.LR(step), 1, tokens, targets, rng)
		if err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
		step++
		if bar != nil {
			bar.Set(step)
			bar.Describe(fmt.Sprintf("loss %.4f", loss)) // the step is the bar's count
		}
		if step%o.evalEvery == 0 {
			acc, _, err := accuracy(evalR, valSet)
			if err != nil {
				return err
			}
			if bar != nil {
				bar.Clear()
			}
			fmt.Fprintf(stdout, "step %d: loss %.4f, validation seq_acc %.4f\n", step, loss, acc)
			if acc >= o.target {
				break
			}
		}
	}
	if bar != nil {
		bar.Finish()
	}
	seqAcc, digitAcc, err := accuracy(evalR, testSet)
	if err != nil {
		return err
	}
	ex := append(slices.Clone(testSet[0]), sep)
	out, err := nn.Generate(evalR, [][]int{ex}, o.length, 0, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "example: %v → %v\n", testSet[0], out[0])
	fmt.Fprintf(stdout, "result: seq_acc=%.4f digit_acc=%.4f steps=%d test=%d time_s=%.1f\n",
		seqAcc, digitAcc, step, len(testSet), time.Since(start).Seconds())
	return nil
}

// isTerminal tells whether w is a terminal (where the progress bar's
// carriage returns redraw one line instead of filling a log).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
