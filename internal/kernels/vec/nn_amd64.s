//go:build !purego

#include "textflag.h"

// The float32 kernels of nn's layers (nn.go) in AVX-512 (16 lanes, ZMM) and
// AVX2+FMA (8 lanes, YMM), the same code in both widths. n (or d, the row
// length of the row kernels) is a multiple of the vector width and at least
// one vector; nn_amd64.go does the rest in Go. Operand order is Go's: the
// destination last, `VSUBPS B, A, D` computes D = A − B, and VMINPS returns
// its first operand when either is NaN. The float32 arithmetic of GELU's
// argument and output, of the affine rows and of AdamW keeps the order and
// roundings of the Go loops (no fused multiply-add), so those agree with the
// Go kernels bit for bit; the column sums do too (products of float32 are
// exact in float64, rows added in the same order). The norm rows compute in
// float64 and round once to float32, with FMA and another summation order
// than the Go loops.

// ---------------------------------------------------------------- AVX512

// func geluArgAVX512(dst, x *float32, n int, k, c float32)
// dst = k·(x + c·x·x·x)
TEXT ·geluArgAVX512(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS k+24(FP), Z31
	VBROADCASTSS c+28(FP), Z30
	SHRQ         $4, CX

loop:
	VMOVUPS (SI), Z0
	VMULPS  Z0, Z30, Z1
	VMULPS  Z0, Z1, Z1
	VMULPS  Z0, Z1, Z1
	VADDPS  Z1, Z0, Z1
	VMULPS  Z1, Z31, Z1
	VMOVUPS Z1, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     loop
	VZEROUPPER
	RET

// func geluOutAVX512(dst, x, e *float32, n int)
// dst = x/(1 + e)
TEXT ·geluOutAVX512(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         e+16(FP), DX
	MOVQ         n+24(FP), CX
	MOVL         $0x3f800000, AX
	VPBROADCASTD AX, Z31
	SHRQ         $4, CX

loop:
	VMOVUPS (DX), Z1
	VADDPS  Z31, Z1, Z1
	VMOVUPS (SI), Z0
	VDIVPS  Z1, Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, DI
	DECQ    CX
	JNZ     loop
	VZEROUPPER
	RET

// func geluGradOutAVX512(dst, x, e, g *float32, n int, k2, k3 float32)
// s = 1/(1 + e), se = min(s·e, 1) (1 for NaN: e = +Inf),
// dst = g·(s + s·se·x·(k2 + k3·x·x))
TEXT ·geluGradOutAVX512(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         e+16(FP), DX
	MOVQ         gr+24(FP), BX
	MOVQ         n+32(FP), CX
	VBROADCASTSS k2+40(FP), Z30
	VBROADCASTSS k3+44(FP), Z29
	MOVL         $0x3f800000, AX
	VPBROADCASTD AX, Z31
	MOVL         $0x7fffffff, AX
	VPBROADCASTD AX, Z28
	MOVL         $0x00800000, AX // 2^-126, float32's smallest normal
	VPBROADCASTD AX, Z27
	SHRQ         $4, CX

loop:
	VMOVUPS (DX), Z1
	VADDPS  Z31, Z1, Z2
	VDIVPS  Z2, Z31, Z2
	VMULPS  Z1, Z2, Z3
	VMINPS  Z31, Z3, Z3
	VMOVUPS (SI), Z0
	VMULPS  Z3, Z2, Z4
	VMULPS  Z0, Z4, Z4
	VMULPS  Z0, Z29, Z5
	VMULPS  Z0, Z5, Z5
	VADDPS  Z5, Z30, Z5
	VMULPS  Z5, Z4, Z4
	VADDPS  Z4, Z2, Z4
	VMULPS  (BX), Z4, Z4
	VANDPS  Z28, Z4, Z6      // |r|
	VCMPPS  $1, Z27, Z6, K1  // |r| < 2^-126: a subnormal (or 0)
	VXORPS  Z4, Z4, K1, Z4   // flushed to 0
	VMOVUPS Z4, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, BX
	ADDQ    $64, DI
	DECQ    CX
	JNZ     loop
	VZEROUPPER
	RET

// func normRowsAVX512(y, x *float32, rows, d, center int, nf, eps float64)
// Each row of d: mu = Σx/nf (0 without center), r = 1/√(Σ(x − mu)²/nf + eps),
// y = (x − mu)·r, all in float64 and rounded once, as rowStatsGo.
TEXT ·normRowsAVX512(SB), NOSPLIT, $0-56
	MOVQ   y+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   rows+16(FP), R8
	MOVQ   d+24(FP), R9
	MOVQ   center+32(FP), R10
	MOVSD  nf+40(FP), X8
	MOVSD  eps+48(FP), X9
	MOVQ   $0x3ff0000000000000, AX
	MOVQ   AX, X10
	MOVQ   R9, R11
	SHLQ   $2, R11
	SHRQ   $4, R9

row:
	VXORPD X11, X11, X11
	CMPQ   R10, $0
	JEQ    fnomean
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	MOVQ   SI, AX
	MOVQ   R9, CX

fmean:
	VCVTPS2PD (AX), Z0
	VCVTPS2PD 32(AX), Z1
	VADDPD Z0, Z4, Z4
	VADDPD Z1, Z5, Z5
	ADDQ   $64, AX
	DECQ   CX
	JNZ    fmean
	VADDPD        Z5, Z4, Z4
	VEXTRACTF64X4 $1, Z4, Y5
	VADDPD        Y5, Y4, Y4
	VEXTRACTF128  $1, Y4, X5
	VADDPD        X5, X4, X4
	VUNPCKHPD     X4, X4, X5
	VADDSD        X5, X4, X4
	VDIVSD X8, X4, X11

fnomean:
	VBROADCASTSD X11, Z15
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	MOVQ         SI, AX
	MOVQ         R9, CX

fss:
	VCVTPS2PD (AX), Z0
	VCVTPS2PD 32(AX), Z1
	VSUBPD      Z15, Z0, Z0
	VSUBPD      Z15, Z1, Z1
	VFMADD231PD Z0, Z0, Z4
	VFMADD231PD Z1, Z1, Z5
	ADDQ        $64, AX
	DECQ        CX
	JNZ         fss
	VADDPD        Z5, Z4, Z4
	VEXTRACTF64X4 $1, Z4, Y5
	VADDPD        Y5, Y4, Y4
	VEXTRACTF128  $1, Y4, X5
	VADDPD        X5, X4, X4
	VUNPCKHPD     X4, X4, X5
	VADDSD        X5, X4, X4
	VDIVSD  X8, X4, X4
	VADDSD  X9, X4, X4
	VSQRTSD X4, X4, X4
	VDIVSD  X4, X10, X12
	VBROADCASTSD X12, Z14
	MOVQ         SI, AX
	MOVQ         DI, BX
	MOVQ         R9, CX

out:
	VCVTPS2PD (AX), Z0
	VCVTPS2PD 32(AX), Z1
	VSUBPD Z15, Z0, Z0
	VSUBPD Z15, Z1, Z1
	VMULPD Z14, Z0, Z0
	VMULPD Z14, Z1, Z1
	VCVTPD2PS Z0, Y0
	VMOVUPS   Y0, (BX)
	VCVTPD2PS Z1, Y1
	VMOVUPS   Y1, 32(BX)
	ADDQ $64, AX
	ADDQ $64, BX
	DECQ CX
	JNZ  out
	ADDQ R11, SI
	ADDQ R11, DI
	DECQ R8
	JNZ  row
	VZEROUPPER
	RET

// func normGradRowsAVX512(dx, x, gr *float32, rows, d, center int, nf, eps float64)
// Each row: mu, r as normRowsAVX512; sg = Σ g, sgx = Σ g·(x − mu);
// dx = a·g + b·(x − mu) + c with a = r, b = −r³·sgx/nf, c = −r·sg/nf (0
// without center): r·(g − mean(g) − x̂·mean(g∘x̂)), in float64, rounded once.
TEXT ·normGradRowsAVX512(SB), NOSPLIT, $0-64
	MOVQ   dx+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   gr+16(FP), DX
	MOVQ   rows+24(FP), R8
	MOVQ   d+32(FP), R9
	MOVQ   center+40(FP), R10
	MOVSD  nf+48(FP), X8
	MOVSD  eps+56(FP), X9
	MOVQ   $0x3ff0000000000000, AX
	MOVQ   AX, X10
	MOVQ   R9, R11
	SHLQ   $2, R11
	SHRQ   $4, R9

row:
	VXORPD X11, X11, X11
	CMPQ   R10, $0
	JEQ    bnomean
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	MOVQ   SI, AX
	MOVQ   R9, CX

bmean:
	VCVTPS2PD (AX), Z0
	VCVTPS2PD 32(AX), Z1
	VADDPD Z0, Z4, Z4
	VADDPD Z1, Z5, Z5
	ADDQ   $64, AX
	DECQ   CX
	JNZ    bmean
	VADDPD        Z5, Z4, Z4
	VEXTRACTF64X4 $1, Z4, Y5
	VADDPD        Y5, Y4, Y4
	VEXTRACTF128  $1, Y4, X5
	VADDPD        X5, X4, X4
	VUNPCKHPD     X4, X4, X5
	VADDSD        X5, X4, X4
	VDIVSD X8, X4, X11

bnomean:
	VBROADCASTSD X11, Z15
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	MOVQ         SI, AX
	MOVQ         R9, CX

bss:
	VCVTPS2PD (AX), Z0
	VCVTPS2PD 32(AX), Z1
	VSUBPD      Z15, Z0, Z0
	VSUBPD      Z15, Z1, Z1
	VFMADD231PD Z0, Z0, Z4
	VFMADD231PD Z1, Z1, Z5
	ADDQ        $64, AX
	DECQ        CX
	JNZ         bss
	VADDPD        Z5, Z4, Z4
	VEXTRACTF64X4 $1, Z4, Y5
	VADDPD        Y5, Y4, Y4
	VEXTRACTF128  $1, Y4, X5
	VADDPD        X5, X4, X4
	VUNPCKHPD     X4, X4, X5
	VADDSD        X5, X4, X4
	VDIVSD  X8, X4, X4
	VADDSD  X9, X4, X4
	VSQRTSD X4, X4, X4
	VDIVSD  X4, X10, X12
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7
	MOVQ SI, AX
	MOVQ DX, BX
	MOVQ R9, CX

dot:
	VCVTPS2PD (BX), Z0
	VCVTPS2PD 32(BX), Z1
	VCVTPS2PD (AX), Z2
	VCVTPS2PD 32(AX), Z3
	VADDPD      Z0, Z4, Z4
	VADDPD      Z1, Z5, Z5
	VSUBPD      Z15, Z2, Z2
	VSUBPD      Z15, Z3, Z3
	VFMADD231PD Z2, Z0, Z6
	VFMADD231PD Z3, Z1, Z7
	ADDQ        $64, AX
	ADDQ        $64, BX
	DECQ        CX
	JNZ         dot
	VADDPD        Z5, Z4, Z4
	VEXTRACTF64X4 $1, Z4, Y5
	VADDPD        Y5, Y4, Y4
	VEXTRACTF128  $1, Y4, X5
	VADDPD        X5, X4, X4
	VUNPCKHPD     X4, X4, X5
	VADDSD        X5, X4, X4
	VADDPD        Z7, Z6, Z6
	VEXTRACTF64X4 $1, Z6, Y7
	VADDPD        Y7, Y6, Y6
	VEXTRACTF128  $1, Y6, X7
	VADDPD        X7, X6, X6
	VUNPCKHPD     X6, X6, X7
	VADDSD        X7, X6, X6
	VXORPD X13, X13, X13
	CMPQ   R10, $0
	JEQ    nomg
	VDIVSD X8, X4, X13

nomg:
	VMULSD X12, X13, X13
	VMULSD X12, X12, X14
	VMULSD X12, X14, X14
	VMULSD X6, X14, X14
	VDIVSD X8, X14, X14
	VXORPD X0, X0, X0
	VSUBSD X14, X0, X14
	VSUBSD X13, X0, X13
	VBROADCASTSD X12, Z12
	VBROADCASTSD X14, Z14
	VBROADCASTSD X13, Z13
	MOVQ         SI, AX
	MOVQ         DX, BX
	MOVQ         DI, R12
	MOVQ         R9, CX

out:
	VCVTPS2PD (AX), Z0
	VCVTPS2PD 32(AX), Z1
	VCVTPS2PD (BX), Z2
	VCVTPS2PD 32(BX), Z3
	VSUBPD      Z15, Z0, Z0
	VSUBPD      Z15, Z1, Z1
	VMULPD      Z14, Z0, Z0
	VMULPD      Z14, Z1, Z1
	VFMADD231PD Z12, Z2, Z0
	VFMADD231PD Z12, Z3, Z1
	VADDPD      Z13, Z0, Z0
	VADDPD      Z13, Z1, Z1
	VCVTPD2PS Z0, Y0
	VMOVUPS   Y0, (R12)
	VCVTPD2PS Z1, Y1
	VMOVUPS   Y1, 32(R12)
	ADDQ $64, AX
	ADDQ $64, BX
	ADDQ $64, R12
	DECQ CX
	JNZ  out
	ADDQ R11, SI
	ADDQ R11, DX
	ADDQ R11, DI
	DECQ R8
	JNZ  row
	VZEROUPPER
	RET

// func mulAddRowsAVX512(dst, x, y, z *float32, rows, d int)
// each row r of d: dst[r] = x[r]·y + z (the rows of y, z repeat)
TEXT ·mulAddRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), R9
	MOVQ z+24(FP), R10
	MOVQ rows+32(FP), R8
	MOVQ d+40(FP), R11
	SHRQ $4, R11

row:
	MOVQ R9, DX
	MOVQ R10, BX
	MOVQ R11, CX

loop:
	VMOVUPS (SI), Z0
	VMULPS  (DX), Z0, Z0
	VADDPS  (BX), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, BX
	ADDQ    $64, DI
	DECQ    CX
	JNZ     loop
	DECQ    R8
	JNZ     row
	VZEROUPPER
	RET

// func mulRowsAVX512(dst, x, y *float32, rows, d int)
// each row r of d: dst[r] = x[r]·y (the rows of y repeat)
TEXT ·mulRowsAVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), R9
	MOVQ rows+24(FP), R8
	MOVQ d+32(FP), R11
	SHRQ $4, R11

row:
	MOVQ R9, DX
	MOVQ R11, CX

loop:
	VMOVUPS (SI), Z0
	VMULPS  (DX), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, DI
	DECQ    CX
	JNZ     loop
	DECQ    R8
	JNZ     row
	VZEROUPPER
	RET

// func addRowsAVX512(dst, x, y *float32, rows, d int)
// each row r of d: dst[r] = x[r] + y (the rows of y repeat)
TEXT ·addRowsAVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), R9
	MOVQ rows+24(FP), R8
	MOVQ d+32(FP), R11
	SHRQ $4, R11

