//go:build !amd64 || purego

package gemm

import "github.com/flashgorgon/flashgorgon/internal/isa"

// peakLoop has no FMA loop to offer without assembly.
func peakLoop(isa.Level) (loop func(n int), flops int) { return nil, 0 }
