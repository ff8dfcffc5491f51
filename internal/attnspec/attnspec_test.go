package attnspec

import (
	"strings"
	"testing"
)

// visibleByDefinition is the rule as the documentation states it, written independently of
// KeyLimit: key j is visible to query i when j < keyLen and, under the causal mask,
// j ≤ i + Nk − Nq.
func visibleByDefinition(i, j, nq, nk, keyLen int, causal bool) bool {
	if j >= keyLen {
		return false
	}
	if causal && j > i+(nk-nq) {
		return false
	}
	return true
}

// TestKeyLimitExamples checks KeyLimit on cases worked out by hand.
func TestKeyLimitExamples(t *testing.T) {
	for _, c := range []struct {
		i, nq, nk, keyLen int
		causal            bool
		want              int
	}{
		{0, 4, 4, 4, false, 4}, // no mask: every key
		{0, 4, 4, 4, true, 1},  // square causal: the diagonal
		{3, 4, 4, 4, true, 4},
		{0, 2, 5, 5, true, 4},  // Nq < Nk: bottom-right, query 0 sees keys 0..3
		{1, 2, 5, 5, true, 5},  // the last query sees every key
		{0, 5, 2, 2, true, 0},  // Nq > Nk: the first 3 queries see nothing
		{2, 5, 2, 2, true, 0},  //
		{3, 5, 2, 2, true, 1},  // query 3 sees key 0
		{4, 5, 2, 2, true, 2},  //
		{3, 4, 6, 2, false, 2}, // padding: keys from 2 on
		{3, 4, 6, 2, true, 2},  // padding below the causal limit
		{0, 4, 6, 6, true, 3},
		{0, 4, 6, 0, true, 0}, // no key at all
	} {
		if got := KeyLimit(c.i, c.nq, c.nk, c.keyLen, c.causal); got != c.want {
			t.Errorf("KeyLimit(i=%d, Nq=%d, Nk=%d, keyLen=%d, causal=%t) = %d, want %d", c.i, c.nq, c.nk, c.keyLen, c.causal, got, c.want)
		}
	}
}

// TestRuleAgainstDefinition checks KeyLimit, Visible, KeyEnd and FirstQuery against the
// definition over every (i, j) of a grid of sizes, key lengths and both masks.
func TestRuleAgainstDefinition(t *testing.T) {
	for _, nq := range []int{1, 2, 3, 7, 17} {
		for _, nk := range []int{1, 2, 5, 17} {
			for _, causal := range []bool{false, true} {
				kls := []int{0, 1, nk / 2, nk}
				p := Problem{B: len(kls), H: 1, Hkv: 1, Nq: nq, Nk: nk, D: 1, Scale: 1, Causal: causal, KeyLengths: kls}
				for pass := 0; pass < 2; pass++ {
					for b := 0; b < p.B; b++ {
						keyLen := nk
						if p.KeyLengths != nil {
							keyLen = kls[b]
						}
						if p.KeyEnd(b) != keyLen {
							t.Fatalf("%s causal=%t b=%d: KeyEnd = %d, want %d", p.Shape(), causal, b, p.KeyEnd(b), keyLen)
						}
						for j := 0; j < nk; j++ {
							first := nq // the first query that sees key j
							for i := 0; i < nq; i++ {
								want := visibleByDefinition(i, j, nq, nk, keyLen, causal)
								if got := p.Visible(b, i, j); got != want {
									t.Fatalf("%s causal=%t keyLen=%d: Visible(i=%d, j=%d) = %t, want %t", p.Shape(), causal, keyLen, i, j, got, want)
								}
								if want && first == nq {
									first = i
								}
							}
							for i := first; i < nq; i++ { // every later query sees it too
								if !visibleByDefinition(i, j, nq, nk, keyLen, causal) {
									t.Fatalf("%s: key %d seen by query %d but not by query %d", p.Shape(), j, first, i)
								}
							}
							if got := p.FirstQuery(b, j); got != first {
								t.Fatalf("%s causal=%t keyLen=%d: FirstQuery(j=%d) = %d, want %d", p.Shape(), causal, keyLen, j, got, first)
							}
						}
					}
					p.KeyLengths, kls = nil, []int{nk, nk, nk, nk} // second pass: no padding
				}
			}
		}
	}
}

// TestCheck checks that bad problems are refused with an error naming what is wrong.
func TestCheck(t *testing.T) {
	ok := Problem{B: 2, H: 4, Hkv: 2, Nq: 3, Nk: 5, D: 8, Scale: 0.5}
	for _, c := range []struct {
		name string
		edit func(p *Problem)
		want string
	}{
		{"valid", func(p *Problem) {}, ""},
		{"valid key lengths", func(p *Problem) { p.KeyLengths = []int{0, 5} }, ""},
		{"zero Nq", func(p *Problem) { p.Nq = 0 }, "every size must be at least 1 (B=2 H=4 Hkv=2 Nq=0 Nk=5 D=8)"},
		{"negative Nk", func(p *Problem) { p.Nk = -3 }, "Nk=-3"},
		{"heads", func(p *Problem) { p.Hkv = 3 }, "H=4 is not a multiple of Hkv=3"},
		{"zero scale", func(p *Problem) { p.Scale = 0 }, "Scale=0"},
		{"bf16", func(p *Problem) { p.Precision = PrecisionBF16 }, ""},
		{"unknown precision", func(p *Problem) { p.Precision = PrecisionBF16 + 1 }, "unknown Precision(5)"},
		{"key lengths count", func(p *Problem) { p.KeyLengths = []int{1} }, "1 entries [1], want one per batch element (B=2)"},
		{"key length range", func(p *Problem) { p.KeyLengths = []int{1, 6} }, "KeyLengths[1] = 6 is outside [0, Nk=5]"},
		{"too large", func(p *Problem) { p.B, p.Nq = 1<<26, 1<<26 }, "more than 2^53 elements"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := ok
			c.edit(&p)
			err := p.Check()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
