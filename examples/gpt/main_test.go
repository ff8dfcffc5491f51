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
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/flashgorgon/flashgorgon/examples/internal/train"
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
	if testing.Short() {
		t.Skip("120 training steps; the run without -short covers it")
	}
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
	sameCheckpoints(t, filepath.Join(straight, "ckpt.safetensors"), filepath.Join(split, "ckpt.safetensors"), 20)
}

// sameCheckpoints fails t unless the checkpoints at a and b are both at
// step `step` and hold the same loss history and the same tensors, bit for
// bit.
func sameCheckpoints(t *testing.T, a, b string, step int) {
	t.Helper()
	ca, err := nn.ReadCheckpoint(a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := nn.ReadCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	if ca.Step != step || cb.Step != step || len(ca.Tensors) != len(cb.Tensors) {
		t.Fatalf("steps %d and %d, %d and %d tensors", ca.Step, cb.Step, len(ca.Tensors), len(cb.Tensors))
	}
	ha, err := train.ParseHistory(ca.Metadata[train.HistoryKey])
	if err != nil {
		t.Fatal(err)
	}
	hb, err := train.ParseHistory(cb.Metadata[train.HistoryKey])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ha.Train, hb.Train) {
		t.Fatalf("training losses differ:\n%v\n%v", ha.Train, hb.Train)
	}
	// Validation losses agree wherever both runs measured one (a run split
	// by -resume also measures where it stopped).
	common := 0
	for _, va := range ha.Val {
		for _, vb := range hb.Val {
			if va[0] == vb[0] {
				if va[1] != vb[1] {
					t.Fatalf("validation losses after step %g differ: %v and %v", va[0], va[1], vb[1])
				}
				common++
			}
		}
	}
	if common == 0 {
		t.Fatalf("no validation loss to compare: %v and %v", ha.Val, hb.Val)
	}
	for name, ta := range ca.Tensors {
		x, y := ta.Data().([]float32), cb.Tensors[name].Data().([]float32)
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				t.Fatalf("%s[%d]: %g and %g", name, i, x[i], y[i])
			}
		}
	}
}

// TestSameResultWhateverTheCores: the result depends on the flags only,
// not on how many cores the kernels split their work over (nor, with no
// -time, on how long a step takes): GOMAXPROCS 1 and 3 give the same loss
// history and parameters, bit for bit.
func TestSameResultWhateverTheCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	data := corpus(t)
	var outs []string
	for _, procs := range []int{1, 3} {
		runtime.GOMAXPROCS(procs)
		out := t.TempDir()
		args := append([]string{"-data", data, "-out", out, "-steps", "12", "-dropout", "0.1", "-eval_every", "4"}, tiny...)
		if err := run(args, io.Discard, io.Discard); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, filepath.Join(out, "ckpt.safetensors"))
	}
	sameCheckpoints(t, outs[0], outs[1], 12)
}

