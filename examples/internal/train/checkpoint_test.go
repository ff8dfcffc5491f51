package train

import (
	"bytes"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/nn"
)

// tinyModel is a GPT of a few hundred parameters and its AdamW.
func tinyModel(t *testing.T) ([]*nn.Param, *nn.AdamW) {
	t.Helper()
	m, err := nn.NewGPT(nn.Config{Vocab: 5, Context: 4, Layers: 1, Heads: 1, Width: 4, MLPRatio: 1}, tensor.Float32, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	opt, err := nn.NewAdamW(m.Params(), 0.9, 0.95, 1e-8, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m.Params(), opt
}

// gradsOf returns a gradient for each parameter, every element v.
func gradsOf(params []*nn.Param, v float32) []*tensor.Dense {
	gs := make([]*tensor.Dense, len(params))
	for i, p := range params {
		d := make([]float32, p.Size())
		for j := range d {
			d[j] = v
		}
		gs[i] = tensor.New(tensor.WithShape(p.Value.Shape().Clone()...), tensor.WithBacking(d))
	}
	return gs
}

// TestSaveCheckpointKeepsTheGoodOne: a checkpoint with a non-finite loss,
// parameter or optimizer moment is refused with a *Diverged naming it, and
// the good checkpoint already at the path is left byte for byte.
func TestSaveCheckpointKeepsTheGoodOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt.safetensors")
	params, opt := tinyModel(t)
	meta := map[string]string{"note": "x"}
	good := History{Train: []float64{1.5, 1.25}, Val: [][2]float64{{2, 1.375}}}
	if err := opt.Step(gradsOf(params, 0.5), 1e-3); err != nil {
		t.Fatal(err)
	}
	if err := SaveCheckpoint(path, params, opt, 2, &good, meta); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ck, err := nn.ReadCheckpoint(path)
	if err != nil || ck.Step != 2 || ck.Metadata["note"] != "x" {
		t.Fatalf("checkpoint: %v, %v", ck, err)
	}
	if h, err := ParseHistory(ck.Metadata[HistoryKey]); err != nil || h.Val[0][1] != 1.375 {
		t.Fatalf("history %+v, %v", h, err)
	}

	unchanged := func(t *testing.T, err error, what string) {
		t.Helper()
		if !IsDiverged(err) || !strings.Contains(err.Error(), what) {
			t.Fatalf("error %v, want a *Diverged naming %q", err, what)
		}
		got, rerr := os.ReadFile(path)
		if rerr != nil || !bytes.Equal(got, want) {
			t.Fatalf("the good checkpoint was changed (%v)", rerr)
		}
		if left, _ := filepath.Glob(path + ".*"); len(left) > 0 {
			t.Fatalf("left behind: %v", left)
		}
	}
	t.Run("NaN validation loss", func(t *testing.T) {
		h := History{Train: good.Train, Val: [][2]float64{{2, 1.375}, {3, math.NaN()}}}
		unchanged(t, SaveCheckpoint(path, params, opt, 3, &h, meta), "validation loss NaN after step 3")
	})
	t.Run("Inf training loss", func(t *testing.T) {
		h := History{Train: []float64{1.5, math.Inf(1)}}
		unchanged(t, SaveCheckpoint(path, params, opt, 3, &h, meta), "training loss +Inf at step 1")
	})
	t.Run("NaN parameter", func(t *testing.T) {
		p := params[len(params)-1]
		d := p.Value.Data().([]float32)
		old := d[1]
		d[1] = float32(math.NaN())
		defer func() { d[1] = old }()
		unchanged(t, SaveCheckpoint(path, params, opt, 3, &good, meta), p.Name)
	})
	t.Run("Inf moment", func(t *testing.T) {
		// A finite gradient of 1e20: v = (1 − β2)·g² = 5e38 overflows
		// float32 while the update m/(√v + ε) is 0, so every parameter
		// stays finite and only the check of the moments catches it.
		if err := opt.Step(gradsOf(params, 1e20), 1e-3); err != nil {
			t.Fatal(err)
		}
		if err := nn.CheckFinite(params); err != nil {
			t.Fatalf("the setup should leave the parameters finite: %v", err)
		}
		unchanged(t, SaveCheckpoint(path, params, opt, 3, &good, meta), "optim.v.")
	})
}

func TestPrepareOut(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir, want string
	}{
		{filepath.Join(dir, "a", "b"), ""},
		{dir, ""},
		{"", "-out is empty"},
		{file, "-out " + file + " is a file"},
		{filepath.Join(file, "sub"), "-out " + filepath.Join(file, "sub") + ": cannot create the folder"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			wantError(t, PrepareOut(tc.dir), tc.want)
			if tc.want == "" {
				if st, err := os.Stat(tc.dir); err != nil || !st.IsDir() {
					t.Fatalf("folder not made: %v", err)
				}
				if left, _ := filepath.Glob(filepath.Join(tc.dir, ".write-test-*")); len(left) > 0 {
					t.Fatalf("left behind: %v", left)
				}
			}
		})
	}
}