row:
	MOVQ R9, DX
	MOVQ R11, CX

loop:
	VMOVUPS (SI), Z0
	VADDPS  (DX), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, DI
	DECQ    CX
	JNZ     loop
	DECQ    R8
	JNZ     row
	VZEROUPPER
	RET

// func copyRowsAVX512(dst, src *float32, rows, d, ds, ss int)
// dst[r·ds + j] = src[r·ss + j] for r < rows, j < d (d a multiple of the width)
TEXT ·copyRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ rows+16(FP), R8
	MOVQ d+24(FP), R9
	MOVQ ds+32(FP), R10
	MOVQ ss+40(FP), R11
	SHLQ $2, R10
	SHLQ $2, R11
	SHRQ $4, R9

row:
	MOVQ DI, AX
	MOVQ SI, BX
	MOVQ R9, CX

loop:
	VMOVUPS (BX), Z0
	VMOVUPS Z0, (AX)
	ADDQ    $64, AX
	ADDQ    $64, BX
	DECQ    CX
	JNZ     loop
	ADDQ    R10, DI
	ADDQ    R11, SI
	DECQ    R8
	JNZ     row
	VZEROUPPER
	RET

// func colSumAVX512(acc *float64, x *float32, rows, stride int)
// acc[j] += Σ_r x[r·stride + j] for the 64 columns j of one block, in float64
TEXT ·colSumAVX512(SB), NOSPLIT, $0-32
	MOVQ acc+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ rows+16(FP), CX
	MOVQ stride+24(FP), DX
	SHLQ $2, DX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7

