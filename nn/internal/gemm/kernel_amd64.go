//go:build !purego

package gemm

import "golang.org/x/sys/cpu"

// kernel6x16 is in kernel_amd64.s. kc must be at least 1; c must hold 6 rows
// of 16 floats at stride ldc.
//
//go:noescape
func kernel6x16(kc int, a, b, c *float32, ldc int)

// haveAVX2 tells whether the assembly kernel can run here.
var haveAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

func micro(kc int, a, b, c []float32, ldc int) {
	if haveAVX2 {
		kernel6x16(kc, &a[0], &b[0], &c[0], ldc)
		return
	}
	microGo(kc, a, b, c, ldc)
}
