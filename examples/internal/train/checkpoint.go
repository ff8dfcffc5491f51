package train

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flashgorgon/flashgorgon/nn"
)

// HistoryKey is the checkpoint metadata key of the loss history.
const HistoryKey = "history"

// SaveCheckpoint writes params, opt, step, meta and the history h (under
// HistoryKey) to path, but only a checkpoint that a resumed run can use:
// every loss of h, every parameter and every optimizer moment finite.
// Otherwise it returns a *Diverged naming the first bad value and leaves
// the file at path as it was, so a run that diverges keeps its last good
// checkpoint. nn.SaveCheckpoint checks the tensors (parameters and
// moments) before it writes anything, and writes atomically.
func SaveCheckpoint(path string, params []*nn.Param, opt *nn.AdamW, step int, h *History, meta map[string]string) error {
	hs, err := h.MarshalChecked()
	if err != nil {
		return err
	}
	md := make(map[string]string, len(meta)+1)
	for k, v := range meta {
		md[k] = v
	}
	md[HistoryKey] = hs
	err = nn.SaveCheckpoint(path, params, opt, step, md)
	var nf *nn.NonFiniteError
	if errors.As(err, &nf) {
		return &Diverged{What: nf.Error() + "; " + path + " was left as it was"}
	}
	return err
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
