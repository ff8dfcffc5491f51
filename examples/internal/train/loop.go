package train

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/flashgorgon/flashgorgon/nn"
)

// Diverged is the error of a run whose state stopped being finite: a NaN or
// ±Inf loss, gradient norm or parameter. What says which value and where.
type Diverged struct {
	What string
}

func (d *Diverged) Error() string { return "training diverged: " + d.What }

// Finite tells whether x is neither NaN nor ±Inf.
func Finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// TrainStep is r.TrainStep (clip: the global gradient norm, ≤ 0 for none)
// that reports a non-finite loss or gradient norm as *Diverged; nn then
// has left the parameters untouched.
func TrainStep(r *nn.Runner, opt *nn.AdamW, lr, clip float64, tokens, targets []int, rng *rand.Rand) (float64, error) {
	loss, norm, err := r.TrainStep(opt, lr, clip, tokens, targets, rng)
	if !Finite(loss) || !Finite(norm) {
		return loss, &Diverged{What: fmt.Sprintf("training loss %g, gradient norm %g", loss, norm)}
	}
	return loss, err
}

// Stop says why Loop.Run returned.
type Stop int

const (
	// Finished: every step up to Loop.Steps was done.
	Finished Stop = iota
	// Early: Eval asked to stop (the validation target was reached).
	Early
	// TimeLimit: training ran longer than Loop.TimeLimit.
	TimeLimit
)

// Loop runs training steps from a given step up to Steps, evaluating after
// every EvalEvery-th step and after the last one run. What it computes
// depends only on its callbacks and on the step numbers, never on time,
// unless TimeLimit is set.
type Loop struct {
	Steps     int           // the step count to reach (steps are numbered from 0)
	EvalEvery int           // evaluate after step s when (s+1) % EvalEvery == 0
	TimeLimit time.Duration // stop once this much time has passed (0: never)
	Tokens    int           // tokens per step, for the tokens/s figure

	// Out receives one line per evaluation: the step, the last training
	// loss, Eval's summary, tokens/s and the time left (or taken).
	Out io.Writer
	// Progress, when a terminal, shows a progress bar with the loss,
	// tokens/s and the time left; nil or anything else: none.
	Progress io.Writer

	// Step runs training step s (0-based) and returns its loss.
	Step func(s int) (loss float64, err error)
	// Eval evaluates the model after done steps and returns a summary
	// ("val loss 1.2345") and whether to stop early.
	Eval func(done int) (summary string, stop bool, err error)
}

// Result is what Loop.Run did.
type Result struct {
	Done    int           // steps done in all (the from of Run plus Ran)
	Ran     int           // steps run by this call
	Elapsed time.Duration // time taken by this call, evaluations included
	Stop    Stop

	// Steady is the time of this call's steps after its first (which
	// carries one-time costs: kernels loaded, buffers planned), evaluations
	// and checkpoints excluded; Timed is how many steps it covers.
	Steady time.Duration
	Timed  int
}

// TokensPerSecond is the training throughput of the call (0 when no step
// ran), evaluations included in the time.
func (r Result) TokensPerSecond(tokensPerStep int) float64 {
	if r.Ran == 0 {
		return 0
	}
	return float64(r.Ran*tokensPerStep) / r.Elapsed.Seconds()
}

// SteadyTokensPerSecond is the training throughput of the steps after the
// first, evaluations and checkpoints excluded (0 when fewer than two steps
// ran): the convention of PyTorch benchmarks that time the steps after a
// warm-up step.
func (r Result) SteadyTokensPerSecond(tokensPerStep int) float64 {
	if r.Timed == 0 || r.Steady <= 0 {
		return 0
	}
	return float64(r.Timed*tokensPerStep) / r.Steady.Seconds()
}

