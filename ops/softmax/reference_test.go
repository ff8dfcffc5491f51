package softmax

import (
	"math"
	"math/rand"
	"strconv"
	"testing"
)

// rowCases are single rows with their names: random rows of several lengths
// (one of them not a multiple of any block size tried), huge and tiny
// logits, and the edge cases.
func rowCases() []struct {
	name string
	x    []float64
} {
	rng := rand.New(rand.NewSource(7))
	randRow := func(n int, scale float64) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64() * scale
		}
		return x
	}
	inf, nan := math.Inf(1), math.NaN()
	return []struct {
		name string
		x    []float64
	}{
		{"len1", []float64{3.5}},
		{"len2", []float64{-1, 2}},
		{"len7", randRow(7, 1)},
		{"len100", randRow(100, 3)},
		{"len4097", randRow(4097, 2)},
		{"increasing", []float64{-3, -2, -1, 0, 1, 2, 3, 4, 5}}, // new max at every step
		{"gorgonia-row", []float64{1000, 0, 1}},
		{"1e4", []float64{1e4, -1e4, 0, 1e4 - 1}},
		{"1e30", []float64{1e30, -1e30, 1e30, 0}},
		{"neg-inf-entry", []float64{-inf, 0, 1, -inf}},
		{"all-neg-inf", []float64{-inf, -inf, -inf}},
		{"nan", []float64{0, nan, 1}},
		{"pos-inf", []float64{0, inf, 1}},
		{"nan-after-neg-inf", []float64{-inf, nan}},
		{"empty", []float64{}},
	}
}

func TestReferenceAlgorithms(t *testing.T) {
	algos := []struct {
		name string
		f64  func(dst, x []float64) []float64
		f32  func(dst, x []float32) []float32
	}{
		{"ThreePass", SoftmaxThreePass[float64], SoftmaxThreePass[float32]},
		{"Online", SoftmaxOnline[float64], SoftmaxOnline[float32]},
	}
	for _, bs := range []int{-1, 1, 3, 64, 1000, 5000} {
		algos = append(algos, struct {
			name string
			f64  func(dst, x []float64) []float64
			f32  func(dst, x []float32) []float32
		}{
			"Tiled" + strconv.Itoa(bs),
			func(dst, x []float64) []float64 { return SoftmaxTiled(dst, x, bs) },
			func(dst, x []float32) []float32 { return SoftmaxTiled(dst, x, bs) },
		})
	}
	for _, c := range rowCases() {
		want, _, _ := refRow(c.x)
		x32 := make([]float32, len(c.x))
		for i, v := range c.x {
			x32[i] = float32(v)
		}
		want32, _, _ := refRow(widen(x32)) // the float32 input, exactly
		for _, a := range algos {
			if err := compare(a.f64(nil, c.x), want, 1e-13, 0); err != nil {
				t.Errorf("%s float64 %s: %v", a.name, c.name, err)
			}
			if err := compare(a.f32(nil, x32), want32, 1e-6, 0); err != nil {
				t.Errorf("%s float32 %s: %v", a.name, c.name, err)
			}
			// In place, into x's own storage.
			in := append([]float64(nil), c.x...)
			if err := compare(a.f64(in, in), want, 1e-13, 0); err != nil {
				t.Errorf("%s float64 %s in place: %v", a.name, c.name, err)
			}
		}
	}
}

func widen(x []float32) []float64 {
	r := make([]float64, len(x))
	for i, v := range x {
		r[i] = float64(v)
	}
	return r
}
