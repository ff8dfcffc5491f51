package train

import (
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// History is the loss curve of a run, kept in its checkpoint so that a
// resumed run plots all of it.
type History struct {
	Train []float64    `json:"train"` // training loss of step s at index s (0-based)
	Val   [][2]float64 `json:"val"`   // (steps done, validation loss), steps increasing
}

// AddVal records the validation loss after done steps, replacing a value
// recorded at the same step (a resumed run that evaluates again).
func (h *History) AddVal(done int, loss float64) {
	if n := len(h.Val); n > 0 && h.Val[n-1][0] == float64(done) {
		h.Val = h.Val[:n-1]
	}
	h.Val = append(h.Val, [2]float64{float64(done), loss})
}

// Truncate drops what was recorded after step done.
func (h *History) Truncate(done int) {
	if len(h.Train) > done {
		h.Train = h.Train[:done]
	}
	for len(h.Val) > 0 && h.Val[len(h.Val)-1][0] > float64(done) {
		h.Val = h.Val[:len(h.Val)-1]
	}
}

// Check returns a *Diverged naming the first NaN or ±Inf loss of h.
func (h *History) Check() error {
	for s, l := range h.Train {
		if !Finite(l) {
			return &Diverged{What: fmt.Sprintf("training loss %g at step %d", l, s)}
		}
	}
	for _, v := range h.Val {
		if !Finite(v[1]) {
			return &Diverged{What: fmt.Sprintf("validation loss %g after step %g", v[1], v[0])}
		}
	}
	return nil
}

// MarshalChecked is h as JSON, after Check (JSON has no NaN or Inf).
func (h *History) MarshalChecked() (string, error) {
	if err := h.Check(); err != nil {
		return "", err
	}
	b, err := json.Marshal(h)
	if err != nil {
		return "", fmt.Errorf("encoding the loss history: %w", err)
	}
	return string(b), nil
}

// ParseHistory reads a history written by MarshalChecked.
func ParseHistory(s string) (History, error) {
	var h History
	if err := json.Unmarshal([]byte(s), &h); err != nil {
		return History{}, fmt.Errorf("loss history: %w", err)
	}
	if err := h.Check(); err != nil {
		return History{}, fmt.Errorf("loss history: %w", err)
	}
	return h, nil
}

// Ref is a horizontal reference line of a loss plot.
type Ref struct {
	Label string
	Y     float64
}

// Plot writes the loss curve to path (PNG): the training loss of each
// step (and its moving average), the validation points, and the reference
// lines.
func (h *History) Plot(path, title, yLabel string, refs ...Ref) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "step"
	p.Y.Label.Text = yLabel

	raw := make(plotter.XYs, len(h.Train))
	smooth := make(plotter.XYs, len(h.Train))
	// Exponential moving average with the start-up bias removed:
	// ema_t/(1 − 0.95ᵗ) weighs the first steps as a plain average would.
	ema, w := 0.0, 1.0
	for i, l := range h.Train {
		raw[i].X, raw[i].Y = float64(i+1), l
		ema = 0.95*ema + 0.05*l
		w *= 0.95
		smooth[i].X, smooth[i].Y = float64(i+1), ema/(1-w)
	}
	val := make(plotter.XYs, len(h.Val))
	for i, v := range h.Val {
		val[i].X, val[i].Y = v[0], v[1]
	}
	last := float64(len(h.Train))
	if last < 1 {
		last = 1
	}

	rawLine, err := plotter.NewLine(raw)
	if err != nil {
		return fmt.Errorf("plotting: %w", err)
	}
	rawLine.Color = color.Gray{Y: 170}
	rawLine.Width = vg.Points(0.3)
	smoothLine, err := plotter.NewLine(smooth)
	if err != nil {
		return fmt.Errorf("plotting: %w", err)
	}
	smoothLine.Width = vg.Points(1.5)
	smoothLine.Color = plotutil.Color(0)
	p.Add(rawLine, smoothLine)
	p.Legend.Add("train (per step)", rawLine)
	p.Legend.Add("train (moving average)", smoothLine)
	for i, r := range refs {
		refLine, err := plotter.NewLine(plotter.XYs{{X: 0, Y: r.Y}, {X: last, Y: r.Y}})
		if err != nil {
			return fmt.Errorf("plotting: %w", err)
		}
		refLine.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		refLine.Color = plotutil.Color(2 + i)
		p.Add(refLine)
		p.Legend.Add(r.Label, refLine)
	}
	if len(val) > 0 {
		valLine, valPoints, err := plotter.NewLinePoints(val)
		if err != nil {
			return fmt.Errorf("plotting: %w", err)
		}
		valLine.Color, valPoints.Color = plotutil.Color(1), plotutil.Color(1)
		p.Add(valLine, valPoints)
		p.Legend.Add("validation", valLine, valPoints)
	}
	p.Legend.Top = true
	p.Y.Min = 0
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// WriteCSV writes the numbers behind the plot to path: one line per
// training step, "step,train_loss,val_loss" (step counted from 1: the steps
// done), with val_loss empty at steps where the validation loss was not
// measured. Two runs (the CPU and the GPU path, say) are compared from
// these files.
func (h *History) WriteCSV(path string) error {
	val := make(map[int]float64, len(h.Val))
	for _, p := range h.Val {
		val[int(p[0])] = p[1]
	}
	var b strings.Builder
	b.WriteString("step,train_loss,val_loss\n")
	for i, l := range h.Train {
		step := i + 1
		fmt.Fprintf(&b, "%d,%.6f,", step, l)
		if v, ok := val[step]; ok {
			fmt.Fprintf(&b, "%.6f", v)
		}
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
