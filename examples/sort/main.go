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
// -steps (a fixed number, so that a run's result does not depend on the
// machine's load; -time adds a time limit, off by default) or once the
// accuracy on a validation set reaches -target; the final figure is measured
// on a separate test set that no training batch contains. The program ends
// with a line
//
//	result: seq_acc=… digit_acc=… steps=… test=… time_s=…
package main

import (
	"fmt"
	"io"
	"math"
	"math/rand"
	"slices"
	"time"

	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/examples/internal/train"
	"github.com/flashgorgon/flashgorgon/nn"
)

const (
	digits = 10
	sep    = digits // the separator token; the vocabulary is 0–9 and sep
	vocab  = digits + 1
)

type options struct {
	train.Common
	length   int
	valSize  int
	testSize int
	target   float64
}

// evalBatch is the batch of the runner that decodes the held-out sets.
const evalBatch = 250

// defaults are the flags' defaults.
var defaults = train.Common{Steps: 1500, Batch: 32, EvalEvery: 250, Warmup: 100, Layers: 2, Heads: 4, Width: 64, LR: 3e-3, Seed: 1}

// newFlags defines the program's flags, writing into o.
func newFlags(o *options, stderr io.Writer) *train.Flags {
	f := train.NewFlags("sort", stderr)
	o.Common.Register(f, defaults)
	f.Int(&o.length, "len", 16, train.AtLeast(2), "digits per sequence")
	f.Int(&o.valSize, "val", 500, train.AtLeast(1), "validation sequences")
	f.Int(&o.testSize, "test", 2000, train.AtLeast(1), "held-out test sequences")
	f.Float(&o.target, "target", 0.998, train.Between(0, 1), "stop early once the validation accuracy reaches this")
	f.Check(func() error { return heldOutFits(o.length, o.valSize, o.testSize) })
	return f
}

// heldOutFits checks that the validation and test sets, which hold distinct
// sequences, take at most half of the 10^length sequences there are, so
// that drawing them and drawing training sequences outside them (both by
// rejection) end quickly.
func heldOutFits(length, val, test int) error {
	n := math.Pow(digits, float64(length))
	if float64(val)+float64(test) > n/2 {
		return fmt.Errorf("-val %d + -test %d distinct held-out sequences are more than half of the %.0f sequences of -len %d: lower -val and -test or raise -len", val, test, n, length)
	}
	return nil
}

func main() { train.Main("sort", run) }

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
	_, err := sortRun(args, stdout, stderr)
	return err
}

// outcome is what a run measured, at full precision.
type outcome struct {
	losses           []float64 // training loss of each step
	seqAcc, digitAcc float64   // on the test set
}

func sortRun(args []string, stdout, stderr io.Writer) (*outcome, error) {
	start := time.Now()
	o := &options{}
	if err := newFlags(o, stderr).Parse(args); err != nil {
		return nil, err
	}
	seq := 2 * o.length
	cfg := nn.Config{Vocab: vocab, Context: seq, Layers: o.Layers, Heads: o.Heads, Width: o.Width, MLPRatio: 4}
	// The tensors, and the held-out sequences with their keys.
	need := train.Footprint(cfg, o.Batch, seq, evalBatch) + (float64(o.valSize)+float64(o.testSize))*float64(9*o.length+100)
	if err := train.CheckMemory(need, "-batch, -len, -width, -layers, -val or -test"); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewSource(o.Seed))
	model, err := nn.NewGPT(cfg, tensor.Float32, rng)
	if err != nil {
		return nil, err
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

	trainR, err := model.NewRunner(o.Batch, seq, nn.Train)
	if err != nil {
		return nil, err
	}
	evalR, err := model.NewRunner(evalBatch, seq, nn.Infer)
	if err != nil {
		return nil, err
	}
	opt, err := nn.NewAdamW(trainR.Params(), 0.9, 0.98, 1e-8, 0.01)
	if err != nil {
		return nil, err
	}
	sched := nn.CosineSchedule{Peak: o.LR, Min: o.LR / 10, Warmup: o.Warmup, Total: o.Steps}
	fmt.Fprintf(stdout, "task: sort %d digits; model: %d layers, width %d, %d heads, %d parameters; batch %d, %d steps\n",
		o.length, cfg.Layers, cfg.Width, cfg.Heads, model.NumParams(), o.Batch, o.Steps)

	tokens, targets := make([]int, o.Batch*seq), make([]int, o.Batch*seq)
	out := &outcome{}
	loop := train.Loop{
		Steps: o.Steps, EvalEvery: o.EvalEvery, TimeLimit: o.Time, Tokens: o.Batch * seq, Out: stdout,
		Step: func(s int) (float64, error) {
			for b := 0; b < o.Batch; b++ {
				p.layout(p.draw(rng), b, tokens, targets)
			}
			loss, err := train.TrainStep(trainR, opt, sched.LR(s), 1, tokens, targets, rng)
			if err == nil {
				out.losses = append(out.losses, loss)
			}
			return loss, err
		},
		Eval: func(int) (string, bool, error) {
			acc, _, err := accuracy(evalR, valSet)
			if err != nil {
				return "", false, err
			}
			return fmt.Sprintf("validation seq_acc %.4f", acc), acc >= o.target, nil
		},
	}
	if !o.Quiet {
		loop.Progress = stderr
	}
	res, err := loop.Run(0)
	if err != nil {
		if train.IsDiverged(err) {
			err = fmt.Errorf("%w (a lower -lr than %g may help)", err, o.LR)
		}
		return nil, err
	}
	if out.seqAcc, out.digitAcc, err = accuracy(evalR, testSet); err != nil {
		return nil, err
	}
	ex := append(slices.Clone(testSet[0]), sep)
	gen, err := nn.Generate(evalR, [][]int{ex}, o.length, 0, nil)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "example: %v → %v\n", testSet[0], gen[0])
	fmt.Fprintf(stdout, "result: seq_acc=%.4f digit_acc=%.4f steps=%d test=%d time_s=%.1f\n",
		out.seqAcc, out.digitAcc, res.Done, len(testSet), time.Since(start).Seconds())
	return out, nil
}
