package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"math/rand"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flashgorgon/flashgorgon/nn"
)

func TestLayout(t *testing.T) {
	p := &problem{length: 4}
	tokens, targets := make([]int, 16), make([]int, 16)
	p.layout([]int{3, 1, 4, 1}, 1, tokens, targets)
	wantTok := []int{3, 1, 4, 1, sep, 1, 1, 3}
	wantTgt := []int{nn.IgnoreIndex, nn.IgnoreIndex, nn.IgnoreIndex, nn.IgnoreIndex, 1, 1, 3, 4}
	if !slices.Equal(tokens[8:], wantTok) || !slices.Equal(targets[8:], wantTgt) {
		t.Fatalf("row 1: tokens %v targets %v, want %v %v", tokens[8:], targets[8:], wantTok, wantTgt)
	}
	// Position t predicts token t+1: the targets after the separator are the
	// next input tokens, and the last one is the largest digit.
	for i := 4; i < 7; i++ {
		if targets[8+i] != tokens[8+i+1] {
			t.Fatalf("target %d = %d, next token %d", i, targets[8+i], tokens[8+i+1])
		}
	}
}

func TestHeldOutNeverDrawn(t *testing.T) {
	p := &problem{length: 2, heldOut: map[string]bool{}}
	for a := 0; a < 10; a++ {
		for b := 0; b < 10; b++ {
			if a != 7 || b != 7 {
				p.heldOut[key([]int{a, b})] = true
			}
		}
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 50; i++ {
		if x := p.draw(rng); !slices.Equal(x, []int{7, 7}) {
			t.Fatalf("drew held-out sequence %v", x)
		}
	}
}

func TestTinyRun(t *testing.T) {
	if testing.Short() {
		t.Skip("400 training steps; the run without -short covers it")
	}
	var stdout bytes.Buffer
	args := []string{"-len", "3", "-steps", "400", "-batch", "32", "-width", "32", "-eval_every", "100", "-val", "200", "-test", "300", "-lr", "5e-3", "-quiet"}
	if err := run(args, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	t.Log(stdout.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "result: seq_acc=") {
		t.Fatalf("last line %q", last)
	}
	acc, err := strconv.ParseFloat(strings.TrimPrefix(strings.Fields(last)[1], "seq_acc="), 64)
	if err != nil || acc < 0.9 {
		t.Fatalf("seq_acc %v (%v): sorting 3 digits was not learned", acc, err)
	}
}

// TestBadFlags: each misuse is refused before any work with an error
// naming the flags at fault. -len 2 and -len 3 with the default set sizes
// used to hang: the held-out sets asked for more distinct sequences than
// exist (100 and 1000).
func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-len", "2"}, "-val 500 + -test 2000 distinct held-out sequences are more than half of the 100 sequences of -len 2"},
		{[]string{"-len", "3"}, "-val 500 + -test 2000 distinct held-out sequences are more than half of the 1000 sequences of -len 3"},
		{[]string{"-len", "3", "-val", "250", "-test", "251"}, "-val 250 + -test 251"},
		{[]string{"-len", "1"}, "-len 1: must be an integer ≥ 2"},
		{[]string{"-len", "-4"}, "-len -4"},
		{[]string{"-batch", "0"}, "-batch 0: must be an integer ≥ 1"},
		{[]string{"-steps", "-1"}, "-steps -1: must be an integer ≥ 0"},
		{[]string{"-eval_every", "0"}, "-eval_every 0"},
		{[]string{"-val", "0"}, "-val 0"},
		{[]string{"-test", "0"}, "-test 0"},
		{[]string{"-warmup", "-1"}, "-warmup -1"},
		{[]string{"-layers", "0"}, "-layers 0"},
		{[]string{"-heads", "0"}, "-heads 0"},
		{[]string{"-width", "-64"}, "-width -64"},
		{[]string{"-width", "30"}, "-width 30 must be a multiple of -heads 4"},
		{[]string{"-lr", "0"}, "-lr 0: must be a finite number > 0"},
		{[]string{"-lr", "Inf"}, "-lr +Inf"},
		{[]string{"-lr", "NaN"}, "-lr NaN"},
		{[]string{"-target", "1.5"}, "-target 1.5: must be a finite number in [0, 1]"},
		{[]string{"-target", "NaN"}, "-target NaN"},
		{[]string{"-time", "-2s"}, "-time -2s"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout bytes.Buffer
			done := make(chan error, 1)
			go func() { done <- run(append(tc.args, "-quiet"), &stdout, io.Discard) }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one containing %q", err, tc.want)
				}
				if stdout.Len() > 0 {
					t.Fatalf("refused only after starting:\n%s", stdout.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no answer in 10 s (hangs?)")
			}
		})
	}
	if err := run([]string{"-h"}, io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
}

// TestTooBigForMemory: sizes no machine can hold are refused before any
// allocation (where /proc/meminfo tells the machine's memory).
func TestTooBigForMemory(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc/meminfo")
	}
	for _, args := range [][]string{
		{"-batch", "1000000000000"},
		{"-len", "30", "-val", "100000000000000", "-test", "1"},
	} {
		err := run(append(args, "-quiet"), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "need at least") || !strings.Contains(err.Error(), "lower -batch, -len, -width, -layers, -val or -test") {
			t.Errorf("%v: error %v", args, err)
		}
	}
}

// TestHeldOutFits: the held-out sets may take up to half of the 10^len
// sequences.
func TestHeldOutFits(t *testing.T) {
	for _, tc := range []struct {
		length, val, test int
		ok                bool
	}{
		{2, 25, 25, true},
		{2, 25, 26, false},
		{3, 200, 300, true},
		{3, 200, 301, false},
		{16, 500, 2000, true},
		{400, 1 << 40, 1 << 40, true}, // 10^400 overflows a float64: no limit
	} {
		if err := heldOutFits(tc.length, tc.val, tc.test); (err == nil) != tc.ok {
			t.Errorf("len %d, val %d, test %d: error %v, want ok=%t", tc.length, tc.val, tc.test, err, tc.ok)
		}
	}
}

func TestEveryNumericFlagChecked(t *testing.T) {
	if u := newFlags(&options{}, io.Discard).Unranged(); len(u) > 0 {
		t.Fatalf("numeric flags without a range: %v", u)
	}
}

// TestSameResultWhateverTheCores: the training losses and the test
// accuracy depend on the flags only, not on how many cores the kernels
// split their work over: GOMAXPROCS 1 and 3 agree bit for bit.
func TestSameResultWhateverTheCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	args := []string{"-len", "4", "-steps", "30", "-eval_every", "10", "-batch", "16", "-width", "32", "-val", "50", "-test", "60", "-quiet"}
	var outs []*outcome
	for _, procs := range []int{1, 3} {
		runtime.GOMAXPROCS(procs)
		o, err := sortRun(args, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, o)
	}
	a, b := outs[0], outs[1]
	if len(a.losses) != 30 || !slices.Equal(a.losses, b.losses) || a.seqAcc != b.seqAcc || a.digitAcc != b.digitAcc {
		t.Fatalf("GOMAXPROCS 1: losses %v, accuracy %v/%v\nGOMAXPROCS 3: losses %v, accuracy %v/%v",
			a.losses, a.seqAcc, a.digitAcc, b.losses, b.seqAcc, b.digitAcc)
	}
}
