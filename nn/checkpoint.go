package nn

// Checkpoints are safetensors files (see safetensors.go) holding
//
//	<param name>          each parameter, e.g. "blocks.0.attn.qkv.weight"
//	optim.m.<param name>  AdamW's first moment of that parameter (same shape and dtype)
//	optim.v.<param name>  AdamW's second moment
//
// and the metadata (all values strings)
//
//	"format"       CheckpointFormat
//	"step"         the number of training steps done
//	"optim.t"      AdamW's update count; "optim.beta1", "optim.beta2",
//	               "optim.eps", "optim.weight_decay" its hyperparameters
//	               (written with strconv 'g' -1: they read back exactly)
//
// plus whatever the caller adds (the GPT model stores its Config as JSON
// under "config", Config.EncodeJSON). The parameter names and shapes of the
// GPT model are listed in gpt.go. Matrices are stored as [In, Out] (y = x·W),
// the transpose of PyTorch's nn.Linear layout.
//
// Saving never replaces a good checkpoint with a bad one: SaveCheckpoint
// refuses parameters or optimizer moments holding NaN or ±Inf (unless
// AllowNonFinite), optimizer hyperparameters that NewAdamW would refuse and
// reserved metadata keys, and writes through a temporary file that is renamed
// over the target only once complete and synced. Restoring is strict, as
// PyTorch's load_state_dict(strict=True): the checkpoint must hold exactly the
// tensors asked for (NonStrict relaxes that), with their shapes and dtypes,
// finite values and valid optimizer hyperparameters.
//
// Temporary files. A save to DIR/NAME writes DIR/.NAME.tmp-PID-RAND, where PID
// is the saving process's id. A process killed during a save (kill -9, power
// loss) leaves that file behind; the next save to DIR/NAME removes every
// DIR/.NAME.tmp-PID-RAND whose PID is not a live process on this machine (and
// is not its own: a save of another goroutine may be in progress). It never
// touches files of another name, of other targets, or of live processes.
// Files of the naming of older versions, DIR/.NAME.tmp-RAND (no PID), are
// removed once they are an hour old. A checkpoint directory shared by several
// machines (or PID namespaces) can see a live writer's file removed: that
// writer's rename then fails with an error and the checkpoint it would have
// replaced stays intact.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"gorgonia.org/tensor"
)

// CheckpointFormat is the "format" metadata value of nn's checkpoints.
const CheckpointFormat = "flashgorgon-nn-v1"

// Metadata keys that SaveCheckpoint writes itself; a caller's metadata may
// not use them.
var reservedMeta = []string{"format", "step", "optim.t", "optim.beta1", "optim.beta2", "optim.eps", "optim.weight_decay"}

// saveWriterHook, when set (tests only), wraps the writer of SaveCheckpoint,
// e.g. to interrupt a save midway.
var saveWriterHook func(io.Writer) io.Writer

// CheckpointOption relaxes a check of SaveCheckpoint or Checkpoint.Restore.
type CheckpointOption func(*checkpointOptions)

type checkpointOptions struct {
	allowNonFinite bool
	nonStrict      bool
}