loop:
	VCVTPS2PD 0(SI), Z8
	VADDPD    Z8, Z0, Z0
	VCVTPS2PD 32(SI), Z8
	VADDPD    Z8, Z1, Z1
	VCVTPS2PD 64(SI), Z8
	VADDPD    Z8, Z2, Z2
	VCVTPS2PD 96(SI), Z8
	VADDPD    Z8, Z3, Z3
	VCVTPS2PD 128(SI), Z8
	VADDPD    Z8, Z4, Z4
	VCVTPS2PD 160(SI), Z8
	VADDPD    Z8, Z5, Z5
	VCVTPS2PD 192(SI), Z8
	VADDPD    Z8, Z6, Z6
	VCVTPS2PD 224(SI), Z8
	VADDPD    Z8, Z7, Z7
	ADDQ DX, SI
	DECQ CX
	JNZ  loop
	VADDPD  0(DI), Z0, Z0
	VMOVUPD Z0, 0(DI)
	VADDPD  64(DI), Z1, Z1
	VMOVUPD Z1, 64(DI)
	VADDPD  128(DI), Z2, Z2
	VMOVUPD Z2, 128(DI)
	VADDPD  192(DI), Z3, Z3
	VMOVUPD Z3, 192(DI)
	VADDPD  256(DI), Z4, Z4
	VMOVUPD Z4, 256(DI)
	VADDPD  320(DI), Z5, Z5
	VMOVUPD Z5, 320(DI)
	VADDPD  384(DI), Z6, Z6
	VMOVUPD Z6, 384(DI)
	VADDPD  448(DI), Z7, Z7
	VMOVUPD Z7, 448(DI)
	VZEROUPPER
	RET

