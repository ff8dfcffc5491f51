//go:build !purego

package gemm

import "github.com/flashgorgon/flashgorgon/internal/isa"

// fmaLoop512 and fmaLoop256 (peak_amd64.s) run n iterations of 12
// independent float32 FMAs on zmm (16 lanes) or ymm (8 lanes) registers.
//
//go:noescape
func fmaLoop512(n int)

//go:noescape
func fmaLoop256(n int)

// peakLoop returns the FMA loop of level l and the float32 FLOPs of one of
// its iterations (12 FMAs × lanes × 2), or nil for the generic level.
func peakLoop(l isa.Level) (loop func(n int), flops int) {
	switch l {
	case isa.AVX512:
		return fmaLoop512, 12 * 16 * 2
	case isa.AVX2:
		return fmaLoop256, 12 * 8 * 2
	}
	return nil, 0
}
