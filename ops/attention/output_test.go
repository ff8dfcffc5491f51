package attention

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestForwardIgnoresOutput checks that the forward never reads o: it is not
// cleared first (each row's first key block overwrites its row, the rows
// that see no key are cleared at the end), so o, lse and lres must come out
// bit for bit the same from an output buffer of NaNs as from one of zeros.
// The cases include rows that see no key (causal with Nq > Nk, a batch of
// key length 0) and causal diagonals split into sub-tiles.
func TestForwardIgnoresOutput(t *testing.T) {
	cases := []params{
		{B: 1, H: 2, Hkv: 1, Nq: 300, Nk: 300, D: 64, Causal: true},
		{B: 1, H: 2, Hkv: 2, Nq: 200, Nk: 70, D: 32, Causal: true},
		{B: 2, H: 2, Hkv: 2, Nq: 150, Nk: 260, D: 16, KeyLengths: []int{0, 190}},
		{B: 1, H: 1, Hkv: 1, Nq: 130, Nk: 130, D: 128},
	}
	for _, p := range cases {
		p.Scale = 1 / math.Sqrt(float64(p.D))
		t.Run(fmt.Sprintf("%+v", p), func(t *testing.T) {
			testForwardIgnoresOutput[float32](t, p)
			testForwardIgnoresOutput[float64](t, p)
		})
	}
}

func testForwardIgnoresOutput[T Float](t *testing.T, p params) {
	rng := rand.New(rand.NewSource(3))
	nq, nk, nl := p.B*p.H*p.Nq*p.D, p.B*p.Hkv*p.Nk*p.D, p.B*p.H*p.Nq
	q, k, v := convert[T](randn(rng, nq)), convert[T](randn(rng, nk)), convert[T](randn(rng, nk))
	run := func(fill T) (o, lse, lres []T) {
		o, lse, lres = make([]T, nq), make([]T, nl), make([]T, nl)
		for i := range o {
			o[i] = fill
		}
		flashForward(&p, q, k, v, o, lse, lres)
		return o, lse, lres
	}
	o0, l0, r0 := run(0)
	o1, l1, r1 := run(T(math.NaN()))
	for name, pair := range map[string][2][]T{"o": {o0, o1}, "lse": {l0, l1}, "lres": {r0, r1}} {
		for i := range pair[0] {
			if math.Float64bits(float64(pair[0][i])) != math.Float64bits(float64(pair[1][i])) {
				t.Fatalf("%T %s[%d]: %v from a zeroed output, %v from one of NaNs", pair[0][0], name, i, pair[0][i], pair[1][i])
			}
		}
	}
}