// func colSumProdAVX512(acc *float64, x, y *float32, rows, stride int)
// acc[j] += Σ_r x[r·stride + j]·y[r·stride + j] (exact products), in float64
TEXT ·colSumProdAVX512(SB), NOSPLIT, $0-40
	MOVQ acc+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), BX
	MOVQ rows+24(FP), CX
	MOVQ stride+32(FP), DX
	SHLQ $2, DX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7

loop:
	VCVTPS2PD   0(SI), Z8
	VCVTPS2PD   0(BX), Z9
	VFMADD231PD Z9, Z8, Z0
	VCVTPS2PD   32(SI), Z8
	VCVTPS2PD   32(BX), Z9
	VFMADD231PD Z9, Z8, Z1
	VCVTPS2PD   64(SI), Z8
	VCVTPS2PD   64(BX), Z9
	VFMADD231PD Z9, Z8, Z2
	VCVTPS2PD   96(SI), Z8
	VCVTPS2PD   96(BX), Z9
	VFMADD231PD Z9, Z8, Z3
	VCVTPS2PD   128(SI), Z8
	VCVTPS2PD   128(BX), Z9
	VFMADD231PD Z9, Z8, Z4
	VCVTPS2PD   160(SI), Z8
	VCVTPS2PD   160(BX), Z9
	VFMADD231PD Z9, Z8, Z5
	VCVTPS2PD   192(SI), Z8
	VCVTPS2PD   192(BX), Z9
	VFMADD231PD Z9, Z8, Z6
	VCVTPS2PD   224(SI), Z8
	VCVTPS2PD   224(BX), Z9
	VFMADD231PD Z9, Z8, Z7
	ADDQ DX, SI
	ADDQ DX, BX
	DECQ CX
	JNZ  loop
	VADDPD  0(DI), Z0, Z0
	VMOVUPD Z0, 0(DI)
	VADDPD  64(DI), Z1, Z1
	VMOVUPD Z1, 64(DI)
	VADDPD  128(DI), Z2, Z2
	VMOVUPD Z2, 128(DI)
	VADDPD  192(DI), Z3, Z3
	VMOVUPD Z3, 192(DI)
	VADDPD  256(DI), Z4, Z4
	VMOVUPD Z4, 256(DI)
	VADDPD  320(DI), Z5, Z5
	VMOVUPD Z5, 320(DI)
	VADDPD  384(DI), Z6, Z6
	VMOVUPD Z6, 384(DI)
	VADDPD  448(DI), Z7, Z7
	VMOVUPD Z7, 448(DI)
	VZEROUPPER
	RET

// func adamWAVX512(p, g, m, v *float32, n int, h *adamConsts)
// 8 entries per iteration, in float64 as adamWGo:
// m' = b1·m + nb1·g, v' = b2·v + nb2·g·g, p = p·keep − (a·m')/(√v' + e)
TEXT ·adamWAVX512(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), DI
	MOVQ gr+8(FP), SI
	MOVQ m+16(FP), DX
	MOVQ v+24(FP), BX
	MOVQ n+32(FP), CX
	MOVQ h+40(FP), R8
	VBROADCASTSD 0(R8), Z31
	VBROADCASTSD 8(R8), Z30
	VBROADCASTSD 16(R8), Z29
	VBROADCASTSD 24(R8), Z28
	VBROADCASTSD 32(R8), Z27
	VBROADCASTSD 40(R8), Z26
	VBROADCASTSD 48(R8), Z25
	VBROADCASTSD 56(R8), Z24
	VBROADCASTSD 64(R8), Z23
	SHRQ $3, CX

