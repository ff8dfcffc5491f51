package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"

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

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-len", "1"}, {"-batch", "0"}, {"-lr", "0"}, {"extra"}} {
		if err := run(args, io.Discard, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	if err := run([]string{"-h"}, io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
}
