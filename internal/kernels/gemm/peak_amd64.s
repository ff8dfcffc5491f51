//go:build !purego

#include "textflag.h"

// The FMA peak loops: n iterations of 12 independent vector FMAs, enough
// chains to cover the FMA latency of two pipes. They compute nothing of
// use; the benchmarks divide a GEMM's rate by theirs.

// FMA_PEAK zeroes (with xor) the operands a, b and the twelve accumulators
// r0..r11, then runs CX iterations of r_i += a·b, i = 0..11, and returns.
#define FMA_PEAK(xor, a, b, r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11) \
	xor a, a, a; xor b, b, b; \
	xor r0, r0, r0; xor r1, r1, r1; xor r2, r2, r2; xor r3, r3, r3; \
	xor r4, r4, r4; xor r5, r5, r5; xor r6, r6, r6; xor r7, r7, r7; \
	xor r8, r8, r8; xor r9, r9, r9; xor r10, r10, r10; xor r11, r11, r11; \
loop: \
	VFMADD231PS a, b, r0; VFMADD231PS a, b, r1; VFMADD231PS a, b, r2; \
	VFMADD231PS a, b, r3; VFMADD231PS a, b, r4; VFMADD231PS a, b, r5; \
	VFMADD231PS a, b, r6; VFMADD231PS a, b, r7; VFMADD231PS a, b, r8; \
	VFMADD231PS a, b, r9; VFMADD231PS a, b, r10; VFMADD231PS a, b, r11; \
	DECQ CX; JNZ loop; \
	VZEROUPPER; RET

// func fmaLoop512(n int)
TEXT ·fmaLoop512(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	FMA_PEAK(VPXORD, Z30, Z31, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11)

// func fmaLoop256(n int)
TEXT ·fmaLoop256(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	FMA_PEAK(VPXOR, Y14, Y15, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11)