loop:
	VCVTPS2PD (SI), Z0
	VCVTPS2PD (DX), Z1
	VMULPD    Z31, Z1, Z1
	VMULPD    Z30, Z0, Z2
	VADDPD    Z2, Z1, Z1
	VCVTPS2PD (BX), Z3
	VMULPD    Z29, Z3, Z3
	VMULPD    Z28, Z0, Z4
	VMULPD    Z0, Z4, Z4
	VADDPD    Z4, Z3, Z3
	// m' and v' below 2⁻¹²⁶ in magnitude are stored as 0 (K1, K2: the
	// lanes at or above it).
	VPANDQ    Z23, Z1, Z7
	VCMPPD    $0x1d, Z24, Z7, K1
	VPANDQ    Z23, Z3, Z8
	VCMPPD    $0x1d, Z24, Z8, K2
	VCVTPD2PS.Z Z1, K1, Y5
	VMOVUPS   Y5, (DX)
	VCVTPD2PS.Z Z3, K2, Y6
	VMOVUPS   Y6, (BX)
	VMULPD    Z26, Z1, Z1
	VSQRTPD   Z3, Z3
	VADDPD    Z27, Z3, Z3
	VDIVPD    Z3, Z1, Z1
	VCVTPS2PD (DI), Z2
	VMULPD    Z25, Z2, Z2
	VSUBPD    Z1, Z2, Z2
	VCVTPD2PS Z2, Y2
	VMOVUPS   Y2, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DX
	ADDQ      $32, BX
	ADDQ      $32, DI
	DECQ      CX
	JNZ       loop
	VZEROUPPER
	RET

// ---------------------------------------------------------------- AVX2

// func geluArgAVX2(dst, x *float32, n int, k, c float32)
// dst = k·(x + c·x·x·x)
TEXT ·geluArgAVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS k+24(FP), Y15
	VBROADCASTSS c+28(FP), Y14
	SHRQ         $3, CX

loop:
	VMOVUPS (SI), Y0
	VMULPS  Y0, Y14, Y1
	VMULPS  Y0, Y1, Y1
	VMULPS  Y0, Y1, Y1
	VADDPS  Y1, Y0, Y1
	VMULPS  Y1, Y15, Y1
	VMOVUPS Y1, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop
	VZEROUPPER
	RET

// func geluOutAVX2(dst, x, e *float32, n int)
// dst = x/(1 + e)
TEXT ·geluOutAVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         e+16(FP), DX
	MOVQ         n+24(FP), CX
	MOVL         $0x3f800000, AX
	MOVD         AX, X15
	VPBROADCASTD X15, Y15
	SHRQ         $3, CX

loop:
	VMOVUPS (DX), Y1
	VADDPS  Y15, Y1, Y1
	VMOVUPS (SI), Y0
	VDIVPS  Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop
	VZEROUPPER
	RET

