package nn

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorgonia.org/tensor"
)

// smallState returns two parameters and an AdamW that has taken two steps.
// firstCheckpoint saves smallState(t, 1) at step 1 in a new directory and
// returns the file's path, the state and the bytes saved.
func firstCheckpoint(t *testing.T) (path string, ps []*Param, opt *AdamW, saved []byte) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "ckpt.safetensors")
	ps, opt = smallState(t, 1)
	if err := SaveCheckpoint(path, ps, opt, 1, nil); err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, ps, opt, saved
}

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
	path, ps, opt, before := firstCheckpoint(t)
	dir := filepath.Dir(path)

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

	// 3. The crash left its temporary file (the process had no chance to
	// remove it); the next save removes it, since its process is gone.
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("after the crash: %v, want the checkpoint and the crashed save's temporary file", entries)
	}
	if err := SaveCheckpoint(path, ps, opt, 3, nil); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("the crashed save's temporary file survived the next save: %v", entries)
	}
}

// TestSaveRefusesNonFinite: a parameter or optimizer moment holding NaN or
// ±Inf is never written over a good checkpoint; the error names the tensor
// and the index; AllowNonFinite writes it anyway.
func TestSaveRefusesNonFinite(t *testing.T) {
	for _, tc := range []struct {
		name   string
		poison func(ps []*Param, opt *AdamW)
		want   string
	}{
		{"NaN weight", func(ps []*Param, _ *AdamW) { floats[float32](ps[0].Value)[100] = float32(math.NaN()) }, `"layer.weight" (64, 32) holds NaN at flat index 100`},
		{"+Inf bias", func(ps []*Param, _ *AdamW) { floats[float64](ps[1].Value)[31] = math.Inf(1) }, `"layer.bias" (32) holds +Inf at flat index 31`},
		{"-Inf first moment", func(_ []*Param, o *AdamW) { floats[float32](o.m[0])[0] = float32(math.Inf(-1)) }, `"optim.m.layer.weight" (64, 32) holds -Inf at flat index 0`},
		{"NaN second moment", func(_ []*Param, o *AdamW) { floats[float64](o.v[1])[3] = math.NaN() }, `"optim.v.layer.bias" (32) holds NaN at flat index 3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, ps, opt, before := firstCheckpoint(t)
			tc.poison(ps, opt)
			err := SaveCheckpoint(path, ps, opt, 2, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Fatal("a refused save changed the previous checkpoint")
			}
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
				t.Fatalf("files left behind: %v", entries)
			}
			if err := SaveCheckpoint(path, ps, opt, 2, nil, AllowNonFinite()); err != nil {
				t.Fatalf("AllowNonFinite: %v", err)
			}
			ck, err := ReadCheckpoint(path)
			if err != nil {
				t.Fatal(err)
			}
			fresh, fopt := smallState(t, 2)
			if err := ck.Restore(fresh, fopt); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Restore of a non-finite checkpoint: error %v, want one containing %q", err, tc.want)
			}
			if err := ck.Restore(fresh, fopt, AllowNonFinite()); err != nil {
				t.Fatalf("Restore with AllowNonFinite: %v", err)
			}
		})
	}
}

// TestConfigEncodeJSON: the config's JSON reports what json.Marshal and
// Validate find instead of writing "" into a checkpoint.
func TestConfigEncodeJSON(t *testing.T) {
	c := tinyConfig()
	s, err := c.EncodeJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseConfig(s)
	if err != nil || back != c {
		t.Fatalf("read back %+v (%v), want %+v", back, err, c)
	}
	for _, d := range []float64{math.NaN(), math.Inf(1), -1} {
		c.Dropout = d
		if s, err := c.EncodeJSON(); err == nil || !strings.Contains(err.Error(), "dropout") {
			t.Errorf("dropout %g: EncodeJSON gave %q, %v", d, s, err)
		}
	}
}

// TestSavePathErrors: the errors of a bad target path say what the user did
// wrong, and nothing is written.
func TestSavePathErrors(t *testing.T) {
	dir := t.TempDir()
	ps, opt := smallState(t, 1)
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"", "nn.SaveCheckpoint: the path is empty"},
		{sub, "path " + sub + " is a directory"},
		{sub + "/", "ends in a separator"},
		{filepath.Join(dir, "missing", "ckpt"), "directory " + filepath.Join(dir, "missing") + " (of " + filepath.Join(dir, "missing", "ckpt") + ") does not exist"},
	} {
		err := SaveCheckpoint(tc.path, ps, opt, 1, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("path %q: error %v, want one containing %q", tc.path, err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(sub); len(entries) != 0 {
		t.Fatalf("files written into %s: %v", sub, entries)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("files written into %s: %v", dir, entries)
	}
}

// deadPID returns the id of a process that has exited (a child run to
// completion and reaped).
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestStaleTempFiles: a save removes the temporary files of dead processes
// saving to the same target, and nothing else.
func TestStaleTempFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.safetensors")
	dead, self := deadPID(t), os.Getpid()
	old := time.Now().Add(-2 * time.Hour)
	files := []struct {
		name  string
		stale bool
		mtime time.Time
	}{
		{fmt.Sprintf(".ckpt.safetensors.tmp-%d-123", dead), true, time.Time{}},
		{fmt.Sprintf(".ckpt.safetensors.tmp-%d-9", dead), true, old},
		{".ckpt.safetensors.tmp-3881596647", true, old},                  // older naming, an hour old
		{".ckpt.safetensors.tmp-3881596648", false, time.Time{}},         // older naming, recent
		{fmt.Sprintf(".ckpt.safetensors.tmp-%d-123", self), false, old},  // this process: maybe a save in progress
		{".ckpt.safetensors.tmp-1-123", false, old},                      // init: alive
		{fmt.Sprintf(".other.safetensors.tmp-%d-123", dead), false, old}, // another target
		{fmt.Sprintf(".ckpt.safetensors.tmp-%d-12x", dead), false, old},  // not our naming
		{fmt.Sprintf(".ckpt.safetensors.tmp-%d-", dead), false, old},
		{fmt.Sprintf("ckpt.safetensors.tmp-%d-123", dead), false, old},
		{fmt.Sprintf(".ckpt.safetensors.tmp-%d-123.bak", dead), false, old},
		{"notes.txt", false, old},
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
		if !f.mtime.IsZero() {
			if err := os.Chtimes(p, f.mtime, f.mtime); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A directory of our naming is never removed.
	if err := os.Mkdir(filepath.Join(dir, fmt.Sprintf(".ckpt.safetensors.tmp-%d-77", dead)), 0o755); err != nil {
		t.Fatal(err)
	}
	ps, opt := smallState(t, 1)
	if err := SaveCheckpoint(path, ps, opt, 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		_, err := os.Stat(filepath.Join(dir, f.name))
		if gone := errors.Is(err, os.ErrNotExist); gone != f.stale {
			t.Errorf("%s: removed %t, want %t", f.name, gone, f.stale)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf(".ckpt.safetensors.tmp-%d-77", dead))); err != nil {
		t.Error("a directory of our naming was removed")
	}
}

// TestSlowSaveHelper is the child process of TestSaveBesideLiveWriter: it
// saves to NN_SLOW_SAVE_PATH, pausing after the first bytes until the file
// NN_SLOW_SAVE_GO exists.
func TestSlowSaveHelper(t *testing.T) {
	path := os.Getenv("NN_SLOW_SAVE_PATH")
	if path == "" {
		t.Skip("helper process only")
	}
	ps, opt := smallState(t, 2)
	saveWriterHook = func(w io.Writer) io.Writer {
		return &pausingWriter{w: w, n: 5000, release: os.Getenv("NN_SLOW_SAVE_GO")}
	}
	if err := SaveCheckpoint(path, ps, opt, 99, nil); err != nil {
		t.Fatal(err)
	}
}

// pausingWriter passes n bytes through, says "paused" on stdout, and waits
// for the file release to exist before going on.
type pausingWriter struct {
	w       io.Writer
	n       int
	release string
}

func (p *pausingWriter) Write(b []byte) (int, error) {
	if p.n >= 0 && len(b) > p.n {
		k, err := p.w.Write(b[:p.n])
		if err != nil {
			return k, err
		}
		b, p.n = b[p.n:], -1
		if f, ok := p.w.(interface{ Flush() error }); ok {
			f.Flush()
		}
		fmt.Println("paused")
		for {
			if _, err := os.Stat(p.release); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		n, err := p.w.Write(b)
		return k + n, err
	}
	if p.n >= 0 {
		p.n -= len(b)
	}
	return p.w.Write(b)
}

// TestSaveBesideLiveWriter: a save does not remove the temporary file of
// another process saving to the same target at the same time; both saves
// complete and the file holds the last one renamed.
func TestSaveBesideLiveWriter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.safetensors")
	release := filepath.Join(t.TempDir(), "go")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSlowSaveHelper$")
	cmd.Env = append(os.Environ(), "NN_SLOW_SAVE_PATH="+path, "NN_SLOW_SAVE_GO="+release)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		os.WriteFile(release, nil, 0o644)
		cmd.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "paused\n" {
		t.Fatalf("helper: %q, %v\n%s", line, err, stderr.String())
	}
	temp := fmt.Sprintf(".ckpt.safetensors.tmp-%d-", cmd.Process.Pid)
	hasTemp := func() bool {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), temp) {
				return true
			}
		}
		return false
	}
	if !hasTemp() {
		t.Fatal("the helper's temporary file is not there")
	}
	ps, opt := smallState(t, 1)
	if err := SaveCheckpoint(path, ps, opt, 1, nil); err != nil {
		t.Fatal(err)
	}
	if !hasTemp() {
		t.Fatal("a save removed the temporary file of a live writer")
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper's save failed: %v\n%s", err, stderr.String())
	}
	ck, err := ReadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Step != 99 {
		t.Fatalf("step %d, want the helper's 99", ck.Step)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("files left: %v", entries)
	}
}

// snapshot returns float64 copies of the parameters and moments, to check
// that a refused call changed nothing.
func snapshot(ps []*Param, opt *AdamW) [][]float64 {
	var out [][]float64
	for _, p := range ps {
		out = append(out, toF64(p.Value))
	}
	if opt != nil {
		for i := range opt.m {
			out = append(out, toF64(opt.m[i]), toF64(opt.v[i]))
		}
		out = append(out, []float64{float64(opt.t), opt.Beta1, opt.Beta2, opt.Eps, opt.WeightDecay})
	}
	return out
}

func sameSnapshot(a, b [][]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if math.Float64bits(a[i][j]) != math.Float64bits(b[i][j]) {
				return false
			}
		}
	}
	return true
}

// TestRestoreStrict: PyTorch's load_state_dict(strict=True) semantics by
// default, strict=False with NonStrict().
func TestRestoreStrict(t *testing.T) {
	dir := t.TempDir()
	model := func(layers int, seed int64) *GPT {
		c := tinyConfig()
		c.Layers = layers
		m, err := NewGPT(c, tensor.Float32, rand.New(rand.NewSource(seed)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	two, one := model(2, 1), model(1, 2)
	twoPath, onePath := filepath.Join(dir, "two"), filepath.Join(dir, "one")
	if err := SaveCheckpoint(twoPath, two.Params(), nil, 5, nil); err != nil {
		t.Fatal(err)
	}
	if err := SaveCheckpoint(onePath, one.Params(), nil, 5, nil); err != nil {
		t.Fatal(err)
	}
	read := func(p string) *Checkpoint {
		ck, err := ReadCheckpoint(p)
		if err != nil {
			t.Fatal(err)
		}
		return ck
	}

	// 2 layers into 1: the block-1 tensors are unexpected, by name.
	target := model(1, 3)
	before := snapshot(target.Params(), nil)
	err := read(twoPath).Restore(target.Params(), nil)
	if err == nil {
		t.Fatal("a 2-layer checkpoint restored into a 1-layer model")
	}
	for _, want := range []string{"12 unexpected tensors", `"blocks.1.attn.proj.bias"`, `"blocks.1.attn.proj.weight"`, "and 4 more", "NonStrict()"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "missing") {
		t.Errorf("error %q reports missing tensors; there are none", err)
	}
	if !sameSnapshot(before, snapshot(target.Params(), nil)) {
		t.Fatal("a refused restore changed the model")
	}

	// 1 layer into 2: the block-1 tensors are missing.
	target2 := model(2, 4)
	err = read(onePath).Restore(target2.Params(), nil)
	if err == nil || !strings.Contains(err.Error(), "12 missing tensors") || !strings.Contains(err.Error(), `"blocks.1.ln1.weight"`) {
		t.Fatalf("1-layer checkpoint into a 2-layer model: %v", err)
	}

	// NonStrict: the common tensors are copied, the others kept.
	keep := snapshot(target2.Params(), nil)
	if err := read(onePath).Restore(target2.Params(), nil, NonStrict()); err != nil {
		t.Fatal(err)
	}
	src := map[string]*Param{}
	for _, p := range one.Params() {
		src[p.Name] = p
	}
	for i, p := range target2.Params() {
		if s, ok := src[p.Name]; ok {
			if !sameBits(p.Value, s.Value) {
				t.Errorf("NonStrict: %s not restored", p.Name)
			}
		} else if !sameSnapshot([][]float64{keep[i]}, [][]float64{toF64(p.Value)}) {
			t.Errorf("NonStrict: %s, absent from the checkpoint, changed", p.Name)
		}
	}
	if err := read(twoPath).Restore(model(1, 5).Params(), nil, NonStrict()); err != nil {
		t.Fatalf("NonStrict with unexpected tensors: %v", err)
	}

	// Shape mismatches are errors, strict or not, and are all named.
	wide := tinyConfig()
	wide.Vocab = 9
	wm, _ := NewGPT(wide, tensor.Float32, rand.New(rand.NewSource(6)))
	for _, opts := range [][]CheckpointOption{nil, {NonStrict()}} {
		err := read(twoPath).Restore(wm.Params(), nil, opts...)
		if err == nil || !strings.Contains(err.Error(), `2 tensors differ in shape or dtype: "tok_emb.weight" is float32(7, 8) in the checkpoint, float32(9, 8) in the model, "head.weight"`) {
			t.Errorf("vocabulary 7 into 9 (%d options): %v", len(opts), err)
		}
	}

	// A model alone from a checkpoint with optimizer state: not a mismatch.
	ps, opt := smallState(t, 1)
	full := filepath.Join(dir, "full")
	if err := SaveCheckpoint(full, ps, opt, 2, nil); err != nil {
		t.Fatal(err)
	}
	fresh, fopt := smallState(t, 2)
	if err := read(full).Restore(fresh, nil); err != nil {
		t.Fatalf("parameters alone: %v", err)
	}
	// An optimizer from a checkpoint without one: missing, strict; kept,
	// NonStrict.
	bare := filepath.Join(dir, "bare")
	if err := SaveCheckpoint(bare, ps, nil, 2, nil); err != nil {
		t.Fatal(err)
	}
	err = read(bare).Restore(fresh, fopt)
	if err == nil || !strings.Contains(err.Error(), `4 missing tensors`) || !strings.Contains(err.Error(), `"optim.m.layer.bias"`) {
		t.Fatalf("optimizer from a checkpoint without one: %v", err)
	}
	before = snapshot(fresh, fopt)
	if err := read(bare).Restore(fresh, fopt, NonStrict()); err != nil {
		t.Fatal(err)
	}
	after := snapshot(fresh, fopt)
	if !sameSnapshot(after[2:], before[2:]) || !sameSnapshot(after[:2], snapshot(ps, nil)) {
		t.Fatal("NonStrict without optimizer state: want the parameters restored and the optimizer kept")
	}
}

// TestRestoreValidates: optimizer hyperparameters read from a file obey
// NewAdamW's rules, and non-finite tensors are refused by name; a refused
// restore changes nothing.
func TestRestoreValidates(t *testing.T) {
	ps, opt := smallState(t, 1)
	var buf bytes.Buffer
	path := filepath.Join(t.TempDir(), "ckpt")
	if err := SaveCheckpoint(path, ps, opt, 2, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mod  func(ts map[string]*tensor.Dense, md map[string]string)
		want string
	}{
		{"beta1 NaN", func(_ map[string]*tensor.Dense, md map[string]string) { md["optim.beta1"] = "NaN" }, "optimizer beta1 NaN"},
		{"beta2 5", func(_ map[string]*tensor.Dense, md map[string]string) { md["optim.beta2"] = "5" }, "optimizer beta2 5"},
		{"eps -1", func(_ map[string]*tensor.Dense, md map[string]string) { md["optim.eps"] = "-1" }, "optimizer eps -1"},
		{"eps +Inf", func(_ map[string]*tensor.Dense, md map[string]string) { md["optim.eps"] = "+Inf" }, "optimizer eps +Inf"},
		{"weight decay Inf", func(_ map[string]*tensor.Dense, md map[string]string) { md["optim.weight_decay"] = "Inf" }, "weight decay +Inf"},
		{"weight decay text", func(_ map[string]*tensor.Dense, md map[string]string) { md["optim.weight_decay"] = "lots" }, `optim.weight_decay "lots" is not a number`},
		{"t negative", func(_ map[string]*tensor.Dense, md map[string]string) { md["optim.t"] = "-3" }, `optim.t "-3"`},
		{"t missing", func(_ map[string]*tensor.Dense, md map[string]string) { delete(md, "optim.t") }, "lacks the optimizer metadata optim.t"},
		{"NaN weight", func(ts map[string]*tensor.Dense, _ map[string]string) {
			floats[float32](ts["layer.weight"])[9] = float32(math.NaN())
		}, `"layer.weight" (64, 32) holds NaN at flat index 9`},
		{"Inf moment", func(ts map[string]*tensor.Dense, _ map[string]string) {
			floats[float64](ts["optim.m.layer.bias"])[2] = math.Inf(-1)
		}, `"optim.m.layer.bias" (32) holds -Inf at flat index 2`},
		{"negative second moment", func(ts map[string]*tensor.Dense, _ map[string]string) {
			floats[float32](ts["optim.v.layer.weight"])[4] = -1
		}, `"optim.v.layer.weight" (64, 32) holds -1 at flat index 4`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Through a file: read, modify, write, read back.
			ck, err := ReadCheckpoint(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.mod(ck.Tensors, ck.Metadata)
			var ts []NamedTensor
			for n, x := range ck.Tensors {
				ts = append(ts, NamedTensor{n, x})
			}
			buf.Reset()
			if err := WriteSafetensors(&buf, ts, ck.Metadata); err != nil {
				t.Fatal(err)
			}
			bad := filepath.Join(t.TempDir(), "bad")
			if err := os.WriteFile(bad, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			if ck, err = ReadCheckpoint(bad); err != nil {
				t.Fatal(err)
			}
			fresh, fopt := smallState(t, 2)
			before := snapshot(fresh, fopt)
			err = ck.Restore(fresh, fopt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if !sameSnapshot(before, snapshot(fresh, fopt)) {
				t.Fatal("a refused restore changed the model or the optimizer")
			}
		})
	}
}
