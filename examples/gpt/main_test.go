package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/flashgorgon/flashgorgon/nn"
)

// resultFields parses the program's closing "result:" line.
func resultFields(t *testing.T, out string) map[string]float64 {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "result: ") {
		t.Fatalf("last line %q does not start with result:", last)
	}
	fields := map[string]float64{}
	for _, kv := range strings.Fields(strings.TrimPrefix(last, "result: ")) {
		k, v, ok := strings.Cut(kv, "=")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			t.Fatalf("bad field %q in %q", kv, last)
		}
		fields[k] = f
	}
	return fields
}

// corpus writes a small, very regular text file: a model that attends to the
// previous characters predicts it far better than character frequencies.
func corpus(t *testing.T) string {
	t.Helper()
	var sb strings.Builder
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon"}
	for i := 0; i < 400; i++ {
		sb.WriteString(words[i%len(words)])
		sb.WriteString(" := ")
		sb.WriteString(strconv.Itoa(i % 7))
		sb.WriteString("\n")
	}
	path := filepath.Join(t.TempDir(), "corpus.txt")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var tiny = []string{"-layers", "1", "-width", "32", "-heads", "2", "-context", "16", "-batch", "8",
	"-eval_every", "40", "-eval_batches", "2", "-sample_len", "20", "-warmup", "10", "-quiet"}

func TestTinyRunLearns(t *testing.T) {
	data, out := corpus(t), t.TempDir()
	var stdout bytes.Buffer
	args := append([]string{"-data", data, "-out", out, "-steps", "120", "-lr", "1e-2"}, tiny...)
	if err := run(args, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	f := resultFields(t, stdout.String())
	t.Logf("%s", stdout.String())
	if !(f["val_loss"] < 0.6*f["unigram_entropy"]) {
		t.Fatalf("val_loss %.3f is not well below the unigram entropy %.3f", f["val_loss"], f["unigram_entropy"])
	}
	for _, name := range []string{"ckpt.safetensors", "loss.png"} {
		if st, err := os.Stat(filepath.Join(out, name)); err != nil || st.Size() == 0 {
			t.Fatalf("%s missing or empty: %v", name, err)
		}
	}
	if png, _ := os.ReadFile(filepath.Join(out, "loss.png")); !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatal("loss.png is not a PNG")
	}
	// loss.csv: a header, one line per step, validation losses at steps
	// 40, 80 and 120, the last equal to the result line's val_loss.
	csv, err := os.ReadFile(filepath.Join(out, "loss.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if len(lines) != 121 || lines[0] != "step,train_loss,val_loss" {
		t.Fatalf("loss.csv has %d lines starting %q, want a header and 120 steps", len(lines), lines[0])
	}
	for _, step := range []int{40, 80, 120} {
		cols := strings.Split(lines[step], ",")
		if cols[0] != strconv.Itoa(step) || cols[2] == "" {
			t.Fatalf("loss.csv line %q: want step %d with a validation loss", lines[step], step)
		}
	}
	last, err := strconv.ParseFloat(strings.Split(lines[120], ",")[2], 64)
	if err != nil || math.Abs(last-f["val_loss"]) > 5e-5 { // the result line rounds to 4 decimals
		t.Fatalf("last validation loss in loss.csv %v (%v) differs from the result line's %.4f", last, err, f["val_loss"])
	}
}

// TestResumeIsExact: 20 steps in one go and 10 + 10 with -resume give the
// same parameters, bit for bit.
func TestResumeIsExact(t *testing.T) {
	data := corpus(t)
	straight, split := t.TempDir(), t.TempDir()
	common := append([]string{"-data", data, "-dropout", "0.1", "-eval_every", "5"}, tiny...)
	if err := run(append([]string{"-out", straight, "-steps", "20"}, common...), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(append([]string{"-out", split, "-steps", "10"}, common...), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if err := run(append([]string{"-out", split, "-steps", "20", "-resume"}, common...), &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "steps 10→20") {
		t.Fatalf("resumed run did not start at step 10:\n%s", stdout.String())
	}
	a, err := nn.ReadCheckpoint(filepath.Join(straight, "ckpt.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := nn.ReadCheckpoint(filepath.Join(split, "ckpt.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Step != 20 || b.Step != 20 || len(a.Tensors) != len(b.Tensors) {
		t.Fatalf("steps %d and %d, %d and %d tensors", a.Step, b.Step, len(a.Tensors), len(b.Tensors))
	}
	for name, ta := range a.Tensors {
		x, y := ta.Data().([]float32), b.Tensors[name].Data().([]float32)
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				t.Fatalf("%s[%d]: %g straight, %g resumed", name, i, x[i], y[i])
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, nil, 0o644)
	short := filepath.Join(dir, "short.txt")
	os.WriteFile(short, []byte("package main\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-data", filepath.Join(dir, "missing.txt")}, "reading -data file"},
		{[]string{"-data", empty}, "empty"},
		{[]string{"-data", short}, "too short"},
		{[]string{"-context", "0"}, "context length must be positive"},
		{[]string{"-val_frac", "1"}, "-val_frac"},
		{[]string{"-resume", "-out", dir, "-data", short}, "-resume"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		err := run(append(tc.args, "-quiet", "-out", dir), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
	var help bytes.Buffer
	if err := run([]string{"-h"}, io.Discard, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	if !regexp.MustCompile(`-seed int\s+random seed`).MatchString(help.String()) {
		t.Fatalf("-h does not list -seed with its default:\n%s", help.String())
	}
}

func TestVocabAndEntropy(t *testing.T) {
	v := buildVocab("aab€€€c", 3) // keeps €, a and unk
	if v.size() != 3 || v.unkID < 0 {
		t.Fatalf("vocabulary %q", string(v.runes))
	}
	ids, _ := v.encode("a€bz")
	if got := v.decode(ids); got != "a€\uFFFD\uFFFD" {
		t.Fatalf("round trip gave %q", got)
	}
	// Two equally frequent symbols: ln 2 nats.
	if h := unigramEntropy([]int{0, 1, 0, 1}, 2); math.Abs(h-math.Ln2) > 1e-15 {
		t.Fatalf("entropy %g, want ln 2", h)
	}
}

func TestTimeBudget(t *testing.T) {
	var stdout bytes.Buffer
	args := append([]string{"-data", corpus(t), "-out", t.TempDir(), "-steps", "50", "-time", "1ns"}, tiny...)
	if err := run(args, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	if f := resultFields(t, stdout.String()); f["steps"] != 1 || !strings.Contains(stdout.String(), "time budget") {
		t.Fatalf("a 1ns budget should stop after one step:\n%s", stdout.String())
	}
}
