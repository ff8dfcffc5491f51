//go:build !amd64 || purego

package vec

import "github.com/flashgorgon/flashgorgon/internal/isa"

// asmNNKernels: no assembly in this build.
func asmNNKernels(isa.Level) *nnKernels32 { return nil }