// func geluGradOutAVX2(dst, x, e, g *float32, n int, k2, k3 float32)
// s = 1/(1 + e), se = min(s·e, 1) (1 for NaN: e = +Inf),
// dst = g·(s + s·se·x·(k2 + k3·x·x))
TEXT ·geluGradOutAVX2(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         e+16(FP), DX
	MOVQ         gr+24(FP), BX
	MOVQ         n+32(FP), CX
	VBROADCASTSS k2+40(FP), Y14
	VBROADCASTSS k3+44(FP), Y13
	MOVL         $0x3f800000, AX
	MOVD         AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x7fffffff, AX
	MOVD         AX, X12
	VPBROADCASTD X12, Y12
	MOVL         $0x00800000, AX // 2^-126, float32's smallest normal
	MOVD         AX, X11
	VPBROADCASTD X11, Y11
	SHRQ         $3, CX

loop:
	VMOVUPS (DX), Y1
	VADDPS  Y15, Y1, Y2
	VDIVPS  Y2, Y15, Y2
	VMULPS  Y1, Y2, Y3
	VMINPS  Y15, Y3, Y3
	VMOVUPS (SI), Y0
	VMULPS  Y3, Y2, Y4
	VMULPS  Y0, Y4, Y4
	VMULPS  Y0, Y13, Y5
	VMULPS  Y0, Y5, Y5
	VADDPS  Y5, Y14, Y5
	VMULPS  Y5, Y4, Y4
	VADDPS  Y4, Y2, Y4
	VMULPS  (BX), Y4, Y4
	VANDPS  Y12, Y4, Y6      // |r|
	VCMPPS  $1, Y11, Y6, Y7  // |r| < 2^-126: a subnormal (or 0)
	VANDNPS Y4, Y7, Y4       // flushed to 0
	VMOVUPS Y4, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, BX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop
	VZEROUPPER
	RET

// func normRowsAVX2(y, x *float32, rows, d, center int, nf, eps float64)
// Each row of d: mu = Σx/nf (0 without center), r = 1/√(Σ(x − mu)²/nf + eps),
// y = (x − mu)·r, all in float64 and rounded once, as rowStatsGo.
TEXT ·normRowsAVX2(SB), NOSPLIT, $0-56
	MOVQ   y+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   rows+16(FP), R8
	MOVQ   d+24(FP), R9
	MOVQ   center+32(FP), R10
	MOVSD  nf+40(FP), X8
	MOVSD  eps+48(FP), X9
	MOVQ   $0x3ff0000000000000, AX
	MOVQ   AX, X10
	MOVQ   R9, R11
	SHLQ   $2, R11
	SHRQ   $3, R9

row:
	VXORPD X11, X11, X11
	CMPQ   R10, $0
	JEQ    fnomean
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	MOVQ   SI, AX
	MOVQ   R9, CX

fmean:
	VCVTPS2PD (AX), Y0
	VCVTPS2PD 16(AX), Y1
	VADDPD Y0, Y4, Y4
	VADDPD Y1, Y5, Y5
	ADDQ   $32, AX
	DECQ   CX
	JNZ    fmean
	VADDPD       Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VADDPD       X5, X4, X4
	VUNPCKHPD    X4, X4, X5
	VADDSD       X5, X4, X4
	VDIVSD X8, X4, X11

fnomean:
	VBROADCASTSD X11, Y15
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	MOVQ         SI, AX
	MOVQ         R9, CX

fss:
	VCVTPS2PD (AX), Y0
	VCVTPS2PD 16(AX), Y1
	VSUBPD      Y15, Y0, Y0
	VSUBPD      Y15, Y1, Y1
	VFMADD231PD Y0, Y0, Y4
	VFMADD231PD Y1, Y1, Y5
	ADDQ        $32, AX
	DECQ        CX
	JNZ         fss
	VADDPD       Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VADDPD       X5, X4, X4
	VUNPCKHPD    X4, X4, X5
	VADDSD       X5, X4, X4
	VDIVSD  X8, X4, X4
	VADDSD  X9, X4, X4
	VSQRTSD X4, X4, X4
	VDIVSD  X4, X10, X12
	VBROADCASTSD X12, Y14
	MOVQ         SI, AX
	MOVQ         DI, BX
	MOVQ         R9, CX

out:
	VCVTPS2PD (AX), Y0
	VCVTPS2PD 16(AX), Y1
	VSUBPD Y15, Y0, Y0
	VSUBPD Y15, Y1, Y1
	VMULPD Y14, Y0, Y0
	VMULPD Y14, Y1, Y1
	VCVTPD2PSY Y0, X0
	VMOVUPS    X0, (BX)
	VCVTPD2PSY Y1, X1
	VMOVUPS    X1, 16(BX)
	ADDQ $32, AX
	ADDQ $32, BX
	DECQ CX
	JNZ  out
	ADDQ R11, SI
	ADDQ R11, DI
	DECQ R8
	JNZ  row
	VZEROUPPER
	RET

// func normGradRowsAVX2(dx, x, gr *float32, rows, d, center int, nf, eps float64)
// Each row: mu, r as normRowsAVX2; sg = Σ g, sgx = Σ g·(x − mu);
// dx = a·g + b·(x − mu) + c with a = r, b = −r³·sgx/nf, c = −r·sg/nf (0
// without center): r·(g − mean(g) − x̂·mean(g∘x̂)), in float64, rounded once.
TEXT ·normGradRowsAVX2(SB), NOSPLIT, $0-64
	MOVQ   dx+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   gr+16(FP), DX
	MOVQ   rows+24(FP), R8
	MOVQ   d+32(FP), R9
	MOVQ   center+40(FP), R10
	MOVSD  nf+48(FP), X8
	MOVSD  eps+56(FP), X9
	MOVQ   $0x3ff0000000000000, AX
	MOVQ   AX, X10
	MOVQ   R9, R11
	SHLQ   $2, R11
	SHRQ   $3, R9

row:
	VXORPD X11, X11, X11
	CMPQ   R10, $0
	JEQ    bnomean
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	MOVQ   SI, AX
	MOVQ   R9, CX

bmean:
	VCVTPS2PD (AX), Y0
	VCVTPS2PD 16(AX), Y1
	VADDPD Y0, Y4, Y4
	VADDPD Y1, Y5, Y5
	ADDQ   $32, AX
	DECQ   CX
	JNZ    bmean
	VADDPD       Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VADDPD       X5, X4, X4
	VUNPCKHPD    X4, X4, X5
	VADDSD       X5, X4, X4
	VDIVSD X8, X4, X11

bnomean:
	VBROADCASTSD X11, Y15
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	MOVQ         SI, AX
	MOVQ         R9, CX

bss:
	VCVTPS2PD (AX), Y0
	VCVTPS2PD 16(AX), Y1
	VSUBPD      Y15, Y0, Y0
	VSUBPD      Y15, Y1, Y1
	VFMADD231PD Y0, Y0, Y4
	VFMADD231PD Y1, Y1, Y5
	ADDQ        $32, AX
	DECQ        CX
	JNZ         bss
	VADDPD       Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VADDPD       X5, X4, X4
	VUNPCKHPD    X4, X4, X5
	VADDSD       X5, X4, X4
	VDIVSD  X8, X4, X4
	VADDSD  X9, X4, X4
	VSQRTSD X4, X4, X4
	VDIVSD  X4, X10, X12
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	MOVQ SI, AX
	MOVQ DX, BX
	MOVQ R9, CX

dot:
	VCVTPS2PD (BX), Y0
	VCVTPS2PD 16(BX), Y1
	VCVTPS2PD (AX), Y2
	VCVTPS2PD 16(AX), Y3
	VADDPD      Y0, Y4, Y4
	VADDPD      Y1, Y5, Y5
	VSUBPD      Y15, Y2, Y2
	VSUBPD      Y15, Y3, Y3
	VFMADD231PD Y2, Y0, Y6
	VFMADD231PD Y3, Y1, Y7
	ADDQ        $32, AX
	ADDQ        $32, BX
	DECQ        CX
	JNZ         dot
	VADDPD       Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VADDPD       X5, X4, X4
	VUNPCKHPD    X4, X4, X5
	VADDSD       X5, X4, X4
	VADDPD       Y7, Y6, Y6
	VEXTRACTF128 $1, Y6, X7
	VADDPD       X7, X6, X6
	VUNPCKHPD    X6, X6, X7
	VADDSD       X7, X6, X6
	VXORPD X13, X13, X13
	CMPQ   R10, $0
	JEQ    nomg
	VDIVSD X8, X4, X13

nomg:
	VMULSD X12, X13, X13
	VMULSD X12, X12, X14
	VMULSD X12, X14, X14
	VMULSD X6, X14, X14
	VDIVSD X8, X14, X14
	VXORPD X0, X0, X0
	VSUBSD X14, X0, X14
	VSUBSD X13, X0, X13
	VBROADCASTSD X12, Y12
	VBROADCASTSD X14, Y14
	VBROADCASTSD X13, Y13
	MOVQ         SI, AX
	MOVQ         DX, BX
	MOVQ         DI, R12
	MOVQ         R9, CX

out:
	VCVTPS2PD (AX), Y0
	VCVTPS2PD 16(AX), Y1
	VCVTPS2PD (BX), Y2
	VCVTPS2PD 16(BX), Y3
	VSUBPD      Y15, Y0, Y0
	VSUBPD      Y15, Y1, Y1
	VMULPD      Y14, Y0, Y0
	VMULPD      Y14, Y1, Y1
	VFMADD231PD Y12, Y2, Y0
	VFMADD231PD Y12, Y3, Y1
	VADDPD      Y13, Y0, Y0
	VADDPD      Y13, Y1, Y1
	VCVTPD2PSY Y0, X0
	VMOVUPS    X0, (R12)
	VCVTPD2PSY Y1, X1
	VMOVUPS    X1, 16(R12)
	ADDQ $32, AX
	ADDQ $32, BX
	ADDQ $32, R12
	DECQ CX
	JNZ  out
	ADDQ R11, SI
	ADDQ R11, DX
	ADDQ R11, DI
	DECQ R8
	JNZ  row
	VZEROUPPER
	RET

// func mulAddRowsAVX2(dst, x, y, z *float32, rows, d int)
// each row r of d: dst[r] = x[r]·y + z (the rows of y, z repeat)
TEXT ·mulAddRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), R9
	MOVQ z+24(FP), R10
	MOVQ rows+32(FP), R8
	MOVQ d+40(FP), R11
	SHRQ $3, R11