// TestDivergenceKeepsTheLastGoodCheckpoint is the reproduction of issue 8,
// defect 4: 4 steps, then a resumed run whose learning rate of 1e30 makes
// the validation loss NaN. The old program wrote history="" over the good
// checkpoint (json.Marshal's error ignored) and the next -resume failed
// with "checkpoint history: unexpected end of JSON input". Now the
// diverging run stops with an error saying so, the checkpoint keeps step
// 4, and -resume continues from it.
func TestDivergenceKeepsTheLastGoodCheckpoint(t *testing.T) {
	data, out := corpus(t), t.TempDir()
	common := append([]string{"-data", data, "-out", out}, tiny...)
	if err := run(append(common, "-steps", "4"), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(out, "ckpt.safetensors")
	good, err := os.ReadFile(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	err = run(append(common, "-resume", "-steps", "12", "-eval_every", "1", "-lr", "1e30", "-warmup", "0"), io.Discard, io.Discard)
	if !train.IsDiverged(err) || !strings.Contains(err.Error(), ckpt+" still holds step 4") {
		t.Fatalf("diverging run: error %v, want training diverged … still holds step 4", err)
	}
	if now, _ := os.ReadFile(ckpt); !bytes.Equal(now, good) {
		t.Fatal("the diverging run changed the good checkpoint")
	}
	var stdout bytes.Buffer
	if err := run(append(common, "-resume", "-steps", "8"), &stdout, io.Discard); err != nil {
		t.Fatalf("-resume after the divergence: %v", err)
	}
	if !strings.Contains(stdout.String(), "steps 4→8") || resultFields(t, stdout.String())["steps"] != 8 {
		t.Fatalf("the resumed run did not go from step 4 to 8:\n%s", stdout.String())
	}
	if err := run(append(common, "-resume", "-steps", "6"), io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "the checkpoint is at step 8, past -steps 6") {
		t.Fatalf("-resume -steps 6 from step 8: error %v", err)
	}
}

// TestBadInput: every misuse of the flags, the corpus or the output folder
// is refused before any training with an error that names the flag and the
// value (or the file) at fault.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	short := filepath.Join(dir, "short.txt")
	file := filepath.Join(dir, "file")
	for p, text := range map[string]string{empty: "", short: "package main\n", file: "x"} {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data := corpus(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		// Numbers out of range, NaN and ±Inf.
		{[]string{"-lr", "Inf"}, "-lr +Inf: must be a finite number > 0"},
		{[]string{"-lr", "NaN"}, "-lr NaN: must be a finite number > 0"},
		{[]string{"-lr", "0"}, "-lr 0: must be a finite number > 0"},
		{[]string{"-lr", "-0.01"}, "-lr -0.01: must be a finite number > 0"},
		{[]string{"-min_lr", "Inf"}, "-min_lr +Inf: must be a finite number ≥ 0"},
		{[]string{"-min_lr", "-1e-3"}, "-min_lr -0.001: must be a finite number ≥ 0"},
		{[]string{"-lr", "0.01", "-min_lr", "0.1"}, "-min_lr 0.1 exceeds -lr 0.01"},
		{[]string{"-weight_decay", "Inf"}, "-weight_decay +Inf: must be a finite number ≥ 0"},
		{[]string{"-weight_decay", "NaN"}, "-weight_decay NaN"},
		{[]string{"-weight_decay", "-0.1"}, "-weight_decay -0.1"},
		{[]string{"-clip", "-1"}, "-clip -1: must be a finite number ≥ 0"},
		{[]string{"-clip", "Inf"}, "-clip +Inf"},
		{[]string{"-temperature", "-0.5"}, "-temperature -0.5"},
		{[]string{"-temperature", "NaN"}, "-temperature NaN"},
		{[]string{"-dropout", "1"}, "-dropout 1: must be a finite number in [0, 1)"},
		{[]string{"-dropout", "-0.1"}, "-dropout -0.1"},
		{[]string{"-val_frac", "1"}, "-val_frac 1: must be a finite number in (0, 1)"},
		{[]string{"-val_frac", "0"}, "-val_frac 0"},
		{[]string{"-val_frac", "NaN"}, "-val_frac NaN"},
		{[]string{"-steps", "-1"}, "-steps -1: must be an integer ≥ 0"},
		{[]string{"-batch", "0"}, "-batch 0: must be an integer ≥ 1"},
		{[]string{"-batch", "-3"}, "-batch -3"},
		{[]string{"-batch", "1.5"}, `invalid value "1.5" for flag -batch`},
		{[]string{"-eval_every", "0"}, "-eval_every 0"},
		{[]string{"-eval_batches", "0"}, "-eval_batches 0"},
		{[]string{"-warmup", "-1"}, "-warmup -1"},
		{[]string{"-sample_len", "-1"}, "-sample_len -1"},
		{[]string{"-context", "0"}, "-context 0: must be an integer ≥ 1"},
		{[]string{"-layers", "0"}, "-layers 0"},
		{[]string{"-heads", "0"}, "-heads 0"},
		{[]string{"-width", "0"}, "-width 0"},
		{[]string{"-heads", "4", "-width", "30"}, "-width 30 must be a multiple of -heads 4"},
		{[]string{"-kv_heads", "-1"}, "-kv_heads -1"},
		{[]string{"-heads", "4", "-kv_heads", "3"}, "-heads 4 must be a multiple of -kv_heads 3"},
		{[]string{"-mlp_ratio", "0"}, "-mlp_ratio 0"},
		{[]string{"-max_vocab", "1"}, "-max_vocab 1 leaves no room"},
		{[]string{"-max_vocab", "-1"}, "-max_vocab -1"},
		{[]string{"-max_bytes", "-1"}, "-max_bytes -1"},
		{[]string{"-time", "-1s"}, "-time -1s: must be a duration"},
		{[]string{"extra"}, "unexpected arguments"},
		// Files and folders.
		{[]string{"-data", filepath.Join(dir, "missing.txt")}, "reading -data file"},
		{[]string{"-data", filepath.Join(dir, "missing", "corpus.txt")}, "reading -data file"},
		{[]string{"-data", dir}, "is a folder: give a text file"},
		{[]string{"-data", empty}, "empty"},
		{[]string{"-data", short}, "too short for -context"},
		{[]string{"-data", data, "-context", "5000"}, "too short for -context 5000"},
		{[]string{"-data", data, "-val_frac", "0.001"}, "held out by -val_frac 0.001) is too short"},
		{[]string{"-data", data, "-out", filepath.Join(file, "sub")}, "-out " + filepath.Join(file, "sub")},
		{[]string{"-data", data, "-out", file}, "-out " + file + " is a file"},
		{[]string{"-data", data, "-out", ""}, "-out is empty"},
		{[]string{"-data", data, "-resume", "-out", filepath.Join(dir, "nothing")}, "-resume"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string{"-quiet", "-out", filepath.Join(dir, "out")}, tc.args...)
			var stdout bytes.Buffer
			err := run(args, &stdout, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if stdout.Len() > 0 {
				t.Fatalf("refused only after starting:\n%s", stdout.String())
			}
		})
	}
	var help bytes.Buffer
	if err := run([]string{"-h"}, io.Discard, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	if !regexp.MustCompile(`-seed int\s+random seed`).MatchString(help.String()) {
		t.Fatalf("-h does not list -seed with its default:\n%s", help.String())
	}
}

// TestTooBigForMemory: sizes no machine can hold are refused before any
// allocation, naming the flags that size the run (where /proc/meminfo
// tells the machine's memory).
func TestTooBigForMemory(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc/meminfo")
	}
	data := corpus(t)
	for _, args := range [][]string{
		{"-batch", "1000000000000"},
		{"-width", "4000002", "-heads", "2", "-context", "16"},
		{"-eval_batches", "1000000000000000"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout bytes.Buffer
			err := run(append(args, "-data", data, "-quiet", "-out", t.TempDir()), &stdout, io.Discard)
			if err == nil || !strings.Contains(err.Error(), "need at least") || !strings.Contains(err.Error(), "lower -batch, -eval_batches, -context, -width, -layers or -mlp_ratio") {
				t.Fatalf("error %v", err)
			}
			if stdout.Len() > 0 {
				t.Fatalf("refused only after starting:\n%s", stdout.String())
			}
		})
	}
}

// TestEveryNumericFlagChecked: each numeric flag has a range, and each
// float flag refuses NaN and ±Inf naming itself, so that a flag added later
// cannot skip validation.
func TestEveryNumericFlagChecked(t *testing.T) {
	f := newFlags(&options{}, cpuPreset, io.Discard)
	if u := f.Unranged(); len(u) > 0 {
		t.Fatalf("numeric flags without a range: %v", u)
	}
	f.VisitAll(func(fl *flag.Flag) {
		if _, ok := fl.Value.(flag.Getter).Get().(float64); !ok {
			return
		}
		for _, v := range []string{"NaN", "Inf", "-Inf"} {
			err := newFlags(&options{}, cpuPreset, io.Discard).Parse([]string{"-" + fl.Name, v})
			if err == nil || !strings.Contains(err.Error(), "-"+fl.Name+" ") || !strings.Contains(err.Error(), "finite") {
				t.Errorf("-%s %s: error %v", fl.Name, v, err)
			}
		}
	})
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
	if f := resultFields(t, stdout.String()); f["steps"] != 1 || !strings.Contains(stdout.String(), "time limit -time 1ns reached") {
		t.Fatalf("a 1ns budget should stop after one step:\n%s", stdout.String())
	}
}
