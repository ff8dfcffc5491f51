package train

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeRun runs a Loop over fake steps (loss of step s: 1/(s+1)) and records
// which steps ran and after which the evaluation came.
type fakeRun struct {
	steps, evals []int
	stopAt       int // Eval asks to stop after this many steps (0: never)
	badStep      int // this step returns badLoss (−1: none)
	badLoss      float64
	failStep     int // this step fails (−1: none)
	out          bytes.Buffer
}

func (f *fakeRun) loop(steps, every int, limit time.Duration) *Loop {
	return &Loop{
		Steps: steps, EvalEvery: every, TimeLimit: limit, Tokens: 10, Out: &f.out,
		Step: func(s int) (float64, error) {
			f.steps = append(f.steps, s)
			switch s {
			case f.failStep:
				return 0, errors.New("boom")
			case f.badStep:
				return f.badLoss, nil
			}
			return 1 / float64(s+1), nil
		},
		Eval: func(done int) (string, bool, error) {
			f.evals = append(f.evals, done)
			return fmt.Sprintf("metric %d", done), f.stopAt > 0 && done >= f.stopAt, nil
		},
	}
}

func newFake() *fakeRun { return &fakeRun{badStep: -1, failStep: -1} }

func span(lo, hi int) []int {
	var s []int
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

func TestLoopSchedule(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		from, steps, every    int
		stopAt                int
		wantSteps, wantEvals  []int
		wantDone              int
		wantStop              Stop
		wantLines, wantAbsent []string
	}{
		{name: "evaluates every 3 and after the last", steps: 7, every: 3,
			wantSteps: span(0, 7), wantEvals: []int{3, 6, 7}, wantDone: 7,
			wantLines: []string{"step 3/7: train loss 0.3333, metric 3; ", "step 7/7: train loss 0.1429, metric 7; ", "took"}},
		{name: "last step on the cadence: one evaluation", steps: 6, every: 3,
			wantSteps: span(0, 6), wantEvals: []int{3, 6}, wantDone: 6},
		{name: "resumed", from: 4, steps: 9, every: 4,
			wantSteps: span(4, 9), wantEvals: []int{8, 9}, wantDone: 9},
		{name: "nothing to do: evaluates once", from: 5, steps: 5, every: 2,
			wantEvals: []int{5}, wantDone: 5,
			wantLines: []string{"step 5/5: metric 5\n"}, wantAbsent: []string{"train loss", "tokens/s"}},
		{name: "early stop", steps: 100, every: 10, stopAt: 20,
			wantSteps: span(0, 20), wantEvals: []int{10, 20}, wantDone: 20, wantStop: Early,
			wantLines: []string{"step 10/100: train loss 0.1000, metric 10; ", "ETA"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.stopAt = tc.stopAt
			res, err := f.loop(tc.steps, tc.every, 0).Run(tc.from)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.steps, tc.wantSteps) || !slices.Equal(f.evals, tc.wantEvals) {
				t.Fatalf("steps %v, evaluations after %v; want %v, %v", f.steps, f.evals, tc.wantSteps, tc.wantEvals)
			}
			if res.Done != tc.wantDone || res.Ran != len(tc.wantSteps) || res.Stop != tc.wantStop {
				t.Fatalf("result %+v, want done %d, ran %d, stop %v", res, tc.wantDone, len(tc.wantSteps), tc.wantStop)
			}
			// The steady figure times every step but the call's first.
			if want := max(res.Ran-1, 0); res.Timed != want || res.Steady > res.Elapsed {
				t.Fatalf("timed %d steps in %v of %v; want %d steps within the call's time", res.Timed, res.Steady, res.Elapsed, want)
			}
			for _, l := range tc.wantLines {
				if !strings.Contains(f.out.String(), l) {
					t.Errorf("output lacks %q:\n%s", l, f.out.String())
				}
			}
			for _, l := range tc.wantAbsent {
				if strings.Contains(f.out.String(), l) {
					t.Errorf("output has %q:\n%s", l, f.out.String())
				}
			}
		})
	}
}

func TestLoopStopsOnErrors(t *testing.T) {
	t.Run("non-finite loss", func(t *testing.T) {
		for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			f := newFake()
			f.badStep, f.badLoss = 4, bad
			res, err := f.loop(10, 2, 0).Run(0)
			var d *Diverged
			if !errors.As(err, &d) || !strings.Contains(err.Error(), "step 4: training diverged: training loss") {
				t.Fatalf("loss %g: error %v, want a *Diverged at step 4", bad, err)
			}
			if res.Done != 4 || !slices.Equal(f.evals, []int{2, 4}) {
				t.Fatalf("loss %g: done %d, evaluations %v: the bad step must not count nor be evaluated", bad, res.Done, f.evals)
			}
		}
	})
	t.Run("step error", func(t *testing.T) {
		f := newFake()
		f.failStep = 3
		_, err := f.loop(10, 2, 0).Run(0)
		if err == nil || err.Error() != "step 3: boom" || IsDiverged(err) {
			t.Fatalf("error %v, want step 3: boom", err)
		}
	})
	t.Run("eval error", func(t *testing.T) {
		l := newFake().loop(10, 2, 0)
		l.Eval = func(done int) (string, bool, error) { return "", false, &Diverged{What: "validation loss NaN"} }
		_, err := l.Run(0)
		if !IsDiverged(err) || !strings.Contains(err.Error(), "evaluation after step 2: training diverged: validation loss NaN") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("bad cadence", func(t *testing.T) {
		if _, err := newFake().loop(10, 0, 0).Run(0); err == nil {
			t.Fatal("EvalEvery 0 accepted")
		}
	})
}

func TestLoopTimeLimit(t *testing.T) {
	f := newFake()
	res, err := f.loop(50, 10, time.Nanosecond).Run(0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Done != 1 || res.Stop != TimeLimit || !slices.Equal(f.evals, []int{1}) {
		t.Fatalf("result %+v, evaluations %v: want one step, then the final evaluation", res, f.evals)
	}
	if !strings.Contains(f.out.String(), "time limit -time 1ns reached: stopping after step 1 of 50") {
		t.Fatalf("output:\n%s", f.out.String())
	}
	// No limit: a slow step does not end the run.
	f = newFake()
	l := f.loop(3, 10, 0)
	step := l.Step
	l.Step = func(s int) (float64, error) { time.Sleep(time.Millisecond); return step(s) }
	if res, err := l.Run(0); err != nil || res.Done != 3 || res.Stop != Finished {
		t.Fatalf("result %+v, error %v", res, err)
	}
}

func TestResultRates(t *testing.T) {
	r := Result{Done: 14, Ran: 4, Elapsed: 2 * time.Second}
	if got := r.TokensPerSecond(100); got != 200 {
		t.Fatalf("tokens/s %g, want 4·100/2 = 200", got)
	}
	if got := r.left(20); got != 3*time.Second {
		t.Fatalf("time left %v, want 6 steps at 0.5 s = 3s", got)
	}
	if got := r.left(14); got != 0 {
		t.Fatalf("time left at the end %v", got)
	}
	if got := (Result{}).TokensPerSecond(100); got != 0 {
		t.Fatalf("tokens/s of no step %g", got)
	}
	r.Steady, r.Timed = 500*time.Millisecond, 3
	if got := r.SteadyTokensPerSecond(100); got != 600 {
		t.Fatalf("steady tokens/s %g, want 3·100/0.5 = 600", got)
	}
	if got := (Result{Ran: 1}).SteadyTokensPerSecond(100); got != 0 {
		t.Fatalf("steady tokens/s of one step %g", got)
	}
}