row:
	MOVQ R9, DX
	MOVQ R10, BX
	MOVQ R11, CX

loop:
	VMOVUPS (SI), Y0
	VMULPS  (DX), Y0, Y0
	VADDPS  (BX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, BX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop
	DECQ    R8
	JNZ     row
	VZEROUPPER
	RET

// func mulRowsAVX2(dst, x, y *float32, rows, d int)
// each row r of d: dst[r] = x[r]·y (the rows of y repeat)
TEXT ·mulRowsAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), R9
	MOVQ rows+24(FP), R8
	MOVQ d+32(FP), R11
	SHRQ $3, R11

row:
	MOVQ R9, DX
	MOVQ R11, CX

loop:
	VMOVUPS (SI), Y0
	VMULPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop
	DECQ    R8
	JNZ     row
	VZEROUPPER
	RET

// func addRowsAVX2(dst, x, y *float32, rows, d int)
// each row r of d: dst[r] = x[r] + y (the rows of y repeat)
TEXT ·addRowsAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), R9
	MOVQ rows+24(FP), R8
	MOVQ d+32(FP), R11
	SHRQ $3, R11

row:
	MOVQ R9, DX
	MOVQ R11, CX

loop:
	VMOVUPS (SI), Y0
	VADDPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop
	DECQ    R8
	JNZ     row
	VZEROUPPER
	RET

// func copyRowsAVX2(dst, src *float32, rows, d, ds, ss int)
// dst[r·ds + j] = src[r·ss + j] for r < rows, j < d (d a multiple of the width)
TEXT ·copyRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ rows+16(FP), R8
	MOVQ d+24(FP), R9
	MOVQ ds+32(FP), R10
	MOVQ ss+40(FP), R11
	SHLQ $2, R10
	SHLQ $2, R11
	SHRQ $3, R9

row:
	MOVQ DI, AX
	MOVQ SI, BX
	MOVQ R9, CX

loop:
	VMOVUPS (BX), Y0
	VMOVUPS Y0, (AX)
	ADDQ    $32, AX
	ADDQ    $32, BX
	DECQ    CX
	JNZ     loop
	ADDQ    R10, DI
	ADDQ    R11, SI
	DECQ    R8
	JNZ     row
	VZEROUPPER
	RET

// func colSumAVX2(acc *float64, x *float32, rows, stride int)
// acc[j] += Σ_r x[r·stride + j] for the 32 columns j of one block, in float64
TEXT ·colSumAVX2(SB), NOSPLIT, $0-32
	MOVQ acc+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ rows+16(FP), CX
	MOVQ stride+24(FP), DX
	SHLQ $2, DX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7

loop:
	VCVTPS2PD 0(SI), Y8
	VADDPD    Y8, Y0, Y0
	VCVTPS2PD 16(SI), Y8
	VADDPD    Y8, Y1, Y1
	VCVTPS2PD 32(SI), Y8
	VADDPD    Y8, Y2, Y2
	VCVTPS2PD 48(SI), Y8
	VADDPD    Y8, Y3, Y3
	VCVTPS2PD 64(SI), Y8
	VADDPD    Y8, Y4, Y4
	VCVTPS2PD 80(SI), Y8
	VADDPD    Y8, Y5, Y5
	VCVTPS2PD 96(SI), Y8
	VADDPD    Y8, Y6, Y6
	VCVTPS2PD 112(SI), Y8
	VADDPD    Y8, Y7, Y7
	ADDQ DX, SI
	DECQ CX
	JNZ  loop
	VADDPD  0(DI), Y0, Y0
	VMOVUPD Y0, 0(DI)
	VADDPD  32(DI), Y1, Y1
	VMOVUPD Y1, 32(DI)
	VADDPD  64(DI), Y2, Y2
	VMOVUPD Y2, 64(DI)
	VADDPD  96(DI), Y3, Y3
	VMOVUPD Y3, 96(DI)
	VADDPD  128(DI), Y4, Y4
	VMOVUPD Y4, 128(DI)
	VADDPD  160(DI), Y5, Y5
	VMOVUPD Y5, 160(DI)
	VADDPD  192(DI), Y6, Y6
	VMOVUPD Y6, 192(DI)
	VADDPD  224(DI), Y7, Y7
	VMOVUPD Y7, 224(DI)
	VZEROUPPER
	RET

