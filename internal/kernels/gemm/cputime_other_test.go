//go:build !unix

package gemm

// cpuSeconds is not measured here; the benchmarks then report no CPU-time rates.
func cpuSeconds() float64 { return 0 }
