package train

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/flashgorgon/flashgorgon/nn"
)

// Footprint is a lower bound, in bytes, of the memory that the main float32
// tensors take when training cfg on batch sequences of seq tokens while an
// evaluation runner of evalBatch sequences shares the parameters. With
// N = batch·seq, W the width, r the MLP ratio, L the layers, V the
// vocabulary and P ≈ 2·V·W + Context·W + L·(4 + 2r)·W² the parameters:
//
//	4·P                          parameters, gradients, AdamW's two moments
//	L·(8 + 2r)·N·W               each block's activations that its backward
//	                             reads (input, the two norms' inputs and
//	                             outputs, q, o before and after merging the
//	                             heads, the MLP's hidden layer before and
//	                             after GELU)
//	2·N·V                        logits and log-probabilities
//
// plus the evaluation runner's forward, (2 + r)·M·W + 2·M·V for
// M = evalBatch·seq. The runners' machine (package machine) reuses a buffer
// once its last reader has run, so activation gradients and the evaluation
// runner's earlier blocks take no memory of their own. Computed in float64,
// so absurd flags cannot overflow.
func Footprint(cfg nn.Config, batch, seq, evalBatch int) float64 {
	w, r, l, v := float64(cfg.Width), float64(cfg.MLPRatio), float64(cfg.Layers), float64(cfg.Vocab)
	p := 2*v*w + float64(cfg.Context)*w + l*(4+2*r)*w*w
	n, m := float64(batch)*float64(seq), float64(evalBatch)*float64(seq)
	floats := 4*p + l*(8+2*r)*n*w + 2*n*v + (2+r)*m*w + 2*m*v
	return 4 * floats
}

// CheckMemory returns an error when need bytes (a Footprint) exceed the
// machine's memory, which it reads from /proc/meminfo (MemTotal); where
// that file is missing it checks nothing. knobs names the flags that size
// the run, for the message.
func CheckMemory(need float64, knobs string) error {
	total, ok := memTotal()
	if !ok || need <= total {
		return nil
	}
	const gib = 1 << 30
	return fmt.Errorf("the model and batch need at least %.1f GiB for their tensors, more than this machine's %.1f GiB: lower %s", need/gib, total/gib, knobs)
}

// memTotal returns MemTotal of /proc/meminfo in bytes.
func memTotal() (float64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 3 && fields[0] == "MemTotal:" && fields[2] == "kB" {
			kb, err := strconv.ParseFloat(fields[1], 64)
			return kb * 1024, err == nil && kb > 0
		}
	}
	return 0, false
}
