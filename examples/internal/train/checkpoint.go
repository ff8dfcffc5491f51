package train

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/nn"
)

// HistoryKey is the checkpoint metadata key of the loss history.
const HistoryKey = "history"

// SaveCheckpoint writes params, opt, step, meta and the history h (under
// HistoryKey) to path, but only a checkpoint that a resumed run can use:
// every loss of h, every parameter and every optimizer moment finite.
// Otherwise it returns a *Diverged naming the first bad value and leaves
// the file at path as it was, so a run that diverges keeps its last good
// checkpoint.
//
// The losses and parameters are checked before writing. The optimizer's
// moments are private to nn, so the checkpoint goes first to path +
// ".unverified" (written atomically by nn.SaveCheckpoint), is read back
// and checked whole, and only then renamed over path.
func SaveCheckpoint(path string, params []*nn.Param, opt *nn.AdamW, step int, h *History, meta map[string]string) (err error) {
	hs, err := h.MarshalChecked()
	if err != nil {
		return err
	}
	for _, p := range params {
		if err := CheckTensor(p.Name, p.Value); err != nil {
			return err
		}
	}
	md := make(map[string]string, len(meta)+1)
	for k, v := range meta {
		md[k] = v
	}
	md[HistoryKey] = hs
	tmp := path + ".unverified"
	if err := nn.SaveCheckpoint(tmp, params, opt, step, md); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	ck, err := nn.ReadCheckpoint(tmp)
	if err != nil {
		return fmt.Errorf("reading back the checkpoint just written: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(ck.Tensors)) {
		if err := CheckTensor(name, ck.Tensors[name]); err != nil {
			return err
		}
	}
	if ck.Step != step || ck.Metadata[HistoryKey] != hs {
		return fmt.Errorf("the checkpoint read back from %s holds step %d and another history than the %d written", tmp, ck.Step, step)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("saving the checkpoint: %w", err)
	}
	// Make the rename durable where the platform can sync a folder; the
	// data itself is synced already, so a failure here is not an error.
	if d, derr := os.Open(filepath.Dir(path)); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// CheckTensor returns a *Diverged naming the first element of t (a float32
// or float64 tensor called name) that is NaN or ±Inf, or nil.
func CheckTensor(name string, t *tensor.Dense) error {
	bad, v := -1, 0.0
	switch d := t.Data().(type) {
	case []float32:
		for i, x := range d {
			if !Finite(float64(x)) {
				bad, v = i, float64(x)
				break
			}
		}
	case []float64:
		for i, x := range d {
			if !Finite(x) {
				bad, v = i, x
				break
			}
		}
	default:
		return fmt.Errorf("tensor %s holds %T, not float32 or float64", name, d)
	}
	if bad >= 0 {
		return &Diverged{What: fmt.Sprintf("%s%v element %d is %g", name, t.Shape(), bad, v)}
	}
	return nil
}

// PrepareOut creates the output folder dir (flag -out) when needed and
// checks that a file can be written in it, so that a bad -out fails before
// any training instead of at the first checkpoint.
func PrepareOut(dir string) error {
	if dir == "" {
		return fmt.Errorf("-out is empty: give a folder for the checkpoint and plots")
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("-out %s is a file, not a folder", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("-out %s: cannot create the folder: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".write-test-*")
	if err != nil {
		return fmt.Errorf("-out %s: cannot write in the folder: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("-out %s: cannot remove the test file %s: %w", dir, filepath.Base(name), err)
	}
	return nil
}
