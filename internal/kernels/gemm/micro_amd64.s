//go:build !purego

#include "textflag.h"

// The four micro-kernels share one body (micro.h), included with the
// register set and element type of each; see microKernel (kernel.go) for
// what they compute. Each prologue loads the arguments into the registers
// the body expects and puts alpha, beta and ldc (bytes) on the frame at LOC,
// above the four totals (4·12 vectors).

// func microS512(k, kb int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, loadC bool)
TEXT ·microS512(SB), $3096-81
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
	MOVQ    AX, 3088(SP)
	MOVL    alpha+72(FP), AX
	MOVL    AX, 3072(SP)
	MOVL    beta+76(FP), AX
	MOVL    AX, 3080(SP)
	MOVBQZX loadC+80(FP), R14

#define LOC 3072
#include "zmm.h"
#include "f32.h"
#include "micro.h"

// func microD512(k, kb int, a *float64, rs, ps int, b *float64, bs int, c *float64, ldc int, alpha, beta float64, loadC bool)
TEXT ·microD512(SB), $3096-89
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
	MOVQ    AX, 3088(SP)
	MOVQ    alpha+72(FP), AX
	MOVQ    AX, 3072(SP)
	MOVQ    beta+80(FP), AX
	MOVQ    AX, 3080(SP)
	MOVBQZX loadC+88(FP), R14

#define LOC 3072
#include "zmm.h"
#include "f64.h"
#include "micro.h"

// func microS256(k, kb int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, loadC bool)
TEXT ·microS256(SB), $1560-81
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
	MOVQ    AX, 1552(SP)
	MOVL    alpha+72(FP), AX
	MOVL    AX, 1536(SP)
	MOVL    beta+76(FP), AX
	MOVL    AX, 1544(SP)
	MOVBQZX loadC+80(FP), R14

#define LOC 1536
#include "ymm.h"
#include "f32.h"
#include "micro.h"

// func microD256(k, kb int, a *float64, rs, ps int, b *float64, bs int, c *float64, ldc int, alpha, beta float64, loadC bool)
TEXT ·microD256(SB), $1560-89
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
	MOVQ    AX, 1552(SP)
	MOVQ    alpha+72(FP), AX
	MOVQ    AX, 1536(SP)
	MOVQ    beta+80(FP), AX
	MOVQ    AX, 1544(SP)
	MOVBQZX loadC+88(FP), R14

#define LOC 1536
#include "ymm.h"
#include "f64.h"
#include "micro.h"
