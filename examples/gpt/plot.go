package main

import (
	"fmt"
	"image/color"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plotLoss writes the loss curve to path (PNG): the training loss of each
// step (and its moving average), the validation points, and the unigram
// entropy as a horizontal reference line.
func plotLoss(path string, h history, unigram float64) error {
	p := plot.New()
	p.Title.Text = "character-level GPT"
	p.X.Label.Text = "step"
	p.Y.Label.Text = "loss (nats/char)"

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
	ref := plotter.XYs{{X: 0, Y: unigram}, {X: last, Y: unigram}}

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
	smoothLine.Color = plotColor(0)
	refLine, err := plotter.NewLine(ref)
	if err != nil {
		return fmt.Errorf("plotting: %w", err)
	}
	refLine.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	refLine.Color = plotColor(2)
	p.Add(rawLine, smoothLine, refLine)
	p.Legend.Add("train (per step)", rawLine)
	p.Legend.Add("train (moving average)", smoothLine)
	p.Legend.Add("unigram entropy", refLine)
	if len(val) > 0 {
		valLine, valPoints, err := plotter.NewLinePoints(val)
		if err != nil {
			return fmt.Errorf("plotting: %w", err)
		}
		valLine.Color, valPoints.Color = plotColor(1), plotColor(1)
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

// plotColor returns the i-th color of gonum/plot's soft palette.
func plotColor(i int) color.Color { return plotutil.Color(i) }

// writeLossCSV writes the numbers behind the plot to path: one line per
// training step, "step,train_loss,val_loss", with val_loss empty at steps
// where the validation loss was not measured. Two runs (the CPU and the GPU
// path, say) are compared from these files.
func writeLossCSV(path string, h history) error {
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
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
