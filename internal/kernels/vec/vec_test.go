package vec

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// testLengths are the row lengths every kernel is run on: all up to 70
// (every tail of both vector widths, one to four vectors) and 1025.
func testLengths() []int {
	ls := []int{1025}
	for n := range 71 {
		ls = append(ls, n)
	}
	return ls
}

func randRow(rng *rand.Rand, n int, sd float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * sd)
	}
	return x
}

// within checks got against the exact want within k float32 roundings
// of size, the magnitude the rounding errors scale with.
func within(got float32, want, size float64, k float64) bool {
	if math.IsNaN(want) {
		return got != got
	}
	return math.Abs(float64(got)-want) <= k*0x1p-24*size+1e-45
}

func TestMax(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	naive := func(x []float32) float32 {
		m := float32(math.Inf(-1))
		for _, v := range x {
			if math.IsNaN(float64(v)) {
				return v
			}
			if v > m {
				m = v
			}
		}
		return m
	}
	forEachLevel(t, func(t *testing.T) {
		for _, n := range testLengths() {
			for _, off := range []int{0, 1, 5} {
				buf := randRow(rng, n+off, 100)
				x := buf[off:]
				if got, want := Max(x), naive(x); got != want {
					t.Fatalf("n=%d off=%d: Max = %v, want %v", n, off, got, want)
				}
				if n == 0 {
					continue
				}
				// The maximum in every position, NaN in every position.
				for _, i := range []int{0, n / 2, n - 1} {
					y := append([]float32(nil), x...)
					y[i] = 1e6
					if got := Max(y); got != 1e6 {
						t.Fatalf("n=%d: Max with 1e6 at %d = %v", n, i, got)
					}
					y[i] = float32(math.NaN())
					if got := Max(y); got == got {
						t.Fatalf("n=%d: Max with NaN at %d = %v, want NaN", n, i, got)
					}
				}
				ninf := make([]float32, n)
				for i := range ninf {
					ninf[i] = float32(math.Inf(-1))
				}
				if got := Max(ninf); !math.IsInf(float64(got), -1) {
					t.Fatalf("n=%d: Max of −Inf = %v", n, got)
				}
			}
		}
	})
	if got := Max([]float64{1, math.NaN(), 3}); got == got {
		t.Errorf("Max float64 with NaN = %v", got)
	}
	if got := Max([]float64{-1, 4, 3}); got != 4 {
		t.Errorf("Max float64 = %v, want 4", got)
	}
}

// TestRowKernels runs the elementwise kernels and the reductions on every
// length and offset against float64 loops.
func TestRowKernels(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	forEachLevel(t, func(t *testing.T) {
		for _, n := range testLengths() {
			for _, off := range []int{0, 3} {
				name := fmt.Sprintf("n=%d off=%d", n, off)
				p, q, c := randRow(rng, n, 1), randRow(rng, n, 2), randRow(rng, n, 1)
				cs := float32(rng.NormFloat64())

				if got, err := Sum(q), checkSum(Sum(q), q); err != nil {
					t.Fatalf("%s: Sum = %v: %v", name, got, err)
				}
				prod := make([]float64, n)
				for i := range prod {
					prod[i] = float64(p[i]) * float64(q[i])
				}
				if err := checkSum(Dot(p, q), prod); err != nil {
					t.Fatalf("%s: Dot: %v", name, err)
				}

				dst, check := guarded(n, off)
				MulDiff(dst, p, q, cs)
				check(t, "MulDiff")
				for i := range dst {
					d := float64(q[i]) - float64(cs)
					if !within(dst[i], float64(p[i])*d, math.Abs(float64(p[i])*d), 2.01) {
						t.Fatalf("%s: MulDiff[%d] = %v, want %v", name, i, dst[i], float64(p[i])*d)
					}
				}
				dst, check = guarded(n, off)
				MulDiffs(dst, p, q, c)
				check(t, "MulDiffs")
				for i := range dst {
					want := float64(p[i]) * (float64(q[i]) - float64(c[i]))
					if !within(dst[i], want, math.Abs(want), 2.01) {
						t.Fatalf("%s: MulDiffs[%d] = %v, want %v", name, i, dst[i], want)
					}
				}
				dst, check = guarded(n, off)
				SubScaled(dst, q, p, cs)
				check(t, "SubScaled")
				for i := range dst {
					cx := float64(cs) * float64(p[i])
					want := float64(q[i]) - cx
					if !within(dst[i], want, math.Abs(want)+math.Abs(cx), 1.01) {
						t.Fatalf("%s: SubScaled[%d] = %v, want %v", name, i, dst[i], want)
					}
				}
				dst, check = guarded(n, off)
				copy(dst, q)
				Scale(dst, cs)
				check(t, "Scale")
				for i := range dst {
					want := float64(q[i]) * float64(cs)
					if !within(dst[i], want, math.Abs(want), 1) {
						t.Fatalf("%s: Scale[%d] = %v, want %v", name, i, dst[i], want)
					}
				}
				for _, o := range []int{off, off + 5, off + 13} { // every alignment of the stream's head
					dst, check = guarded(n, o)
					StreamScaled(dst, q, cs)
					check(t, "StreamScaled")
					for i := range dst {
						want := float64(q[i]) * float64(cs)
						if !within(dst[i], want, math.Abs(want), 1) {
							t.Fatalf("%s: StreamScaled[%d] at offset %d = %v, want %v", name, i, o, dst[i], want)
						}
					}
				}
				// SubShift rounds once: (x − a) − b with a large a.
				a, b := 1e4+rng.Float64(), rng.Float64()*3
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(1e4 + rng.NormFloat64())
				}
				dst, check = guarded(n, off)
				SubShift(dst, x, a, b)
				check(t, "SubShift")
				for i := range dst {
					want := (float64(x[i]) - a) - b
					if !within(dst[i], want, math.Abs(want), 1) {
						t.Fatalf("%s: SubShift[%d] = %v, want %v", name, i, dst[i], want)
					}
				}
			}
		}
	})
}

