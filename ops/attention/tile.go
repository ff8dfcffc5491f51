package attention

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// This file holds the leaf kernels of the fused attention: the tile matrix
// products and the exp / rescale steps. The algorithm (kernel.go) only calls
// these functions, each on one tile or one row, so that SIMD kernels can
// replace them without touching the loop structure. Each leaf switches on the
// element type once per call (per tile or per row, never per element) and
// runs a type-specific loop.
//
// The tile products go through gonum's BLAS (blas32 / blas64), whose inner
// loops are SSE assembly; on the development machine they measured about
// twice as fast as register-blocked plain Go loops on 64×64×64 tiles
// (float32: 10–15 GFLOP/s against 4–7 GFLOP/s per core).

// gemmNT computes c = alpha·a·bᵀ + beta·c with a m×k (row stride lda),
// b n×k (row stride ldb) and c m×n (row stride ldc):
//
//	c[i*ldc+j] = alpha·Σ_l a[i*lda+l]·b[j*ldb+l] + beta·c[i*ldc+j]
//
// Every tile product of the kernels has this form (the B operands that
// need it are stored in transposed blocks): gonum's A·Bᵀ kernel runs one
// SSE dot product per entry and measured 12–18 GFLOP/s per core on 64×64×64
// float32 tiles, its A·B and Aᵀ·B kernels (axpy based) 9–11.
func gemmNT[T Float](m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	gemm(blas.NoTrans, blas.Trans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// gemm dispatches one tile product to gonum's Sgemm or Dgemm.
func gemm[T Float](tA, tB blas.Transpose, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	switch a := any(a).(type) {
	case []float32:
		blas32.Implementation().Sgemm(tA, tB, m, n, k, float32(alpha), a, lda,
			any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
	case []float64:
		blas64.Implementation().Dgemm(tA, tB, m, n, k, float64(alpha), a, lda,
			any(b).([]float64), ldb, float64(beta), any(c).([]float64), ldc)
	}
}

// rowMax returns max_j x[j]; x must not be empty.
func rowMax[T Float](x []T) T {
	m := x[0]
	for _, v := range x[1:] {
		if v > m {
			m = v
		}
	}
	return m
}

// expRow replaces each x[j] by 2^(x[j] − shift) and returns Σ_j of the new
// values. It is the exp step of the online softmax, with shift the running
// maximum m; the scores arrive already multiplied by scale·log₂e, so
// 2^(s − m) = exp(scale·q·k − m·ln 2). The sum is accumulated in float64:
// in float32 it made the fused forward's float32 error up to 1.46× the
// decomposed path's over the test grid, in float64 1.08×, at no measurable
// cost.
func expRow[T Float](x []T, shift T) float64 {
	switch x := any(x).(type) {
	case []float32:
		return expRow32(x, float32(shift))
	case []float64:
		return expRow64(x, float64(shift))
	}
	return 0
}

func expRow32(x []float32, shift float32) float64 {
	var s float64
	for j, v := range x {
		e := exp2f32(v - shift)
		x[j] = e
		s += float64(e)
	}
	return s
}

func expRow64(x []float64, shift float64) float64 {
	var s float64
	for j, v := range x {
		e := math.Exp2(v - shift)
		x[j] = e
		s += e
	}
	return s
}

// expRowShifts is the backward's exp step on a transposed tile row (one
// key, many queries, each with its own L·log₂e = hi[j] + lo[j]):
//
//	x[j] = 2^((x[j] − hi[j]) − lo[j])
//
// L·log₂e comes as the float64 value split into T parts, so that the
// float32 probabilities are as accurate as the forward's: a float32 L·log₂e
// alone (up to ~15 in magnitude) would carry an error of several ulp of 1
// into every recomputed P. The first difference is small exactly where
// 2^(…) is large, so its rounding does not matter.
func expRowShifts[T Float](x, hi, lo []T) {
	hi, lo = hi[:len(x)], lo[:len(x)]
	switch x := any(x).(type) {
	case []float32:
		hi, lo := any(hi).([]float32), any(lo).([]float32)
		for j, v := range x {
			x[j] = exp2f32((v - hi[j]) - lo[j])
		}
	case []float64:
		hi, lo := any(hi).([]float64), any(lo).([]float64)
		for j, v := range x {
			x[j] = math.Exp2((v - hi[j]) - lo[j])
		}
	}
}

// scaleRow multiplies x by a in place: the rescale step (O·2^(m_old − m_new)
// when the running maximum grows, O/ℓ at the end).
func scaleRow[T Float](x []T, a T) {
	for j := range x {
		x[j] *= a
	}
}

// dsRowShifts turns a row of dPᵀ into dSᵀ in place:
// dp[j] = p[j]·(dp[j] − delta[j]), with delta the D_i = Σ_c dO_ic·O_ic
// (less dL_i when L itself has a gradient) of the row's queries.
func dsRowShifts[T Float](dp, p, delta []T) {
	p, delta = p[:len(dp)], delta[:len(dp)]
	for j := range dp {
		dp[j] = p[j] * (dp[j] - delta[j])
	}
}

// transposeTile writes the transpose of the rows×cols matrix src into dst
// (cols×rows): dst[c·rows + r] = src[r·cols + c].
func transposeTile[T Float](dst, src []T, rows, cols int) {
	dst, src = dst[:rows*cols], src[:rows*cols]
	for r := 0; r < rows; r++ {
		row := src[r*cols : (r+1)*cols]
		for c, x := range row {
			dst[c*rows+r] = x
		}
	}
}

// zeroRow sets x to zero.
func zeroRow[T Float](x []T) {
	clear(x)
}
