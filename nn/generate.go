package nn

import (
	"fmt"
	"math"
	"math/rand"
)

// SampleLogits draws index i with probability softmax(logits/temperature)_i;
// temperature 0 returns the argmax (the first one on ties).
func SampleLogits(logits []float64, temperature float64, rng *rand.Rand) int {
	best := 0
	for i, l := range logits {
		if l > logits[best] {
			best = i
		}
	}
	if temperature <= 0 {
		return best
	}
	p := make([]float64, len(logits))
	z := 0.0
	for i, l := range logits {
		p[i] = math.Exp((l - logits[best]) / temperature)
		z += p[i]
	}
	u := rng.Float64() * z
	for i, pi := range p {
		if u < pi {
			return i
		}
		u -= pi
	}
	return best
}

// Generate extends each prompt by n tokens, one at a time: the next token of
// a sequence is drawn by SampleLogits from the logits at its last position,
// the model seeing at most the last r.Seq tokens. r must be a runner of m
// with r.Batch ≥ len(prompts) (unused rows are padding); prompts may differ
// in length but must not be empty. Because attention is causal, the padding
// after a sequence's last token does not change its logits. It returns the
// generated tokens of each prompt.
func Generate(r *Runner, prompts [][]int, n int, temperature float64, rng *rand.Rand) ([][]int, error) {
	if len(prompts) == 0 || len(prompts) > r.Batch {
		return nil, fmt.Errorf("nn.Generate: %d prompts for a runner of batch %d", len(prompts), r.Batch)
	}
	seqs := make([][]int, len(prompts))
	for i, p := range prompts {
		if len(p) == 0 {
			return nil, fmt.Errorf("nn.Generate: prompt %d is empty", i)
		}
		seqs[i] = append([]int(nil), p...)
	}
	tokens := make([]int, r.Batch*r.Seq)
	targets := make([]int, r.Batch*r.Seq)
	for i := range targets {
		targets[i] = IgnoreIndex
	}
	for step := 0; step < n; step++ {
		last := make([]int, len(seqs))
		clear(tokens)
		for b, s := range seqs {
			if len(s) > r.Seq {
				s = s[len(s)-r.Seq:]
			}
			copy(tokens[b*r.Seq:], s)
			last[b] = len(s) - 1
		}
		if _, err := r.Run(tokens, targets, nil); err != nil {
			return nil, fmt.Errorf("nn.Generate: %w", err)
		}
		for b := range seqs {
			logits, err := r.LogitsRow(b, last[b])
			if err != nil {
				return nil, err
			}
			seqs[b] = append(seqs[b], SampleLogits(logits, temperature, rng))
		}
	}
	out := make([][]int, len(seqs))
	for b, s := range seqs {
		out[b] = s[len(prompts[b]):]
	}
	return out, nil
}
