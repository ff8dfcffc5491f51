package vec

import (
	"fmt"
	"math"
	"testing"

	"github.com/flashgorgon/flashgorgon/internal/isa"
)

// forEachLevel runs f once per instruction set this build can run here
// (isa.Supported), with the float32 kernels switched to that set.
func forEachLevel(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	for _, l := range isa.Supported() {
		t.Run(l.String(), func(t *testing.T) {
			defer useLevel(l)()
			f(t)
		})
	}
}

// useLevel switches the float32 kernels to level l and returns the function
// that switches them back. Tests only; not safe while kernels run.
func useLevel(l isa.Level) (restore func()) {
	oldLevel, old := level, k32
	level, k32 = l, kernelsFor(l)
	return func() { level, k32 = oldLevel, old }
}

// ulps32 returns how many float32 ulps of want separate got from want (a
// float64 close to the exact value). The ulp of want is the float32
// spacing at |want|, 2⁻¹⁴⁹ in the subnormal range; +Inf counts as 2¹²⁸,
// the value after MaxFloat32 on the float32 ladder, and so does any want
// beyond it, so that an overflow near the boundary is measured like any
// other rounding. A NaN on either
// side gives 0 when both are NaN and +Inf otherwise.
func ulps32(got float32, want float64) float64 {
	g := float64(got)
	switch {
	case math.IsNaN(g) || math.IsNaN(want):
		if math.IsNaN(g) && math.IsNaN(want) {
			return 0
		}
		return math.Inf(1)
	case math.IsInf(g, 0) && math.IsInf(want, 0) && (g > 0) == (want > 0):
		return 0
	}
	if math.IsInf(g, 0) {
		g = math.Copysign(0x1p128, g)
	}
	if math.Abs(want) > 0x1p128 { // rounds to ±Inf in float32
		want = math.Copysign(0x1p128, want)
	}
	return math.Abs(g-want) / ulp32(want)
}

func ulp32(v float64) float64 {
	v = math.Abs(v)
	if v < 0x1p-126 {
		return 0x1p-149
	}
	_, e := math.Frexp(v) // v = f·2^e, f ∈ [½, 1)
	return math.Ldexp(1, e-24)
}

// ulps64 is ulps32 for float64 results (spacing 2⁻¹⁰⁷⁴ below 2⁻¹⁰²²).
func ulps64(got, want float64) float64 {
	switch {
	case math.IsNaN(got) || math.IsNaN(want):
		if math.IsNaN(got) && math.IsNaN(want) {
			return 0
		}
		return math.Inf(1)
	case got == want:
		return 0
	case math.IsInf(got, 0) || math.IsInf(want, 0):
		return math.Inf(1)
	}
	a := math.Abs(want)
	u := 0x1p-1074
	if a >= 0x1p-1022 {
		_, e := math.Frexp(a)
		u = math.Ldexp(1, e-53)
	}
	return math.Abs(got-want) / u
}

// specials32 are the inputs every float32 kernel is tried on.
var specials32 = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1, 0.5, -0.5,
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
	math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
	1e-30, -1e-30, 1e30, -1e30, 1e4, -1e4,
	88.72283, 88.72284, 88.7, 89, -87.33654, -87.34, -103.27893, -103.9, -103.97, -103.98, -104, -105,
	127.99999, 128, 128.5, -126, -149, -149.5, -150, -151,
}

// guarded returns a slice of n float32s at offset off of a buffer whose
// other entries hold a guard value, and a check that they still do.
func guarded(n, off int) ([]float32, func(t *testing.T, what string)) {
	return guardedAt(make([]float32, off+n+17), off, n)
}

// guardedAt is guarded on a given buffer.
func guardedAt(buf []float32, off, n int) ([]float32, func(t *testing.T, what string)) {
	const guard = -12345.5
	for i := range buf {
		buf[i] = guard
	}
	s := buf[off : off+n : off+n]
	return s, func(t *testing.T, what string) {
		t.Helper()
		for i, v := range buf {
			if (i < off || i >= off+n) && v != guard {
				t.Fatalf("%s (n=%d, offset %d): wrote %v outside the slice at buffer index %d", what, n, off, v, i)
			}
		}
	}
}

// exactSum returns Σ x_i and Σ |x_i| by Neumaier's compensated summation,
// accurate to about an ulp whatever the order.
func exactSum[T Float](x []T) (sum, abs float64) {
	var c float64
	for _, v := range x {
		f := float64(v)
		t := sum + f
		if math.Abs(sum) >= math.Abs(f) {
			c += (sum - t) + f
		} else {
			c += (f - t) + sum
		}
		sum = t
		abs += math.Abs(f)
	}
	if math.IsInf(sum, 0) {
		return sum, abs // c is NaN then
	}
	return sum + c, abs
}

// checkSum holds got, a float64 sum of the values of x in some order, to the
// error bound of float64 summation, len(x)·2⁻⁵³·Σ|x_i|.
func checkSum[T Float](got float64, x []T) error {
	return checkSumTol(got, x, 0)
}

// checkExpSum is checkSum for the sums of the exponentials, which the
// assembly adds in float32 partials of 4 terms before float64: 3·2⁻²⁴·Σ|x_i|
// more.
func checkExpSum[T Float](got float64, x []T) error {
	return checkSumTol(got, x, 3*0x1p-24)
}

func checkSumTol[T Float](got float64, x []T, rel float64) error {
	want, abs := exactSum(x)
	if math.IsNaN(want) && math.IsNaN(got) || got == want {
		return nil
	}
	if bound := (rel + float64(len(x)+1)*0x1p-53) * abs; !(math.Abs(got-want) <= bound) {
		return fmt.Errorf("sum %v, want %v (error %.3g, bound %.3g)", got, want, math.Abs(got-want), bound)
	}
	return nil
}