// TestGradRows checks the backward row operations against the float64
// formulas, within the bound of the ops' float32 test: 1e-6·(|dx_i| + Σ|dy|).
func TestGradRows(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	forEachLevel(t, func(t *testing.T) {
		for _, n := range testLengths() {
			if n == 0 {
				continue
			}
			logits := randRow(rng, n, 3)
			y := make([]float32, n)
			s := ExpShiftSum(y, logits, 1, Max(logits))
			Scale(y, float32(1/s)) // y = softmax(logits)
			ly := make([]float32, n)
			m := float64(Max(logits))
			SubShift(ly, logits, m, math.Log(s)) // log-softmax
			dy := randRow(rng, n, 1)
			abs := 0.0
			for _, v := range dy {
				abs += math.Abs(float64(v))
			}

			dx := make([]float32, n)
			SoftmaxGrad(dx, y, dy)
			var sdot, sdy float64
			for i := range y {
				sdot += float64(y[i]) * float64(dy[i])
				sdy += float64(dy[i])
			}
			for i := range dx {
				want := float64(y[i]) * (float64(dy[i]) - sdot)
				if math.Abs(float64(dx[i])-want) > 1e-6*(math.Abs(want)+abs) {
					t.Fatalf("n=%d: SoftmaxGrad[%d] = %v, want %v", n, i, dx[i], want)
				}
			}
			LogSoftmaxGrad(dx, ly, dy)
			for i := range dx {
				want := float64(dy[i]) - math.Exp(float64(ly[i]))*sdy
				if math.Abs(float64(dx[i])-want) > 1e-6*(math.Abs(want)+abs) {
					t.Fatalf("n=%d: LogSoftmaxGrad[%d] = %v, want %v", n, i, dx[i], want)
				}
			}
			// In place over y.
			lyc := append([]float32(nil), ly...)
			LogSoftmaxGrad(lyc, lyc, dy)
			for i := range dx {
				if lyc[i] != dx[i] {
					t.Fatalf("n=%d: LogSoftmaxGrad in place differs at %d: %v, %v", n, i, lyc[i], dx[i])
				}
			}
			// A fully masked row gets zeros.
			for i := range ly {
				ly[i] = float32(math.Inf(-1))
			}
			LogSoftmaxGrad(dx, ly, dy)
			for i, v := range dx {
				if v != 0 {
					t.Fatalf("n=%d: LogSoftmaxGrad of a masked row [%d] = %v, want 0", n, i, v)
				}
			}
		}
	})
}

