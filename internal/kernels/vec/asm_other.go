//go:build !amd64 || purego

package vec

import "github.com/flashgorgon/flashgorgon/internal/isa"

// asmKernels: no assembly in this build.
func asmKernels(isa.Level) *kernels32 { return nil }
