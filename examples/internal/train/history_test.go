package train

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestHistoryEdits(t *testing.T) {
	h := History{Train: []float64{3, 2, 1, 0.5}, Val: [][2]float64{{2, 2.5}, {4, 0.75}}}
	h.AddVal(4, 0.7) // evaluated again at the same step: replaces
	h.AddVal(5, 0.6)
	if want := [][2]float64{{2, 2.5}, {4, 0.7}, {5, 0.6}}; !reflect.DeepEqual(h.Val, want) {
		t.Fatalf("Val %v, want %v", h.Val, want)
	}
	h.Truncate(3)
	if want := (History{Train: []float64{3, 2, 1}, Val: [][2]float64{{2, 2.5}}}); !reflect.DeepEqual(h, want) {
		t.Fatalf("after Truncate(3): %+v, want %+v", h, want)
	}
}

// TestHistoryJSON: a history survives the checkpoint's JSON bit for bit,
// and one with a NaN or ±Inf is refused (encoding/json cannot write them;
// the old gpt wrote an empty string instead, which -resume could not read).
func TestHistoryJSON(t *testing.T) {
	h := History{Train: []float64{math.Pi, 1e-300, 0.1 + 0.2}, Val: [][2]float64{{3, math.E}}}
	s, err := h.MarshalChecked()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseHistory(s)
	if err != nil || !reflect.DeepEqual(back, h) {
		t.Fatalf("round trip: %+v (%v), want %+v", back, err, h)
	}
	for _, tc := range []struct {
		h    History
		want string
	}{
		{History{Train: []float64{1, math.NaN()}}, "training loss NaN at step 1"},
		{History{Train: []float64{math.Inf(1)}}, "training loss +Inf at step 0"},
		{History{Val: [][2]float64{{5, math.Inf(-1)}}}, "validation loss -Inf after step 5"},
	} {
		if _, err := tc.h.MarshalChecked(); !IsDiverged(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want a *Diverged containing %q", tc.h, err, tc.want)
		}
	}
	for _, bad := range []string{"", "{", `{"train":"x"}`} {
		if _, err := ParseHistory(bad); err == nil {
			t.Errorf("ParseHistory(%q) accepted", bad)
		}
	}
}

func TestHistoryFiles(t *testing.T) {
	dir := t.TempDir()
	h := History{Train: []float64{2.5, 2, 1.25}, Val: [][2]float64{{2, 2.125}, {3, 1.5}}}
	csv := filepath.Join(dir, "loss.csv")
	if err := h.WriteCSV(csv); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(csv)
	want := "step,train_loss,val_loss\n1,2.500000,\n2,2.000000,2.125000\n3,1.250000,1.500000\n"
	if string(got) != want {
		t.Fatalf("loss.csv:\n%s\nwant:\n%s", got, want)
	}
	png := filepath.Join(dir, "loss.png")
	if err := h.Plot(png, "test", "loss", Ref{Label: "reference", Y: 2}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(png); !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatal("loss.png is not a PNG")
	}
	if err := h.WriteCSV(filepath.Join(dir, "missing", "loss.csv")); err == nil || !strings.Contains(err.Error(), "writing") {
		t.Fatalf("writing into a missing folder: %v", err)
	}
}