// TestFloat64Kernels runs every kernel in float64 against float64 loops
// written here.
func TestFloat64Kernels(t *testing.T) {
	rng := rand.New(rand.NewSource(10))
	for _, n := range []int{0, 1, 17, 1025} {
		p, q, c := make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range p {
			p[i], q[i], c[i] = rng.NormFloat64(), rng.NormFloat64()*2, rng.NormFloat64()
		}
		cs := rng.NormFloat64()
		eq := func(what string, got []float64, want func(i int) float64) {
			t.Helper()
			for i, v := range got {
				if w := want(i); math.Abs(v-w) > 1e-15*math.Abs(w) {
					t.Fatalf("n=%d %s[%d] = %v, want %v", n, what, i, v, w)
				}
			}
		}
		dst := make([]float64, n)
		MulDiff(dst, p, q, cs)
		eq("MulDiff", dst, func(i int) float64 { return p[i] * (q[i] - cs) })
		MulDiffs(dst, p, q, c)
		eq("MulDiffs", dst, func(i int) float64 { return p[i] * (q[i] - c[i]) })
		SubScaled(dst, q, p, cs)
		eq("SubScaled", dst, func(i int) float64 { return q[i] - cs*p[i] })
		SubShift(dst, q, 1e4, 0.25)
		eq("SubShift", dst, func(i int) float64 { return (q[i] - 1e4) - 0.25 })
		copy(dst, q)
		Scale(dst, cs)
		eq("Scale", dst, func(i int) float64 { return q[i] * cs })
		StreamScaled(dst, p, cs)
		eq("StreamScaled", dst, func(i int) float64 { return p[i] * cs })
		if err := checkSum(Sum(q), q); err != nil {
			t.Fatalf("n=%d Sum: %v", n, err)
		}
		pq := make([]float64, n)
		for i := range pq {
			pq[i] = p[i] * q[i]
		}
		if err := checkSum(Dot(p, q), pq); err != nil {
			t.Fatalf("n=%d Dot: %v", n, err)
		}
		if n > 0 {
			m := math.Inf(-1)
			for _, v := range q {
				m = math.Max(m, v)
			}
			if got := Max(q); got != m {
				t.Fatalf("n=%d Max = %v, want %v", n, got, m)
			}
		}
	}
}

// TestNoAllocs checks that the kernels allocate nothing, tails included.
func TestNoAllocs(t *testing.T) {
	x, y, z := make([]float32, 37), make([]float32, 37), make([]float32, 37)
	d := make([]float64, 37)
	forEachLevel(t, func(t *testing.T) {
		allocs := testing.AllocsPerRun(10, func() {
			Max(x)
			ExpShiftSum(y, x, 1, 0)
			ExpShiftSum(nil, x, 1, 0)
			Exp2Shifts(y, x, z, z)
			Sum(x)
			Dot(x, y)
			Scale(y, 2)
			StreamScaled(y, z, 2)
			MulDiff(y, x, z, 1)
			MulDiffs(y, x, z, x)
			SubScaled(y, x, z, 1)
			SubShift(y, x, 1, 2)
			SoftmaxGrad(y, x, z)
			LogSoftmaxGrad(y, x, z)
			ExpShiftSum(d, d, 1, 0)
		})
		if allocs != 0 {
			t.Errorf("%v allocations per run, want 0", allocs)
		}
	})
}

// TestNamedTypes runs the kernels on types defined on float32 and float64,
// which graph.Float admits.
func TestNamedTypes(t *testing.T) {
	type f32 float32
	type f64 float64
	x := []f32{1, -2, 3, 0.5, 7, -1, 2, 2, 9, 1, 0, 0, 0, 0, 0, 0, 4}
	y := make([]f32, len(x))
	if got := Max(x); got != 9 {
		t.Errorf("Max named float32 = %v, want 9", got)
	}
	ExpShiftSum(y, x, 1, 9)
	if y[8] != 1 || math.Abs(float64(y[0])-math.Exp(-8)) > 1e-7*math.Exp(-8) {
		t.Errorf("ExpShiftSum named float32: %v", y)
	}
	if got := Sum([]f64{1, 2, 3.5}); got != 6.5 {
		t.Errorf("Sum named float64 = %v, want 6.5", got)
	}
}
