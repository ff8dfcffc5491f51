//go:build !amd64 || purego

package gemm

const haveAVX2 = false

func micro(kc int, a, b, c []float32, ldc int) { microGo(kc, a, b, c, ldc) }
