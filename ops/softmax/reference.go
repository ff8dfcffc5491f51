package softmax

import (
	"math"

	"github.com/flashgorgon/flashgorgon/graph"
)

// The three softmax algorithms of the seed documents (001, 003, 004), kept
// as documented reference implementations on a single row. All three
// compute in float64 whatever T is, with the package's exponential, and
// share the ops' edge semantics: −Inf
// entries get 0, a row of only −Inf gives zeros, a NaN or +Inf makes the row
// NaN. Each writes softmax(x) into dst and returns it; dst is reused when
// its capacity holds len(x) elements (it may be x itself) and allocated
// otherwise.

// SoftmaxThreePass computes y = softmax(x) by the naive algorithm, three
// passes over the row:
//
//	m   = max_i x_i
//	d   = Σ_i e^{x_i−m}          (the numerators e^{x_i−m} are kept in dst)
//	y_i = e^{x_i−m} / d
//
// Subtracting the row's own maximum keeps every exponent ≤ 0, so nothing
// overflows.
func SoftmaxThreePass[T graph.Float](dst, x []T) []T {
	dst = resize(dst, len(x))
	m := -math.MaxFloat64 // not −Inf: an entry of −Inf must give e^{−Inf} = 0
	for _, v := range x {
		if float64(v) > m {
			m = float64(v)
		}
	}
	d := expShiftSum(dst, x, m) // NaN if the row holds NaN or +Inf
	if d == 0 {                 // only −Inf (or nothing): the numerators are 0
		return dst
	}
	inv := 1 / d
	for i, v := range dst {
		dst[i] = T(float64(v) * inv)
	}
	return dst
}

// SoftmaxOnline computes y = softmax(x) by the online algorithm, two passes
// over the row. The first runs the recurrence
//
//	m_i = max(m_{i−1}, x_i),   d_i = d_{i−1}·e^{m_{i−1}−m_i} + e^{x_i−m_i}
//
// (m_0 = −Inf, d_0 = 0), which keeps d_i = Σ_{k≤i} e^{x_k−m_i}: the sum is
// rescaled whenever the maximum grows, so max and sum take one pass. The
// second writes y_i = e^{x_i−m_N} / d_N. This is the recurrence the ops run.
func SoftmaxOnline[T graph.Float](dst, x []T) []T {
	dst = resize(dst, len(x))
	s := newStat()
	for _, v := range x {
		s.add(float64(v))
	}
	inv, _, _ := s.finish()
	for i, v := range x {
		dst[i] = T(exp(float64(v)-s.m) * inv)
	}
	return dst
}

// SoftmaxTiled computes y = softmax(x) by split-and-merge (tiling): the row
// is cut into blocks of blockSize entries (values below 1 count as 1). Each
// block b on its own — this is the part that blocks can do in parallel —
// finds
//
//	m_b = max_{i∈b} x_i,   ℓ_b = Σ_{i∈b} e^{x_i−m_b}
//
// keeping the numerators e^{x_i−m_b} in dst. The block statistics are merged
// left to right by
//
//	m = max(m1, m2),   ℓ = e^{m1−m}·ℓ1 + e^{m2−m}·ℓ2
//
// and a last pass rescales y_i = e^{x_i−m_b} · e^{m_b−m} / ℓ.
func SoftmaxTiled[T graph.Float](dst, x []T, blockSize int) []T {
	dst = resize(dst, len(x))
	blockSize = max(blockSize, 1)
	nb := (len(x) + blockSize - 1) / blockSize
	mb := make([]float64, nb)
	// As in SoftmaxThreePass, maxima start at −MaxFloat64 so that −Inf
	// entries give 0; a block of only −Inf has ℓ_b = 0 and merges as nothing.
	m, l := -math.MaxFloat64, 0.0
	for b := range nb {
		lo, hi := b*blockSize, min((b+1)*blockSize, len(x))
		bm := -math.MaxFloat64
		for _, v := range x[lo:hi] {
			if float64(v) > bm {
				bm = float64(v)
			}
		}
		mb[b] = bm
		bl := expShiftSum(dst[lo:hi], x[lo:hi], bm)
		nm := m
		if bm > m {
			nm = bm
		}
		l = exp(m-nm)*l + exp(bm-nm)*bl
		m = nm
	}
	if l == 0 {
		return dst // only −Inf: the numerators are 0
	}
	for b := range nb {
		lo, hi := b*blockSize, min((b+1)*blockSize, len(x))
		f := exp(mb[b]-m) / l
		for i, v := range dst[lo:hi] {
			dst[lo+i] = T(float64(v) * f)
		}
	}
	return dst
}

// resize returns dst[:n] when dst can hold n elements, a new slice otherwise.
func resize[T any](dst []T, n int) []T {
	if cap(dst) >= n {
		return dst[:n]
	}
	return make([]T, n)
}
