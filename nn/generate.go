package nn

import (
	"fmt"
	"math"
	"math/rand"
)

// checkTemperature refuses a sampling temperature that is NaN, negative or
// +Inf, and a nil rng when the temperature asks for sampling.
func checkTemperature(temperature float64, rng *rand.Rand) error {
	if !(temperature >= 0) || math.IsInf(temperature, 1) {
		return fmt.Errorf("temperature %g must be finite and ≥ 0 (0 picks the argmax)", temperature)
	}
	if temperature > 0 && rng == nil {
		return fmt.Errorf("temperature %g samples, and the random source is nil (temperature 0 needs none)", temperature)
	}
	return nil
}

// SampleLogits draws index i with probability softmax(logits/temperature)_i;
// temperature 0 returns the argmax (the first one on ties) and needs no rng.
// Logits may be −Inf (never drawn) but not NaN or +Inf, and at least one must
// be finite; the temperature must be finite and ≥ 0.
func SampleLogits(logits []float64, temperature float64, rng *rand.Rand) (int, error) {
	if len(logits) == 0 {
		return 0, fmt.Errorf("nn.SampleLogits: no logits")
	}
	if err := checkTemperature(temperature, rng); err != nil {
		return 0, fmt.Errorf("nn.SampleLogits: %w", err)
	}
	best := 0
	for i, l := range logits {
		if math.IsNaN(l) || math.IsInf(l, 1) {
			return 0, fmt.Errorf("nn.SampleLogits: logit %d is %g", i, l)
		}
		if l > logits[best] {
			best = i
		}
	}
	if math.IsInf(logits[best], -1) {
		return 0, fmt.Errorf("nn.SampleLogits: all %d logits are -Inf", len(logits))
	}
	if temperature == 0 {
		return best, nil
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
			return i, nil
		}
		u -= pi
	}
	return best, nil
}

// Generate extends each prompt by n ≥ 0 tokens, one at a time: the next
// token of a sequence is drawn by SampleLogits from the logits at its last
// position, the model seeing at most the last r.Seq tokens. r must be a
// runner of m with r.Batch ≥ len(prompts) (unused rows are padding); prompts
// may differ in length but must not be empty, and their tokens must lie in
// [0, V). Because attention is causal, the padding after a sequence's last
// token does not change its logits. It returns the generated tokens of each
// prompt. rng may be nil only for temperature 0 (greedy decoding).
func Generate(r *Runner, prompts [][]int, n int, temperature float64, rng *rand.Rand) ([][]int, error) {
	if err := r.check("nn.Generate"); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("nn.Generate: %d tokens to generate; want n ≥ 0", n)
	}
	if err := checkTemperature(temperature, rng); err != nil {
		return nil, fmt.Errorf("nn.Generate: %w", err)
	}
	if len(prompts) == 0 || len(prompts) > r.Batch {
		return nil, fmt.Errorf("nn.Generate: %d prompts for a runner of batch %d", len(prompts), r.Batch)
	}
	V := r.Model.Config.Vocab
	seqs := make([][]int, len(prompts))
	for i, p := range prompts {
		if len(p) == 0 {
			return nil, fmt.Errorf("nn.Generate: prompt %d is empty", i)
		}
		for j, t := range p {
			if t < 0 || t >= V {
				return nil, fmt.Errorf("nn.Generate: token %d at position %d of prompt %d is outside the vocabulary [0, %d)", t, j, i, V)
			}
		}
		seqs[i] = append([]int(nil), p...)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
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
		if _, err := r.run(tokens, targets, nil); err != nil {
			return nil, fmt.Errorf("nn.Generate: %w", err)
		}
		for b := range seqs {
			logits, err := r.logitsRow(b, last[b])
			if err != nil {
				return nil, err
			}
			next, err := SampleLogits(logits, temperature, rng)
			if err != nil {
				return nil, fmt.Errorf("nn.Generate: step %d, sequence %d: %w", step, b, err)
			}
			seqs[b] = append(seqs[b], next)
		}
	}
	out := make([][]int, len(seqs))
	for b, s := range seqs {
		out[b] = s[len(prompts[b]):]
	}
	return out, nil
}
