package vec

// Elementwise kernels on whole arrays (the residual adds of a transformer and
// the sums of gradients that gorgonia.Grad builds), on the affine rows' SIMD
// code with one row of the array's length: x [n], y [n] →
//
//	Add(dst, x, y)   dst[i] = x[i] + y[i]
//	Mul(dst, x, y)   dst[i] = x[i]·y[i]
//
// Each entry is rounded once (float32: the float32 sum or product), so the
// result does not depend on how a caller splits the arrays. dst may be x or y.

// elemBody is the multiple of the vector widths that the SIMD code takes;
// the rest of an array runs in Go.
const elemBody = 16

// Add sets dst[i] = x[i] + y[i] for i < len(x) (y and dst at least as long).
func Add[T Float](dst, x, y []T) {
	n := len(x)
	dst, y = dst[:n], y[:n]
	b := n &^ (elemBody - 1)
	if b > 0 {
		AffineRows(dst[:b], x[:b], nil, y[:b])
	}
	for i := b; i < n; i++ {
		dst[i] = x[i] + y[i]
	}
}

// Mul sets dst[i] = x[i]·y[i] for i < len(x) (y and dst at least as long).
func Mul[T Float](dst, x, y []T) {
	n := len(x)
	dst, y = dst[:n], y[:n]
	b := n &^ (elemBody - 1)
	if b > 0 {
		AffineRows(dst[:b], x[:b], y[:b], nil)
	}
	for i := b; i < n; i++ {
		dst[i] = x[i] * y[i]
	}
}
