package vec

import "math"

// The Go kernels: the float64 path on every machine, and the float32 path
// where no assembly runs (purego builds, other architectures, CPUs without
// AVX2+FMA, FLASHGORGON_SIMD=generic).

// generic32 is the float32 kernel set in Go.
var generic32 = kernels32{
	max: maxGo[float32],
	expSum: func(dst, x, _ []float32, scale, shift float32, b base) float64 {
		return expShiftSumGo(dst, x, float64(scale), float64(shift), b == base2)
	},
	expSumStream: func(_, _, _ []float32, _ float32, _, _ []float32, _ float32) (float64, bool) {
		return 0, false // no fused loop: ExpShiftSumStream runs the two parts
	},
	expShifts:    expShiftsGo[float32],
	sum:          sumGo[float32],
	dot:          dotGo[float32],
	scale:        scaleGo[float32],
	streamScaled: scaleToGo[float32],
	mulDiff:      mulDiffGo[float32],
	mulDiffs:     mulDiffsGo[float32],
	subScaled:    subScaledGo[float32],
	subShift:     subShiftGo[float32],
}

func maxGo[T Float](x []T) T {
	m := T(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		} else if v != v {
			return v
		}
	}
	return m
}

// expShiftsGo computes in float64: (x − hi) − lo there is exact to far
// below float32's precision, and within an ulp for float64.
func expShiftsGo[T Float](dst, x, hi, lo []T, b base) {
	dst, hi, lo = dst[:len(x)], hi[:len(x)], lo[:len(x)]
	for i, v := range x {
		a := (float64(v) - float64(hi[i])) - float64(lo[i])
		if b == base2 {
			dst[i] = T(scalarExp2(a))
		} else {
			dst[i] = T(ScalarExp(a))
		}
	}
}

func sumGo[T Float](x []T) float64 {
	s := 0.0
	for _, v := range x {
		s += float64(v)
	}
	return s
}

func dotGo[T Float](x, y []T) float64 {
	y = y[:len(x)]
	s := 0.0
	for i, v := range x {
		s += float64(v) * float64(y[i])
	}
	return s
}

func scaleGo[T Float](x []T, c T) {
	for i := range x {
		x[i] *= c
	}
}

func scaleToGo[T Float](dst, x []T, c T) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = c * x[i]
	}
}

func mulDiffGo[T Float](dst, p, q []T, c T) {
	p, q = p[:len(dst)], q[:len(dst)]
	for i := range dst {
		dst[i] = p[i] * (q[i] - c)
	}
}

func mulDiffsGo[T Float](dst, p, q, c []T) {
	p, q, c = p[:len(dst)], q[:len(dst)], c[:len(dst)]
	for i := range dst {
		dst[i] = p[i] * (q[i] - c[i])
	}
}

func subScaledGo[T Float](dst, y, x []T, c T) {
	y, x = y[:len(dst)], x[:len(dst)]
	for i := range dst {
		dst[i] = y[i] - c*x[i]
	}
}

func subShiftGo[T Float](dst, x []T, a, b float64) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = T((float64(v) - a) - b)
	}
}