// func colSumProdAVX2(acc *float64, x, y *float32, rows, stride int)
// acc[j] += Σ_r x[r·stride + j]·y[r·stride + j] (exact products), in float64
TEXT ·colSumProdAVX2(SB), NOSPLIT, $0-40
	MOVQ acc+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), BX
	MOVQ rows+24(FP), CX
	MOVQ stride+32(FP), DX
	SHLQ $2, DX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7

loop:
	VCVTPS2PD   0(SI), Y8
	VCVTPS2PD   0(BX), Y9
	VFMADD231PD Y9, Y8, Y0
	VCVTPS2PD   16(SI), Y8
	VCVTPS2PD   16(BX), Y9
	VFMADD231PD Y9, Y8, Y1
	VCVTPS2PD   32(SI), Y8
	VCVTPS2PD   32(BX), Y9
	VFMADD231PD Y9, Y8, Y2
	VCVTPS2PD   48(SI), Y8
	VCVTPS2PD   48(BX), Y9
	VFMADD231PD Y9, Y8, Y3
	VCVTPS2PD   64(SI), Y8
	VCVTPS2PD   64(BX), Y9
	VFMADD231PD Y9, Y8, Y4
	VCVTPS2PD   80(SI), Y8
	VCVTPS2PD   80(BX), Y9
	VFMADD231PD Y9, Y8, Y5
	VCVTPS2PD   96(SI), Y8
	VCVTPS2PD   96(BX), Y9
	VFMADD231PD Y9, Y8, Y6
	VCVTPS2PD   112(SI), Y8
	VCVTPS2PD   112(BX), Y9
	VFMADD231PD Y9, Y8, Y7
	ADDQ DX, SI
	ADDQ DX, BX
	DECQ CX
	JNZ  loop
	VADDPD  0(DI), Y0, Y0
	VMOVUPD Y0, 0(DI)
	VADDPD  32(DI), Y1, Y1
	VMOVUPD Y1, 32(DI)
	VADDPD  64(DI), Y2, Y2
	VMOVUPD Y2, 64(DI)
	VADDPD  96(DI), Y3, Y3
	VMOVUPD Y3, 96(DI)
	VADDPD  128(DI), Y4, Y4
	VMOVUPD Y4, 128(DI)
	VADDPD  160(DI), Y5, Y5
	VMOVUPD Y5, 160(DI)
	VADDPD  192(DI), Y6, Y6
	VMOVUPD Y6, 192(DI)
	VADDPD  224(DI), Y7, Y7
	VMOVUPD Y7, 224(DI)
	VZEROUPPER
	RET

// func adamWAVX2(p, g, m, v *float32, n int, h *adamConsts)
// 4 entries per iteration, in float64 as adamWGo:
// m' = b1·m + nb1·g, v' = b2·v + nb2·g·g, p = p·keep − (a·m')/(√v' + e)
TEXT ·adamWAVX2(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), DI
	MOVQ gr+8(FP), SI
	MOVQ m+16(FP), DX
	MOVQ v+24(FP), BX
	MOVQ n+32(FP), CX
	MOVQ h+40(FP), R8
	VBROADCASTSD 0(R8), Y15
	VBROADCASTSD 8(R8), Y14
	VBROADCASTSD 16(R8), Y13
	VBROADCASTSD 24(R8), Y12
	VBROADCASTSD 32(R8), Y11
	VBROADCASTSD 40(R8), Y10
	VBROADCASTSD 48(R8), Y9
	VBROADCASTSD 56(R8), Y8
	VBROADCASTSD 64(R8), Y7
	SHRQ $2, CX

loop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD (DX), Y1
	VMULPD    Y15, Y1, Y1
	VMULPD    Y14, Y0, Y2
	VADDPD    Y2, Y1, Y1
	VCVTPS2PD (BX), Y3
	VMULPD    Y13, Y3, Y3
	VMULPD    Y12, Y0, Y4
	VMULPD    Y0, Y4, Y4
	VADDPD    Y4, Y3, Y3
	// m' and v' below 2⁻¹²⁶ in magnitude are stored as 0: each ANDed
	// with the mask of its lanes at or above it.
	VANDPD     Y7, Y1, Y5
	VCMPPD     $0x1d, Y8, Y5, Y5
	VANDPD     Y1, Y5, Y5
	VCVTPD2PSY Y5, X5
	VMOVUPS    X5, (DX)
	VANDPD     Y7, Y3, Y6
	VCMPPD     $0x1d, Y8, Y6, Y6
	VANDPD     Y3, Y6, Y6
	VCVTPD2PSY Y6, X6
	VMOVUPS    X6, (BX)
	VMULPD    Y10, Y1, Y1
	VSQRTPD   Y3, Y3
	VADDPD    Y11, Y3, Y3
	VDIVPD    Y3, Y1, Y1
	VCVTPS2PD (DI), Y2
	VMULPD    Y9, Y2, Y2
	VSUBPD    Y1, Y2, Y2
	VCVTPD2PSY Y2, X2
	VMOVUPS    X2, (DI)
	ADDQ      $16, SI
	ADDQ      $16, DX
	ADDQ      $16, BX
	ADDQ      $16, DI
	DECQ      CX
	JNZ       loop
	VZEROUPPER
	RET
