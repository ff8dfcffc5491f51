//go:build !purego

#include "textflag.h"

// The four micro-kernels share two bodies (micro_avx512.h, micro_avx2.h),
// included once per element type; see microKernel (kernel.go) for what
// they compute. Each prologue loads the arguments into the registers the
// bodies expect and puts alpha, beta and ldc (bytes) on the frame at LOC.

// func microS512(k, kb int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, loadC bool)
TEXT ·microS512(SB), NOSPLIT, $24-81
	MOVQ    k+0(FP), CX
	MOVQ    kb+8(FP), R11
	MOVQ    a+16(FP), SI
	MOVQ    rs+24(FP), R8
	SHLQ    $2, R8
	MOVQ    ps+32(FP), R12
	SHLQ    $2, R12
	MOVQ    b+40(FP), DI
	MOVQ    bs+48(FP), R13
	SHLQ    $2, R13
	MOVQ    c+56(FP), DX
	MOVQ    ldc+64(FP), AX
	SHLQ    $2, AX
	MOVQ    AX, 16(SP)
	MOVL    alpha+72(FP), AX
	MOVL    AX, 0(SP)
	MOVL    beta+76(FP), AX
	MOVL    AX, 8(SP)
	MOVBQZX loadC+80(FP), R14

#define VFMA VFMADD231PS
#define VBCAST VBROADCASTSS
#define VADDV VADDPS
#define VMULV VMULPS
#define VMOVV VMOVUPS
#define LOC 0
#include "micro_avx512.h"
#undef VFMA
#undef VBCAST
#undef VADDV
#undef VMULV
#undef VMOVV
#undef LOC

// func microD512(k, kb int, a *float64, rs, ps int, b *float64, bs int, c *float64, ldc int, alpha, beta float64, loadC bool)
TEXT ·microD512(SB), NOSPLIT, $24-89
	MOVQ    k+0(FP), CX
	MOVQ    kb+8(FP), R11
	MOVQ    a+16(FP), SI
	MOVQ    rs+24(FP), R8
	SHLQ    $3, R8
	MOVQ    ps+32(FP), R12
	SHLQ    $3, R12
	MOVQ    b+40(FP), DI
	MOVQ    bs+48(FP), R13
	SHLQ    $3, R13
	MOVQ    c+56(FP), DX
	MOVQ    ldc+64(FP), AX
	SHLQ    $3, AX
	MOVQ    AX, 16(SP)
	MOVQ    alpha+72(FP), AX
	MOVQ    AX, 0(SP)
	MOVQ    beta+80(FP), AX
	MOVQ    AX, 8(SP)
	MOVBQZX loadC+88(FP), R14

#define VFMA VFMADD231PD
#define VBCAST VBROADCASTSD
#define VADDV VADDPD
#define VMULV VMULPD
#define VMOVV VMOVUPD
#define LOC 0
#include "micro_avx512.h"
#undef VFMA
#undef VBCAST
#undef VADDV
#undef VMULV
#undef VMOVV
#undef LOC

// func microS256(k, kb int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, loadC bool)
TEXT ·microS256(SB), $408-81
	MOVQ    k+0(FP), CX
	MOVQ    kb+8(FP), R11
	MOVQ    a+16(FP), SI
	MOVQ    rs+24(FP), R8
	SHLQ    $2, R8
	MOVQ    ps+32(FP), R12
	SHLQ    $2, R12
	MOVQ    b+40(FP), DI
	MOVQ    bs+48(FP), R13
	SHLQ    $2, R13
	MOVQ    c+56(FP), DX
	MOVQ    ldc+64(FP), AX
	SHLQ    $2, AX
	MOVQ    AX, 400(SP)
	MOVL    alpha+72(FP), AX
	MOVL    AX, 384(SP)
	MOVL    beta+76(FP), AX
	MOVL    AX, 392(SP)
	MOVBQZX loadC+80(FP), R14

#define VFMA VFMADD231PS
#define VBCAST VBROADCASTSS
#define VADDV VADDPS
#define VMULV VMULPS
#define VMOVV VMOVUPS
#define LOC 384
#include "micro_avx2.h"
#undef VFMA
#undef VBCAST
#undef VADDV
#undef VMULV
#undef VMOVV
#undef LOC

// func microD256(k, kb int, a *float64, rs, ps int, b *float64, bs int, c *float64, ldc int, alpha, beta float64, loadC bool)
TEXT ·microD256(SB), $408-89
	MOVQ    k+0(FP), CX
	MOVQ    kb+8(FP), R11
	MOVQ    a+16(FP), SI
	MOVQ    rs+24(FP), R8
	SHLQ    $3, R8
	MOVQ    ps+32(FP), R12
	SHLQ    $3, R12
	MOVQ    b+40(FP), DI
	MOVQ    bs+48(FP), R13
	SHLQ    $3, R13
	MOVQ    c+56(FP), DX
	MOVQ    ldc+64(FP), AX
	SHLQ    $3, AX
	MOVQ    AX, 400(SP)
	MOVQ    alpha+72(FP), AX
	MOVQ    AX, 384(SP)
	MOVQ    beta+80(FP), AX
	MOVQ    AX, 392(SP)
	MOVBQZX loadC+88(FP), R14

#define VFMA VFMADD231PD
#define VBCAST VBROADCASTSD
#define VADDV VADDPD
#define VMULV VMULPD
#define VMOVV VMOVUPD
#define LOC 384
#include "micro_avx2.h"
#undef VFMA
#undef VBCAST
#undef VADDV
#undef VMULV
#undef VMOVV
#undef LOC
