package attention

import "math"

// exp2f32 returns 2^x in float32 for x < 128, with a relative error below
// 3e-7 (about 2 ulp) down to x = −126, 0 below −127 (and for −Inf), and NaN
// for NaN. The kernels call it with x ≤ 0 (a score minus the running
// maximum, or minus L) and, rarely, a rounding above 0.
//
// It follows Cephes' exp2f: x = n + r with n the nearest integer and
// r ∈ [−½, ½]; 2^r comes from a degree-6 polynomial and 2^n is put straight
// into the exponent bits (n = −127 gives the bits of 0). The exp steps over
// whole rows run on internal/kernels/vec; this scalar version serves the
// rescale factor 2^(m_old − m_new), once per row and tile, where a call to
// math.Exp2 (float64, several times slower) would show next to the rows.
func exp2f32(x float32) float32 {
	if x < -127 {
		x = -127
	}
	// Round to nearest by adding 1.5·2²³: the integer lands in the low
	// mantissa bits of t.
	const magic = 12582912 // 1.5·2^23
	t := x + magic
	n := int32(math.Float32bits(t)) - 0x4b400000
	r := x - (t - magic)
	p := ((((((1.535336188319500e-4*r+1.339887440266574e-3)*r+9.618437357674640e-3)*r+
		5.550332471162809e-2)*r+2.402264791363012e-1)*r+6.931472028550421e-1)*r + 1)
	return p * math.Float32frombits(uint32(n+127)<<23)
}

// exp2 returns 2^x for one value of either element type: the rescale factor
// 2^(m_old − m_new) of the online softmax, once per row and tile. It is 0
// for x = −Inf (a row's first visible block).
func exp2[T Float](x T) T {
	switch x := any(x).(type) {
	case float32:
		return T(exp2f32(x))
	case float64:
		return T(math.Exp2(x))
	}
	return 0
}
