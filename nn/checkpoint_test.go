package nn

import (
	"errors"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

// smallState returns two parameters and an AdamW that has taken two steps.
func smallState(t *testing.T, seed int64) ([]*Param, *AdamW) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	w := newParam("layer.weight", tensor.Float32, true, 64, 32)
	b := newParam("layer.bias", tensor.Float64, false, 32)
	w.fillNormal(rng, 1)
	b.fillNormal(rng, 1)
	ps := []*Param{w, b}
	opt, err := NewAdamW(ps, 0.9, 0.95, 1e-8, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 2; s++ {
		gw, gb := newDense(tensor.Float32, 64, 32), newDense(tensor.Float64, 32)
		fromF64(gw, randSlice(rng, 64*32, 1, 0))
		fromF64(gb, randSlice(rng, 32, 1, 0))
		if err := opt.Step([]*tensor.Dense{gw, gb}, 0.01); err != nil {
			t.Fatal(err)
		}
	}
	return ps, opt
}

func sameBits(a, b *tensor.Dense) bool {
	switch x := a.Data().(type) {
	case []float32:
		y := b.Data().([]float32)
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
	case []float64:
		y := b.Data().([]float64)
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
	}
	return true
}

func TestCheckpointRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt.safetensors")
	ps, opt := smallState(t, 1)
	if err := SaveCheckpoint(path, ps, opt, 42, map[string]string{"note": "hello"}); err != nil {
		t.Fatal(err)
	}
	ps2, opt2 := smallState(t, 2) // different values everywhere
	ck, err := ReadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Step != 42 || ck.Metadata["note"] != "hello" {
		t.Fatalf("step %d, metadata %v", ck.Step, ck.Metadata)
	}
	if err := ck.Restore(ps2, opt2); err != nil {
		t.Fatal(err)
	}
	for i := range ps {
		if !sameBits(ps[i].Value, ps2[i].Value) || !sameBits(opt.m[i], opt2.m[i]) || !sameBits(opt.v[i], opt2.v[i]) {
			t.Fatalf("tensor %s differs after the round trip", ps[i].Name)
		}
	}
	if opt2.Steps() != opt.Steps() {
		t.Fatalf("optimizer step %d, want %d", opt2.Steps(), opt.Steps())
	}
	// A model of another shape is refused, and left as it was.
	other := newParam("layer.weight", tensor.Float32, true, 32, 64)
	if err := ck.Restore([]*Param{other}, nil); err == nil || !strings.Contains(err.Error(), "layer.weight") {
		t.Fatalf("shape mismatch: error %v", err)
	}
	if err := ck.Restore([]*Param{newParam("missing", tensor.Float32, true, 1)}, nil); err == nil {
		t.Fatal("missing tensor accepted")
	}
	if _, err := ReadCheckpoint(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Fatal("missing file accepted")
	}
}

// failingWriter passes n bytes through, then fails (or, with exit set, ends
// the process as a crash would).
type failingWriter struct {
	w    io.Writer
	n    int
	exit bool
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		if f.exit {
			os.Exit(3)
		}
		k, _ := f.w.Write(p[:f.n])
		f.n = 0
		return k, errors.New("disk full (simulated)")
	}
	f.n -= len(p)
	return f.w.Write(p)
}

// TestCrashingSaveHelper is the child process of
// TestInterruptedSaveKeepsPrevious: it dies in the middle of a save.
func TestCrashingSaveHelper(t *testing.T) {
	path := os.Getenv("NN_CRASH_SAVE_PATH")
	if path == "" {
		t.Skip("helper process only")
	}
	ps, opt := smallState(t, 2)
	saveWriterHook = func(w io.Writer) io.Writer { return &failingWriter{w: w, n: 5000, exit: true} }
	SaveCheckpoint(path, ps, opt, 99, nil)
	t.Fatal("the save was meant to crash")
}

func TestInterruptedSaveKeepsPrevious(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.safetensors")
	ps, opt := smallState(t, 1)
	if err := SaveCheckpoint(path, ps, opt, 1, nil); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)

	// 1. A write error midway: SaveCheckpoint fails, cleans up its temporary
	// file and leaves the previous checkpoint.
	ps2, opt2 := smallState(t, 2)
	saveWriterHook = func(w io.Writer) io.Writer { return &failingWriter{w: w, n: 5000} }
	err := SaveCheckpoint(path, ps2, opt2, 2, nil)
	saveWriterHook = nil
	if err == nil {
		t.Fatal("a failing write was not reported")
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("failed save changed the previous checkpoint")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}

	// 2. The process dies midway (os.Exit inside the write): the previous
	// checkpoint is still there and loads.
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashingSaveHelper$")
	cmd.Env = append(os.Environ(), "NN_CRASH_SAVE_PATH="+path)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("helper should have crashed with status 3: %v\n%s", err, out)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("crashed save changed the previous checkpoint")
	}
	ck, err := ReadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Step != 1 {
		t.Fatalf("step %d after the crash, want 1", ck.Step)
	}
	restored, ropt := smallState(t, 3)
	if err := ck.Restore(restored, ropt); err != nil {
		t.Fatal(err)
	}
	for i := range ps {
		if !sameBits(ps[i].Value, restored[i].Value) {
			t.Fatalf("%s differs from the checkpoint saved before the crash", ps[i].Name)
		}
	}
}
