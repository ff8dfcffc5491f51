//go:build !amd64 || purego

package gemm

import "github.com/flashgorgon/flashgorgon/internal/isa"

func kernels32(isa.Level) *kernel[float32] { return generic32 }
func kernels64(isa.Level) *kernel[float64] { return generic64 }

func variants(isa.Level) []variant { return []variant{genericV} }