// Run does steps from, from+1, …, Steps−1, then a final evaluation unless
// the last step was just evaluated. An error of Step or Eval ends the run
// and is returned with the step it happened at.
func (l *Loop) Run(from int) (Result, error) {
	if l.EvalEvery <= 0 {
		return Result{Done: from}, fmt.Errorf("train.Loop: EvalEvery %d must be positive", l.EvalEvery)
	}
	var bar *progressbar.ProgressBar
	if IsTerminal(l.Progress) {
		bar = progressbar.NewOptions(l.Steps,
			progressbar.OptionSetWriter(l.Progress),
			progressbar.OptionSetWidth(24),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(false), // ours below counts only this run's steps
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		bar.Set(from)
	}
	start := time.Now()
	res := Result{Done: from}
	loss := math.NaN()
	evaluated := -1
	evaluate := func() error {
		summary, stop, err := l.Eval(res.Done)
		if err != nil {
			return fmt.Errorf("evaluation after step %d: %w", res.Done, err)
		}
		evaluated = res.Done
		if bar != nil {
			bar.Clear()
		}
		res.Elapsed = time.Since(start)
		line := fmt.Sprintf("step %d/%d: ", res.Done, l.Steps)
		if res.Ran > 0 {
			line += fmt.Sprintf("train loss %.4f, ", loss)
		}
		line += summary
		if stop {
			res.Stop = Early
		}
		if res.Ran > 0 {
			line += fmt.Sprintf("; %.0f tokens/s", res.TokensPerSecond(l.Tokens))
			if left := res.left(l.Steps); left > 0 && res.Stop == Finished {
				line += ", ETA " + round(left).String()
			} else {
				line += ", took " + round(res.Elapsed).String()
			}
		}
		fmt.Fprintln(l.Out, line)
		return nil
	}
	for res.Done < l.Steps && res.Stop == Finished {
		var err error
		stepStart := time.Now()
		if loss, err = l.Step(res.Done); err != nil {
			return res, fmt.Errorf("step %d: %w", res.Done, err)
		}
		if !Finite(loss) {
			return res, fmt.Errorf("step %d: %w", res.Done, &Diverged{What: fmt.Sprintf("training loss %g", loss)})
		}
		if res.Ran > 0 {
			res.Steady += time.Since(stepStart)
			res.Timed++
		}
		res.Done++
		res.Ran++
		res.Elapsed = time.Since(start)
		if bar != nil {
			desc := fmt.Sprintf("loss %.3f, %.0f tok/s", loss, res.TokensPerSecond(l.Tokens))
			if left := res.left(l.Steps); left > 0 {
				desc += ", ETA " + round(left).String()
			}
			bar.Set(res.Done)
			bar.Describe(desc) // the step is the bar's count
		}
		if res.Done%l.EvalEvery == 0 {
			if err := evaluate(); err != nil {
				return res, err
			}
		}
		if l.TimeLimit > 0 && res.Elapsed > l.TimeLimit && res.Done < l.Steps && res.Stop == Finished {
			res.Stop = TimeLimit
			if bar != nil {
				bar.Clear()
			}
			fmt.Fprintf(l.Out, "time limit -time %v reached: stopping after step %d of %d (a run cut short by time is not reproducible)\n", l.TimeLimit, res.Done, l.Steps)
		}
	}
	if bar != nil {
		bar.Finish()
	}
	if evaluated != res.Done {
		if err := evaluate(); err != nil {
			return res, err
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// left estimates the time the remaining steps up to steps take at this
// call's pace so far.
func (r Result) left(steps int) time.Duration {
	if r.Ran == 0 || r.Done >= steps {
		return 0
	}
	return time.Duration(float64(r.Elapsed) / float64(r.Ran) * float64(steps-r.Done))
}

// round rounds d for display: to seconds from 10 s up, else to 0.1 s.
func round(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// IsTerminal tells whether w is a terminal (where a progress bar's carriage
// returns redraw one line instead of filling a log).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// IsDiverged tells whether err is or wraps *Diverged.
func IsDiverged(err error) bool {
	var d *Diverged
	return errors.As(err, &d)
}