func checkpointOpts(opts []CheckpointOption) checkpointOptions {
	var o checkpointOptions
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// AllowNonFinite lets SaveCheckpoint write, and Checkpoint.Restore load,
// parameters and optimizer moments that hold NaN or ±Inf (to keep a diverged
// run for inspection; never over a checkpoint one wants to resume from).
func AllowNonFinite() CheckpointOption { return func(o *checkpointOptions) { o.allowNonFinite = true } }

// NonStrict makes Checkpoint.Restore behave like PyTorch's
// load_state_dict(strict=False): a tensor the model has and the checkpoint
// lacks keeps its current value, a tensor only the checkpoint has is ignored,
// and an optimizer metadata key the checkpoint lacks keeps the optimizer's
// value. Shapes and dtypes of the tensors both hold must still agree.
// SaveCheckpoint ignores it.
func NonStrict() CheckpointOption { return func(o *checkpointOptions) { o.nonStrict = true } }

// SaveCheckpoint writes params, the optimizer state (when opt is not nil),
// step and meta to path. The file is written to a temporary file in the same
// directory, synced, and renamed over path, so an interrupted save leaves any
// previous checkpoint at path intact (see the top of checkpoint.go for the
// temporary files and their cleanup).
//
// It is an error, and path is left as it was, when path is empty, names a
// directory or something else that is not a regular file, or lies in a
// directory that does not exist; when a parameter or optimizer moment holds
// NaN or ±Inf (the error names the tensor and the index; AllowNonFinite
// saves it anyway); when the optimizer's hyperparameters fail CheckAdamW or
// it was not made over params; when step < 0; when meta uses a reserved key
// ("format", "step", "optim.*"); or when any write, sync, close or rename
// fails. SaveCheckpoint holds the parameters' lock for reading while it
// writes (see Runner).
func SaveCheckpoint(path string, params []*Param, opt *AdamW, step int, meta map[string]string, opts ...CheckpointOption) error {
	o := checkpointOpts(opts)
	if err := checkSavePath(path); err != nil {
		return fmt.Errorf("nn.SaveCheckpoint: %w", err)
	}
	if step < 0 {
		return fmt.Errorf("nn.SaveCheckpoint: step %d is negative", step)
	}
	if err := checkParamList("nn.SaveCheckpoint", params); err != nil {
		return err
	}
	for _, k := range reservedMeta {
		if _, ok := meta[k]; ok {
			return fmt.Errorf("nn.SaveCheckpoint: metadata key %q is reserved for the checkpoint's own use", k)
		}
	}
	if opt != nil {
		if err := opt.matches("nn.SaveCheckpoint", params); err != nil {
			return err
		}
		if err := CheckAdamW(opt.Beta1, opt.Beta2, opt.Eps, opt.WeightDecay); err != nil {
			return fmt.Errorf("nn.SaveCheckpoint: optimizer %w", err)
		}
	}
	if err := syncParams(params, nil); err != nil {
		return fmt.Errorf("nn.SaveCheckpoint: %w", err)
	}
	defer readLock(params)()
	tensors := make([]NamedTensor, 0, 3*len(params))
	for _, p := range params {
		tensors = append(tensors, NamedTensor{p.Name, p.Value})
	}
	md := map[string]string{}
	for k, v := range meta {
		md[k] = v
	}
	md["format"] = CheckpointFormat
	md["step"] = strconv.Itoa(step)
	if opt != nil {
		for i, p := range opt.params {
			tensors = append(tensors, NamedTensor{"optim.m." + p.Name, opt.m[i]}, NamedTensor{"optim.v." + p.Name, opt.v[i]})
		}
		md["optim.t"] = strconv.Itoa(opt.t)
		md["optim.beta1"] = ftoa(opt.Beta1)
		md["optim.beta2"] = ftoa(opt.Beta2)
		md["optim.eps"] = ftoa(opt.Eps)
		md["optim.weight_decay"] = ftoa(opt.WeightDecay)
	}
	if !o.allowNonFinite {
		for _, nt := range tensors {
			if err := checkFiniteTensor("tensor "+quote(nt.Name), nt.Tensor); err != nil {
				return fmt.Errorf("nn.SaveCheckpoint: %w; %s was left as it was (AllowNonFinite saves it anyway)", err, path)
			}
		}
	}
	removeStaleTemps(path)
	err := writeFileAtomic(path, func(w io.Writer) error {
		if saveWriterHook != nil {
			w = saveWriterHook(w)
		}
		return WriteSafetensors(w, tensors, md)
	})
	if err != nil {
		return fmt.Errorf("nn.SaveCheckpoint: %w", err)
	}
	return nil
}

// matches refuses an optimizer that was not made over params (in order).
func (o *AdamW) matches(what string, params []*Param) error {
	if len(o.params) != len(params) || len(o.m) != len(o.params) || len(o.v) != len(o.params) {
		return fmt.Errorf("%s: optimizer holds %d parameters, %d given", what, len(o.params), len(params))
	}
	for i, p := range o.params {
		if p != params[i] {
			return fmt.Errorf("%s: optimizer parameter %d is %s, given %s", what, i, p.Name, params[i].Name)
		}
	}
	return nil
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// checkSavePath returns an error saying what is wrong with path as the
// target of a save: empty, a directory (or ending in a separator), not a
// regular file, or in a directory that does not exist.
func checkSavePath(path string) error {
	if path == "" {
		return errors.New("the path is empty")
	}
	if os.IsPathSeparator(path[len(path)-1]) {
		return fmt.Errorf("path %s ends in a separator: it names a directory, not a file", path)
	}
	fi, err := os.Stat(path)
	if err == nil {
		if fi.IsDir() {
			return fmt.Errorf("path %s is a directory; give a file name (e.g. %s)", path, filepath.Join(path, "ckpt.safetensors"))
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("path %s exists and is not a regular file (%v)", path, fi.Mode().Type())
		}
		return nil
	}
	dir := filepath.Dir(path)
	di, derr := os.Stat(dir)
	switch {
	case errors.Is(derr, os.ErrNotExist):
		return fmt.Errorf("directory %s (of %s) does not exist", dir, path)
	case derr != nil:
		return derr
	case !di.IsDir():
		return fmt.Errorf("%s (the directory of %s) is not a directory", dir, path)
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	return nil
}

// tempPrefix is the start of the name of a temporary file saving to path:
// ".NAME.tmp-" (the full name is ".NAME.tmp-PID-RAND").
func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp-" }

// legacyTempAge is how old a temporary file of the naming used before PIDs
// were part of it (".NAME.tmp-RAND") must be before a save removes it.
const legacyTempAge = time.Hour

// tempOwner returns the PID in name when name is a temporary file name of
// prefix (prefix, decimal PID, "-", decimal digits), and whether it is one.
func tempOwner(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	pidStr, rnd, ok := strings.Cut(rest, "-")
	if !ok || !allDigits(pidStr) || !allDigits(rnd) || len(pidStr) > 9 {
		return 0, false
	}
	pid, err := strconv.Atoi(pidStr)
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// removeStaleTemps removes the temporary files of saves to path whose
// process is gone (the rule at the top of checkpoint.go). It is best effort:
// a file it cannot list or remove is left, and the save goes on.
func removeStaleTemps(path string) {
	dir, prefix := filepath.Dir(path), tempPrefix(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // the save itself will report the directory's problem
	}
	self := os.Getpid()
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		name := e.Name()
		if pid, ok := tempOwner(name, prefix); ok {
			if pid == self || !processGone(pid) {
				continue
			}
		} else if rnd, ok := strings.CutPrefix(name, prefix); !ok || !allDigits(rnd) {
			continue // not ours
		} else if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < legacyTempAge {
			continue // a legacy name, possibly still being written
		}
		os.Remove(filepath.Join(dir, name)) // best effort, as documented
	}
}

// writeFileAtomic writes path through a temporary file: create it next to
// path, write, flush, fsync, close, rename over path, fsync the directory. On
// any error before the rename the temporary file is removed and path is
// untouched.
func writeFileAtomic(path string, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, tempPrefix(path)+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close() // already failing: the write's error is the one to report
			}
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err = write(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	closed = true
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	// Make the rename itself durable. A platform that cannot sync a
	// directory says so with EINVAL (or cannot open one for reading); the
	// data is already safe then. Any other failure is reported, although
	// path already holds the new checkpoint.
	d, derr := os.Open(dir)
	if derr != nil {
		return nil
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil && !isSyncUnsupported(serr) {
		return fmt.Errorf("%s was written, but syncing its directory failed: %w", path, serr)
	}
	if cerr != nil {
		return fmt.Errorf("%s was written, but closing its directory failed: %w", path, cerr)
	}
	return nil
}

// Checkpoint is a checkpoint file read into memory.
type Checkpoint struct {
	Tensors  map[string]*tensor.Dense
	Metadata map[string]string
	Step     int
}

// ReadCheckpoint reads and validates the checkpoint at path.
func ReadCheckpoint(path string) (*Checkpoint, error) {
	if path == "" {
		return nil, errors.New("nn.ReadCheckpoint: the path is empty")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("nn.ReadCheckpoint: %w", err)
	}
	ts, md, err := ReadSafetensors(b)
	if err != nil {
		return nil, fmt.Errorf("nn.ReadCheckpoint %s: %w", path, err)
	}
	if md["format"] != CheckpointFormat {
		return nil, fmt.Errorf("nn.ReadCheckpoint %s: format %q, want %q", path, md["format"], CheckpointFormat)
	}
	step, err := strconv.Atoi(md["step"])
	if err != nil || step < 0 {
		return nil, fmt.Errorf("nn.ReadCheckpoint %s: bad step %q", path, md["step"])
	}
	return &Checkpoint{Tensors: ts, Metadata: md, Step: step}, nil
}

// optimPrefixes are the name prefixes of the optimizer's tensors.
var optimPrefixes = []string{"optim.m.", "optim.v."}

// Restore copies the checkpoint into params (matched by name) and, when opt
// is not nil, the optimizer's moments, update count and hyperparameters.
// Nothing is modified unless every check passes:
//
//   - strict (the default): the checkpoint holds exactly the tensors asked
//     for: each parameter, and with opt the moments "optim.m.<name>" and
//     "optim.v.<name>" of each and the optimizer metadata. The error lists
//     the missing and the unexpected tensors. Without opt, the checkpoint's
//     optimizer tensors and metadata are ignored (restoring a model alone is
//     not a mismatch). NonStrict() skips missing and unexpected tensors;
//   - every tensor present in both has the model's dtype and shape (an error
//     lists the mismatches, strict or not);
//   - the restored parameters and moments are finite, and the second moments
//     ≥ 0 (the error names the tensor and index; AllowNonFinite skips the
//     finiteness check);
//   - the optimizer's update count is an integer ≥ 0 and its hyperparameters
//     pass CheckAdamW, like NewAdamW's arguments;
//   - opt, when not nil, was made over params.
//
// Restore holds the parameters' lock for writing while it copies.
func (c *Checkpoint) Restore(params []*Param, opt *AdamW, opts ...CheckpointOption) error {
	const what = "nn.Checkpoint.Restore"
	if c == nil {
		return errors.New(what + ": the checkpoint is nil")
	}
	o := checkpointOpts(opts)
	if err := checkParamList(what, params); err != nil {
		return err
	}
	if opt != nil {
		if err := opt.matches(what, params); err != nil {
			return err
		}
	}
	type copyJob struct {
		name     string
		dst, src *tensor.Dense
		second   bool // a second moment: must be ≥ 0
	}
	var jobs []copyJob
	var missing, mismatched []string
	want := map[string]bool{}
	expect := func(name string, dst *tensor.Dense, second bool) {
		want[name] = true
		src, ok := c.Tensors[name]
		switch {
		case !ok || src == nil:
			missing = append(missing, name)
		case src.Dtype() != dst.Dtype() || !src.Shape().Eq(dst.Shape()):
			mismatched = append(mismatched, fmt.Sprintf("%q is %v%v in the checkpoint, %v%v in the model", name, src.Dtype(), src.Shape(), dst.Dtype(), dst.Shape()))
		default:
			jobs = append(jobs, copyJob{name, dst, src, second})
		}
	}
	for _, p := range params {
		expect(p.Name, p.Value, false)
	}
	if opt != nil {
		for i, p := range opt.params {
			expect(optimPrefixes[0]+p.Name, opt.m[i], false)
			expect(optimPrefixes[1]+p.Name, opt.v[i], true)
		}
	}
	var unexpected []string
	for name := range c.Tensors {
		if want[name] {
			continue
		}
		if opt == nil && (strings.HasPrefix(name, optimPrefixes[0]) || strings.HasPrefix(name, optimPrefixes[1])) {
			continue
		}
		unexpected = append(unexpected, name)
	}
	sort.Strings(unexpected)
	if len(mismatched) > 0 {
		return fmt.Errorf("%s: %d tensors differ in shape or dtype: %s", what, len(mismatched), listNames(mismatched, false))
	}
	if !o.nonStrict && (len(missing) > 0 || len(unexpected) > 0) {
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, fmt.Sprintf("%d missing tensors (the model has them, the checkpoint does not): %s", len(missing), listNames(missing, true)))
		}
		if len(unexpected) > 0 {
			parts = append(parts, fmt.Sprintf("%d unexpected tensors (the checkpoint has them, the model does not): %s", len(unexpected), listNames(unexpected, true)))
		}
		return fmt.Errorf("%s: the checkpoint does not match the model: %s; NonStrict() restores the tensors both hold", what, strings.Join(parts, "; "))
	}
	for _, j := range jobs {
		if !o.allowNonFinite {
			if err := checkFiniteTensor("tensor "+quote(j.name), j.src); err != nil {
				return fmt.Errorf("%s: %w (AllowNonFinite loads it anyway)", what, err)
			}
		}
		if j.second {
			if i, v := firstNegative(j.src); i >= 0 {
				return fmt.Errorf("%s: tensor %q %v holds %g at flat index %d; a second moment is ≥ 0", what, j.name, j.src.Shape(), v, i)
			}
		}
	}
	var hyper [4]float64
	optT := 0
	if opt != nil {
		hyper = [4]float64{opt.Beta1, opt.Beta2, opt.Eps, opt.WeightDecay}
		optT = opt.t
		keys := []string{"optim.beta1", "optim.beta2", "optim.eps", "optim.weight_decay"}
		var absent []string
		if s, ok := c.Metadata["optim.t"]; ok {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return fmt.Errorf("%s: optim.t %q is not an integer ≥ 0", what, s)
			}
			optT = n
		} else {
			absent = append(absent, "optim.t")
		}
		for i, k := range keys {
			s, ok := c.Metadata[k]
			if !ok {
				absent = append(absent, k)
				continue
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return fmt.Errorf("%s: %s %q is not a number", what, k, s)
			}
			hyper[i] = f
		}
		if len(absent) > 0 && !o.nonStrict {
			return fmt.Errorf("%s: the checkpoint lacks the optimizer metadata %s (saved without an optimizer?); NonStrict() keeps the optimizer's values", what, strings.Join(absent, ", "))
		}
		if err := CheckAdamW(hyper[0], hyper[1], hyper[2], hyper[3]); err != nil {
			return fmt.Errorf("%s: the checkpoint's optimizer %w", what, err)
		}
	}
	// Values a device trains are brought to the host first (a non-strict
	// restore keeps the ones it does not overwrite), and uploaded again
	// before the device's next step.
	if err := syncParams(params, nil); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer markHostNewer(params)
	defer writeLock(params)()
	for _, j := range jobs {
		copyDense(j.dst, j.src)
	}
	if opt != nil {
		opt.t = optT
		opt.Beta1, opt.Beta2, opt.Eps, opt.WeightDecay = hyper[0], hyper[1], hyper[2], hyper[3]
	}
	return nil
}

// listNames joins up to 8 names (quoted when quote is set) and says how many
// more there are.
func listNames(names []string, quoted bool) string {
	const show = 8
	var b strings.Builder
	for i, n := range names {
		if i == show {
			fmt.Fprintf(&b, ", and %d more", len(names)-show)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if quoted {
			n = quote(n)
		}
		b.WriteString(n)
	}
	return b.String()
}

// firstNegative returns the index and value of the first entry of t below
// 0, or -1.
func firstNegative(t *tensor.Dense) (int, float64) {
	switch d := t.Data().(type) {
	case []float32:
		for i, v := range d {
			if v < 0 {
				return i, float64(v)
			}
		}
	case []float64:
		for i, v := range d {
			if v < 0 {
				return i, v
			}
		}
	}
	return -1, 0
}

// copyDense copies src into dst (same dtype and size).
func copyDense(dst, src *tensor.Dense) {
	switch d := dst.Data().(type) {
	case []float32:
		copy(d, src.Data().([]float32))
	case []float64:
		copy(d, src.Data().([]float64))
	}
}
