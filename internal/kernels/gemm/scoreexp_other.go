//go:build !amd64 || purego

package gemm

// HasScoreExp reports whether ScoreExp runs for depth k: never without
// the AVX-512 kernels.
func HasScoreExp(k int) bool { return false }

func scoreExp(m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, lim []int, ref []float32, lv []float64, grow func(int, float32, float32) float32) {
	panic("gemm: ScoreExp without its kernels")
}
