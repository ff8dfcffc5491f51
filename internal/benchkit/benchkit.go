// Package benchkit holds what the attention benchmarks (ops/attention's Go benchmarks,
// cmd/cpubench, cuda/cmd/attnbench) share: the problem shape and FlashAttention's FLOP
// convention (shared/ANCHORS.md), so that every table counts the same work.
package benchkit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Shape is one self-attention problem: q, k, v [B,H,N,d]. The JSON names are those the
// PyTorch scripts read and write.
type Shape struct {
	B      int  `json:"b"`
	H      int  `json:"h"`
	N      int  `json:"n"`
	D      int  `json:"d"`
	Causal bool `json:"causal"`
}

// FwdFLOPs is the forward's FLOP count in FlashAttention's convention: the two matrix products,
// 4·B·H·N²·d, halved when causal.
func (s Shape) FwdFLOPs() float64 { return FwdFLOPs(s.B, s.H, s.N, s.N, s.D, s.Causal) }

// FwdFLOPs is the same count for queries and keys of different lengths: 4·B·H·Nq·Nk·d, halved
// when causal.
func FwdFLOPs(b, h, nq, nk, d int, causal bool) float64 {
	f := 4 * float64(b) * float64(h) * float64(nq) * float64(nk) * float64(d)
	if causal {
		f /= 2
	}
	return f
}

// The backward counts BwdFactor times the forward's FLOPs, forward and backward together
// FwdBwdFactor times.
const (
	BwdFactor    = 2.5
	FwdBwdFactor = 3.5
)

// Ints parses a comma-separated list of positive integers ("1024,4096").
func Ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q in %q is not a positive integer", f, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// Torch is one PyTorch timing as the PyTorch scripts print it, a JSON object a line: the
// shape, the SDPA backend, the median forward and forward+backward times in milliseconds, and
// the error when the backend did not run. The scripts add their own fields (dtype, threads).
type Torch struct {
	Shape
	Backend  string  `json:"backend"`
	FwdMs    float64 `json:"fwd_ms"`
	FwdBwdMs float64 `json:"fwdbwd_ms"`
	Error    string  `json:"error"`
}

// DecodeLines decodes every line of r as a JSON T and calls row with it and the line; a line
// that does not decode is passed to bad instead.
func DecodeLines[T any](r io.Reader, row func(T, string), bad func(line string, err error)) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			bad(sc.Text(), err)
			continue
		}
		row(v, sc.Text())
	}
	return sc.Err()
}
