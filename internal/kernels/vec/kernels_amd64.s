//go:build !purego

#include "textflag.h"

// The float32 row kernels in AVX-512 (16 lanes, ZMM) and AVX2+FMA (8 lanes,
// YMM). Every function takes n, a multiple of its vector width and at least
// one vector; asm_amd64.go does the tails. Operand order is Go's: the
// destination last, `VSUBPS B, A, D` computes D = A − B, and for VMAXPS /
// VMINPS the first operand is the one returned when either is NaN.
//
// The exponential (EXPCORE512, EXPCORE256) takes an argument a, as a float32
// a and its rounding error e (the exact argument is a + e), and the table of
// its base at R8 (expTable in asm_amd64.go, entry k at offset 32·k):
//
//	a ← clamp(a, lo, hi)                 NaN stays NaN; past lo the result is 0, past hi +Inf
//	e ← clamp(e, −1, 1)                  NaN (from an infinite a) becomes a number
//	n = round(a·log₂e)
//	r = (a − n·C1) + (e − n·C2)          a − n·C1 is exact: C1 has 9 bits, |n| ≤ 151
//	p = 1 + r·q(r)                       q of degree 5
//	y = p·2ⁿ                             VSCALEFPS, or two exponent-bit products (AVX2)
//
// so that each y is within 2 ulp of e^{a+e} (TestExpAccuracy), subnormal
// results rounded once. For AVX2, 2ⁿ = 2^(n−b)·2^b with b = clamp(n, −126, 2)
// keeps both factors normal and p·2^(n−b) exact; the second product rounds.

// Table offsets.
#define T_LOG2BASE 0
#define T_C1 32
#define T_C2 64
#define T_LO 96
#define T_HI 128
#define T_ELO 160
#define T_EHI 192
#define T_Q6 224
#define T_Q5 256
#define T_Q4 288
#define T_Q3 320
#define T_Q2 352
#define T_Q1 384
#define T_ONE 416
#define T_BMIN 448
#define T_BMAX 480
#define T_BIAS 512

// ---------------------------------------------------------------- AVX-512

// LOADEXP512 broadcasts the table at R8 into Z15…Z28.
#define LOADEXP512 \
	VBROADCASTSS T_LOG2BASE(R8), Z28; \
	VBROADCASTSS T_C1(R8), Z27;       \
	VBROADCASTSS T_C2(R8), Z26;       \
	VBROADCASTSS T_LO(R8), Z25;       \
	VBROADCASTSS T_HI(R8), Z24;       \
	VBROADCASTSS T_ELO(R8), Z23;      \
	VBROADCASTSS T_EHI(R8), Z22;      \
	VBROADCASTSS T_Q6(R8), Z21;       \
	VBROADCASTSS T_Q5(R8), Z20;       \
	VBROADCASTSS T_Q4(R8), Z19;       \
	VBROADCASTSS T_Q3(R8), Z18;       \
	VBROADCASTSS T_Q2(R8), Z17;       \
	VBROADCASTSS T_Q1(R8), Z16;       \
	VBROADCASTSS T_ONE(R8), Z15

// ARGSCALE512: Z0 = x; Z31 = scale, Z30 = shift, Z29 = −shift.
// Out: Z3 = a = fl(scale·x − shift), Z2 = e = (scale·x − shift) − a exactly:
// the product's error by FMA, the difference's by Knuth's TwoSum.
#define ARGSCALE512 \
	VMULPS      Z0, Z31, Z1; \ // p = fl(scale·x)
	VMOVAPS     Z1, Z2;      \
	VFMSUB231PS Z0, Z31, Z2; \ // ep = scale·x − p
	VSUBPS      Z30, Z1, Z3; \ // a = fl(p − shift)
	VSUBPS      Z1, Z3, Z4;  \ // z = a − p
	VSUBPS      Z4, Z3, Z5;  \
	VSUBPS      Z5, Z1, Z5;  \ // p − (a − z)
	VSUBPS      Z4, Z29, Z4; \ // −shift − z
	VADDPS      Z4, Z5, Z5;  \ // es = (p − shift) − a
	VADDPS      Z5, Z2, Z2     // e = ep + es

// ARGSHIFT512 is ARGSCALE512 for scale = 1 (softmax rows): Z0 = x, Z30 = shift,
// Z29 = −shift. Out: Z3 = a = fl(x − shift), Z2 = e = (x − shift) − a.
#define ARGSHIFT512 \
	VSUBPS Z30, Z0, Z3; \ // a = fl(x − shift)
	VSUBPS Z0, Z3, Z4;  \ // z = a − x
	VSUBPS Z4, Z3, Z5;  \
	VSUBPS Z5, Z0, Z5;  \ // x − (a − z)
	VSUBPS Z4, Z29, Z4; \ // −shift − z
	VADDPS Z4, Z5, Z2      // e

// ARGVEC512: Z0 = x, Z10 = hi, Z11 = lo. Out: Z3 = a = fl(x − hi),
// Z2 = e = (x − hi − lo) − a (TwoSum's error, less lo).
#define ARGVEC512 \
	VSUBPS Z10, Z0, Z3; \ // a = fl(x − hi)
	VSUBPS Z0, Z3, Z4;  \ // z = a − x
	VSUBPS Z4, Z3, Z5;  \
	VSUBPS Z5, Z0, Z5;  \ // x − (a − z)
	VADDPS Z4, Z10, Z4; \ // hi + z
	VSUBPS Z4, Z5, Z2;  \ // es = (x − hi) − a
	VSUBPS Z11, Z2, Z2    // e = es − lo

// EXPPOLY512: Z7 = p = 1 + r·q(r) for Z3 = r, q of degree 5 by Horner's rule
// (coefficients Z21 .. Z16 and 1 in Z15, from LOADEXP512): the polynomial of
// EXPCORE512 and EXP2CORE2_512.
#define EXPPOLY512 \
	VMOVAPS     Z21, Z7;     \
	VFMADD213PS Z20, Z3, Z7; \
	VFMADD213PS Z19, Z3, Z7; \
	VFMADD213PS Z18, Z3, Z7; \
	VFMADD213PS Z17, Z3, Z7; \
	VFMADD213PS Z16, Z3, Z7; \ // q(r)
	VFMADD213PS Z15, Z3, Z7    // p = 1 + r·q(r)

// EXPCORE512: Z3 = a, Z2 = e, constants from LOADEXP512. Out: Z7 = base^(a+e).
// Clobbers Z2, Z3, Z6.
#define EXPCORE512 \
	VMAXPS       Z3, Z25, Z3;  \ // a = max(lo, a), NaN kept
	VMINPS       Z3, Z24, Z3;  \ // a = min(hi, a)
	VMAXPS       Z23, Z2, Z2;  \ // e = max(e, −1), NaN → −1
	VMINPS       Z22, Z2, Z2;  \ // e = min(e, 1)
	VMULPS       Z28, Z3, Z6;  \
	VRNDSCALEPS  $0, Z6, Z6;   \ // n = round(a·log₂base)
	VFNMADD231PS Z27, Z6, Z3;  \ // a − n·C1 (exact)
	VFNMADD231PS Z26, Z6, Z2;  \ // e − n·C2
	VADDPS       Z2, Z3, Z3;   \ // r
	EXPPOLY512;                \
	VSCALEFPS    Z6, Z7, Z7      // p·2ⁿ

// EXP2TAB512 is 2^(x − m) for the online softmax (onlineExp2RowsAVX512),
// from a table of 2^(j/16) held in one register: Z0 = x, Z30 = m (x ≤ m,
// the row's maximum, or NaN), the constants of LOADEXP2TAB512. Out: Z7.
// Clobbers Z1, Z2, Z3, Z6, K3.
//
//	a = max(fl(x − m), lo)     rounded once (below); NaN stays NaN
//	y = 0                      where a < −125 (−Inf included)
//	t = a + S                  S = 1.5·2¹⁹: t's ulp is 1/16, so t − S = k =
//	                           round(16a)/16 exactly, and the low 4 bits of t's
//	                           significand are j = 16k mod 16 (two's complement)
//	r = a − k                  exact, |r| ≤ 1/32
//	y = (T_j + (T_j·r)·q(r))·2^⌊k⌋   T_j = 2^(j/16) (VPERMPS), q(r) = (2^r − 1)/r
//	                           to degree 2, VSCALEFPS elsewhere
//
// as k = ⌊k⌋ + j/16. The argument fl(x − m) is exact where x ≥ m/2
// (Sterbenz), so for every probability above 2^(−|m|/2); elsewhere the
// rounding costs an entry a relative error of at most 2⁻²⁴·ln 2·|x − m|:
// only the entries far below the row's maximum, whose share of the row's
// sum is small, and the scores x carry a rounding of that size from the
// product that made them (ops/attention's TestLargeLogits: the
// fused/decomposed error ratios did not move). It saves the exact
// argument's TwoSum. Error of y: T_j's rounding (½ ulp), the last FMA's
// (½ ulp), q's truncation (0.08 ulp), the product T_j·r's (on a term of at
// most T_j/40: 0.03 ulp): within 1.1 ulp (TestOnlineExp2Rows wants 2; 1.05
// seen). 13 µops a vector as the degree-6 polynomial of EXP2CORE2_512 with
// VRNDSCALEPS (two µops), but a dependency chain of 36 cycles instead of 48:
// alone in a loop on the development Xeon, 5.7–6.5 cycles a vector in place of
// 7.3–10 (the long chain's µops fill the scheduler).
//
// A result below 2⁻¹²⁶ would cost VSCALEFPS a microcode assist of about
// 200 cycles a vector (measured; a subnormal operand costs the FMAs of the
// product P·V that reads the tile next as much): the lanes a < −125 are
// masked off the scaling (VCMPPS, one µop) and give 0. OnlineExp2Rows
// documents the flush.
#define EXP2TAB512 \
	EXP2TABARG512(Z0, Z3, Z6, Z1, K3); \
	EXP2TABPOLY512(Z3, Z6, Z1, Z2, Z7, K3)

// EXP2TAB512_2 is EXP2TAB512 on two vectors at once, interleaved: Z0 → Z7
// and Z4 → Z23. Clobbers Z1…Z6, Z20…Z22, K3, K4.
#define EXP2TAB512_2 \
	EXP2TABARG512(Z0, Z3, Z6, Z1, K3);      \
	EXP2TABARG512(Z4, Z5, Z20, Z21, K4);    \
	EXP2TABPOLY512(Z3, Z6, Z1, Z2, Z7, K3); \
	EXP2TABPOLY512(Z5, Z20, Z21, Z22, Z23, K4)

// EXP2TABARG512(X, A, N, K, M): A = r, N = t, K = k of EXP2TAB512 from
// X = x, and M the lanes whose result is kept (a ≥ −125, or NaN).
#define EXP2TABARG512(X, A, N, K, M) \
	VSUBPS Z30, X, A;     \ // a = fl(x − m)
	VMAXPS A, Z25, A;     \ // a = max(lo, a), NaN kept
	VCMPPS $5, Z28, A, M; \ // not a < −125
	VADDPS Z15, A, N;     \ // t = a + S
	VSUBPS Z15, N, K;     \ // k = round(16a)/16
	VSUBPS K, A, A           // r = a − k

// EXP2TABPOLY512(A, N, K, T, Y, M): Y = 2^(k + r) from A = r, N = t, K = k
// on the lanes M, 0 elsewhere (EXP2TAB512). Clobbers A, T.
#define EXP2TABPOLY512(A, N, K, T, Y, M) \
	EXP2TABMANT512(A, N, T, Y); \
	VSCALEFPS.Z K, Y, M, Y        // ·2^⌊k⌋

// EXP2TABMANT512(A, N, T, Y): Y = T_j·2^r = 2^(k − ⌊k⌋ + r) (EXP2TAB512
// before its scaling). Clobbers A, T.
#define EXP2TABMANT512(A, N, T, Y) \
	VPERMPS     Z16, N, T; \ // T_j, j = t's low 4 bits
	VMOVAPS     Z17, Y;    \
	VFMADD213PS Z18, A, Y; \
	VFMADD213PS Z19, A, Y; \ // q(r) = c1 + c2·r + c3·r²
	VMULPS      T, A, A;   \ // T_j·r
	VFMADD213PS T, A, Y       // T_j + T_j·r·q(r)

// LOADEXP2TAB512 loads the constants of EXP2TAB512 from the exp2Table16 at
// R8: Z16 = T_0…T_15, Z25 = lo, Z15 = S, Z17…Z19 = c3, c2, c1, Z28 = −125.
#define LOADEXP2TAB512 \
	VMOVUPS      0(R8), Z16;  \
	VBROADCASTSS 64(R8), Z25; \
	VBROADCASTSS 68(R8), Z15; \
	VBROADCASTSS 72(R8), Z17; \
	VBROADCASTSS 76(R8), Z18; \
	VBROADCASTSS 80(R8), Z19; \
	VBROADCASTSS 84(R8), Z28

// EXP2CORE2_512 is 2^(a + e) for Exp2MulDiffRows: Z3 = a (an argument
// ≤ about 0, or NaN), Z2 = e (a finite e of at most half an ulp of a),
// base-2 constants from LOADEXP512, Z29 = −125. Out: Z7 within 1 ulp (the
// polynomial is within 0.56 ulp of 2^r on |r| ≤ ½ in float32 arithmetic,
// the scaling exact), 0 where a < −125 (as EXP2TAB512: the lanes are
// masked off the scaling, whose subnormal results would cost a microcode
// assist, and so would the products that read them). Clobbers Z3, Z6, K3.
//
//	a ← max(a, lo)             NaN stays NaN
//	n = round(a), r = (a − n) + e
//	y = (1 + r·q(r))·2ⁿ        q of degree 5, VSCALEFPS; 0 where a < −125
#define EXP2CORE2_512 \
	VMAXPS      Z3, Z25, Z3;     \
	VCMPPS      $5, Z29, Z3, K3; \ // not a < −125
	VRNDSCALEPS $0, Z3, Z6;      \
	VSUBPS      Z6, Z3, Z3;      \
	VADDPS      Z2, Z3, Z3;      \ // r = (a − n) + e
	EXPPOLY512;                  \
	VSCALEFPS.Z Z6, Z7, K3, Z7      // p·2ⁿ

// SUM512(Z, Y) adds the 16 floats of Z (Y its low half), as float64, into Z14
// (low 8) and Z13 (high 8).
#define SUM512(Z, Y) \
	VCVTPS2PD     Y, Z8;     \
	VEXTRACTF32X8 $1, Z, Y9; \
	VCVTPS2PD     Y9, Z9;     \
	VADDPD        Z8, Z14, Z14; \
	VADDPD        Z9, Z13, Z13

// HSUM512 leaves the sum of Z14's and Z13's lanes in X14.
#define HSUM512 \
	VADDPD        Z13, Z14, Z14; \
	VEXTRACTF64X4 $1, Z14, Y13;  \
	VADDPD        Y13, Y14, Y14; \
	VEXTRACTF128  $1, Y14, X13;  \
	VADDPD        X13, X14, X14; \
	VUNPCKHPD     X14, X14, X13; \
	VADDSD        X13, X14, X14

// func maxAVX512(x *float32, n int) float32
TEXT ·maxAVX512(SB), NOSPLIT, $0-20
	MOVQ    x+0(FP), SI
	MOVQ    n+8(FP), CX
	SHRQ    $4, CX
	VMOVUPS (SI), Z0
	VCMPPS  $3, Z0, Z0, K1 // unordered: NaN lanes
	ADDQ    $64, SI
	DECQ    CX
	JZ      reduce

loop:
	VMOVUPS (SI), Z1
	VMAXPS  Z1, Z0, Z0
	VCMPPS  $3, Z1, Z1, K2
	KORW    K2, K1, K1
	ADDQ    $64, SI
	DECQ    CX
	JNZ     loop

reduce:
	KORTESTW      K1, K1
	JNZ           nan
	VEXTRACTF32X8 $1, Z0, Y1
	VMAXPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VMAXPS        X1, X0, X0
	VPERMILPS     $0x4e, X0, X1
	VMAXPS        X1, X0, X0
	VPERMILPS     $0xb1, X0, X1
	VMAXSS        X1, X0, X0
	VZEROUPPER
	MOVSS         X0, ret+16(FP)
	RET

nan:
	VZEROUPPER
	MOVL $0x7fc00000, ret+16(FP)
	RET

// func expSumAVX512(dst, x, pf *float32, n int, tab *expTable, scale, shift float32) float64
// dst may be nil (only the sum); scale = 1 takes loops without the product.
// The sum adds the results of 4 vectors in float32 per lane (a partial sum
// of 4 terms, at most 3 roundings of 2⁻²⁴), then the partials in float64:
// converting every vector to float64 cost a third of the loop's time.
// pf advances with x and is prefetched into L2 (PREFETCHT1) one line per
// iteration: the next row of a softmax, loaded while this one computes.
TEXT ·expSumAVX512(SB), NOSPLIT, $0-56
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         pf+16(FP), R9
	MOVQ         n+24(FP), CX
	MOVQ         tab+32(FP), R8
	VBROADCASTSS scale+40(FP), Z31
	VBROADCASTSS shift+44(FP), Z30
	VPXORD       Z29, Z29, Z29
	VSUBPS       Z30, Z29, Z29
	LOADEXP512
	VPXORQ       Z14, Z14, Z14
	VPXORQ       Z13, Z13, Z13
	SHRQ         $4, CX
	MOVQ         CX, R10
	ANDQ         $3, R10 // single vectors after the groups of 4
	SHRQ         $2, CX  // groups of 4 vectors
	MOVL         scale+40(FP), AX
	CMPL         AX, $0x3f800000 // scale == 1
	JEQ          unitsel
	TESTQ        DI, DI
	JZ           scalenostore
	JMP          scale

unitsel:
	TESTQ        DI, DI
	JZ           unitnostore
	JMP          unit

scale:
	TESTQ CX, CX
	JZ    scale1

scale4:
	VMOVUPS    (SI), Z0
	PREFETCHT1 (R9)
	ARGSCALE512
	EXPCORE512
	VMOVUPS    Z7, (DI)
	VMOVAPS    Z7, Z12
	VMOVUPS    64(SI), Z0
	PREFETCHT1 64(R9)
	ARGSCALE512
	EXPCORE512
	VMOVUPS    Z7, 64(DI)
	VADDPS     Z7, Z12, Z12
	VMOVUPS    128(SI), Z0
	PREFETCHT1 128(R9)
	ARGSCALE512
	EXPCORE512
	VMOVUPS    Z7, 128(DI)
	VADDPS     Z7, Z12, Z12
	VMOVUPS    192(SI), Z0
	PREFETCHT1 192(R9)
	ARGSCALE512
	EXPCORE512
	VMOVUPS    Z7, 192(DI)
	VADDPS     Z7, Z12, Z12
	SUM512(Z12, Y12)
	ADDQ       $256, SI
	ADDQ       $256, DI
	ADDQ       $256, R9
	DECQ       CX
	JNZ        scale4

scale1:
	TESTQ R10, R10
	JZ    done

scale1loop:
	VMOVUPS    (SI), Z0
	PREFETCHT1 (R9)
	ARGSCALE512
	EXPCORE512
	VMOVUPS    Z7, (DI)
	SUM512(Z7, Y7)
	ADDQ       $64, SI
	ADDQ       $64, DI
	ADDQ       $64, R9
	DECQ       R10
	JNZ        scale1loop
	JMP        done

scalenostore:
	TESTQ CX, CX
	JZ    scalenostore1

scalenostore4:
	VMOVUPS    (SI), Z0
	PREFETCHT1 (R9)
	ARGSCALE512
	EXPCORE512
	VMOVAPS    Z7, Z12
	VMOVUPS    64(SI), Z0
	PREFETCHT1 64(R9)
	ARGSCALE512
	EXPCORE512
	VADDPS     Z7, Z12, Z12
	VMOVUPS    128(SI), Z0
	PREFETCHT1 128(R9)
	ARGSCALE512
	EXPCORE512
	VADDPS     Z7, Z12, Z12
	VMOVUPS    192(SI), Z0
	PREFETCHT1 192(R9)
	ARGSCALE512
	EXPCORE512
	VADDPS     Z7, Z12, Z12
	SUM512(Z12, Y12)
	ADDQ       $256, SI
	ADDQ       $256, R9
	DECQ       CX
	JNZ        scalenostore4

scalenostore1:
	TESTQ R10, R10
	JZ    done

scalenostore1loop:
	VMOVUPS    (SI), Z0
	PREFETCHT1 (R9)
	ARGSCALE512
	EXPCORE512
	SUM512(Z7, Y7)
	ADDQ       $64, SI
	ADDQ       $64, R9
	DECQ       R10
	JNZ        scalenostore1loop
	JMP        done

unit:
	TESTQ CX, CX
	JZ    unit1

unit4:
	VMOVUPS    (SI), Z0
	PREFETCHT1 (R9)
	ARGSHIFT512
	EXPCORE512
	VMOVUPS    Z7, (DI)
	VMOVAPS    Z7, Z12
	VMOVUPS    64(SI), Z0
	PREFETCHT1 64(R9)
	ARGSHIFT512
	EXPCORE512
	VMOVUPS    Z7, 64(DI)
	VADDPS     Z7, Z12, Z12
	VMOVUPS    128(SI), Z0
	PREFETCHT1 128(R9)
	ARGSHIFT512
	EXPCORE512
	VMOVUPS    Z7, 128(DI)
	VADDPS     Z7, Z12, Z12
	VMOVUPS    192(SI), Z0
	PREFETCHT1 192(R9)
	ARGSHIFT512
	EXPCORE512
	VMOVUPS    Z7, 192(DI)
	VADDPS     Z7, Z12, Z12
	SUM512(Z12, Y12)
	ADDQ       $256, SI
	ADDQ       $256, DI
	ADDQ       $256, R9
	DECQ       CX
	JNZ        unit4

unit1:
	TESTQ R10, R10
	JZ    done

unit1loop:
	VMOVUPS    (SI), Z0
	PREFETCHT1 (R9)
	ARGSHIFT512
	EXPCORE512
	VMOVUPS    Z7, (DI)
	SUM512(Z7, Y7)
	ADDQ       $64, SI
	ADDQ       $64, DI
	ADDQ       $64, R9
	DECQ       R10
	JNZ        unit1loop
	JMP        done

unitnostore:
	TESTQ CX, CX
	JZ    unitnostore1

unitnostore4:
	VMOVUPS    (SI), Z0
	PREFETCHT1 (R9)
	ARGSHIFT512
	EXPCORE512
	VMOVAPS    Z7, Z12
	VMOVUPS    64(SI), Z0
	PREFETCHT1 64(R9)
	ARGSHIFT512
	EXPCORE512
	VADDPS     Z7, Z12, Z12
	VMOVUPS    128(SI), Z0
	PREFETCHT1 128(R9)
	ARGSHIFT512
	EXPCORE512
	VADDPS     Z7, Z12, Z12
	VMOVUPS    192(SI), Z0
	PREFETCHT1 192(R9)
	ARGSHIFT512
	EXPCORE512
	VADDPS     Z7, Z12, Z12
	SUM512(Z12, Y12)
	ADDQ       $256, SI
	ADDQ       $256, R9
	DECQ       CX
	JNZ        unitnostore4

unitnostore1:
	TESTQ R10, R10
	JZ    done

unitnostore1loop:
	VMOVUPS    (SI), Z0
	PREFETCHT1 (R9)
	ARGSHIFT512
	EXPCORE512
	SUM512(Z7, Y7)
	ADDQ       $64, SI
	ADDQ       $64, R9
	DECQ       R10
	JNZ        unitnostore1loop
	JMP        done

done:
	HSUM512
	VZEROUPPER
	MOVSD X14, ret+48(FP)
	RET

// func expShiftsAVX512(dst, x, hi, lo *float32, n int, tab *expTable)
TEXT ·expShiftsAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ hi+16(FP), DX
	MOVQ lo+24(FP), BX
	MOVQ n+32(FP), CX
	MOVQ tab+40(FP), R8
	LOADEXP512
	SHRQ $4, CX

loop:
	VMOVUPS (SI), Z0
	VMOVUPS (DX), Z10
	VMOVUPS (BX), Z11
	ARGVEC512
	EXPCORE512
	VMOVUPS Z7, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, BX
	ADDQ    $64, DI
	DECQ    CX
	JNZ     loop
	VZEROUPPER
	RET

// func sumAVX512(x *float32, n int) float64
TEXT ·sumAVX512(SB), NOSPLIT, $0-24
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	SHRQ   $4, CX
	VPXORQ Z14, Z14, Z14
	VPXORQ Z13, Z13, Z13

loop:
	VCVTPS2PD (SI), Z0
	VCVTPS2PD 32(SI), Z1
	VADDPD    Z0, Z14, Z14
	VADDPD    Z1, Z13, Z13
	ADDQ      $64, SI
	DECQ      CX
	JNZ       loop
	HSUM512
	VZEROUPPER
	MOVSD     X14, ret+16(FP)
	RET

// func dotAVX512(x, y *float32, n int) float64
TEXT ·dotAVX512(SB), NOSPLIT, $0-32
	MOVQ   x+0(FP), SI
	MOVQ   y+8(FP), DI
	MOVQ   n+16(FP), CX
	SHRQ   $4, CX
	VPXORQ Z14, Z14, Z14
	VPXORQ Z13, Z13, Z13

loop:
	VCVTPS2PD   (SI), Z0
	VCVTPS2PD   32(SI), Z1
	VCVTPS2PD   (DI), Z2
	VCVTPS2PD   32(DI), Z3
	VFMADD231PD Z2, Z0, Z14
	VFMADD231PD Z3, Z1, Z13
	ADDQ        $64, SI
	ADDQ        $64, DI
	DECQ        CX
	JNZ         loop
	HSUM512
	VZEROUPPER
	MOVSD       X14, ret+24(FP)
	RET

// func scaleAVX512(x *float32, n int, c float32)
TEXT ·scaleAVX512(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS c+16(FP), Z31
	SHRQ         $4, CX

loop:
	VMULPS  (SI), Z31, Z0
	VMOVUPS Z0, (SI)
	ADDQ    $64, SI
	DECQ    CX
	JNZ     loop
	VZEROUPPER
	RET

// func mulDiffAVX512(dst, p, q *float32, n int, c float32)
TEXT ·mulDiffAVX512(SB), NOSPLIT, $0-36
	MOVQ         dst+0(FP), DI
	MOVQ         p+8(FP), SI
	MOVQ         q+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSS c+32(FP), Z31
	SHRQ         $4, CX

loop:
	VMOVUPS (DX), Z0
	VSUBPS  Z31, Z0, Z0
	VMULPS  (SI), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, DI
	DECQ    CX
	JNZ     loop
	VZEROUPPER
	RET

// func mulDiffsAVX512(dst, p, q, c *float32, n int)
TEXT ·mulDiffsAVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ q+16(FP), DX
	MOVQ c+24(FP), BX
	MOVQ n+32(FP), CX
	SHRQ $4, CX

loop:
	VMOVUPS (DX), Z0
	VSUBPS  (BX), Z0, Z0
	VMULPS  (SI), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, BX
	ADDQ    $64, DI
	DECQ    CX
	JNZ     loop
	VZEROUPPER
	RET

// func subScaledAVX512(dst, y, x *float32, n int, c float32)
TEXT ·subScaledAVX512(SB), NOSPLIT, $0-36
	MOVQ         dst+0(FP), DI
	MOVQ         y+8(FP), DX
	MOVQ         x+16(FP), SI
	MOVQ         n+24(FP), CX
	VBROADCASTSS c+32(FP), Z31
	SHRQ         $4, CX

loop:
	VMOVUPS      (DX), Z0
	VFNMADD231PS (SI), Z31, Z0 // y − c·x
	VMOVUPS      Z0, (DI)
	ADDQ         $64, SI
	ADDQ         $64, DX
	ADDQ         $64, DI
	DECQ         CX
	JNZ          loop
	VZEROUPPER
	RET

// func subShiftAVX512(dst, x *float32, n int, a, b float64)
TEXT ·subShiftAVX512(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSD a+24(FP), Z30
	VBROADCASTSD b+32(FP), Z29
	SHRQ         $4, CX

loop:
	VCVTPS2PD (SI), Z0
	VCVTPS2PD 32(SI), Z1
	VSUBPD    Z30, Z0, Z0
	VSUBPD    Z30, Z1, Z1
	VSUBPD    Z29, Z0, Z0
	VSUBPD    Z29, Z1, Z1
	VCVTPD2PS Z0, Y0
	VCVTPD2PS Z1, Y1
	VMOVUPS   Y0, (DI)
	VMOVUPS   Y1, 32(DI)
	ADDQ      $64, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       loop
	VZEROUPPER
	RET

// func expSumStreamAVX512(dst, x, pf, out, prev *float32, n int, tab *expTable, shift, c float32) float64
// expSumAVX512 for scale 1 with dst, fused with streamScaledAVX512(out, prev, n, c):
// each iteration also writes one vector of out = c·prev with a non-temporal
// store, so that a softmax writes row o while it computes row o + 1. out must
// be 64-byte aligned (32 for AVX2).
TEXT ·expSumStreamAVX512(SB), NOSPLIT, $0-72
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         pf+16(FP), R9
	MOVQ         out+24(FP), R11
	MOVQ         prev+32(FP), R12
	MOVQ         n+40(FP), CX
	MOVQ         tab+48(FP), R8
	VBROADCASTSS shift+56(FP), Z30
	VPXORD       Z29, Z29, Z29
	VSUBPS       Z30, Z29, Z29
	VBROADCASTSS c+60(FP), Z31
	LOADEXP512
	VPXORQ       Z14, Z14, Z14
	VPXORQ       Z13, Z13, Z13
	SHRQ         $4, CX
	MOVQ         CX, R10
	ANDQ         $3, R10
	SHRQ         $2, CX
	TESTQ        CX, CX
	JZ           single

group:
	VMOVUPS    (SI), Z0
	PREFETCHT1 (R9)
	ARGSHIFT512
	EXPCORE512
	VMOVUPS    Z7, (DI)
	VMOVAPS    Z7, Z12
	VMULPS     (R12), Z31, Z10
	VMOVNTPS   Z10, (R11)
	VMOVUPS    64(SI), Z0
	PREFETCHT1 64(R9)
	ARGSHIFT512
	EXPCORE512
	VMOVUPS    Z7, 64(DI)
	VADDPS     Z7, Z12, Z12
	VMULPS     64(R12), Z31, Z10
	VMOVNTPS   Z10, 64(R11)
	VMOVUPS    128(SI), Z0
	PREFETCHT1 128(R9)
	ARGSHIFT512
	EXPCORE512
	VMOVUPS    Z7, 128(DI)
	VADDPS     Z7, Z12, Z12
	VMULPS     128(R12), Z31, Z10
	VMOVNTPS   Z10, 128(R11)
	VMOVUPS    192(SI), Z0
	PREFETCHT1 192(R9)
	ARGSHIFT512
	EXPCORE512
	VMOVUPS    Z7, 192(DI)
	VADDPS     Z7, Z12, Z12
	VMULPS     192(R12), Z31, Z10
	VMOVNTPS   Z10, 192(R11)
	SUM512(Z12, Y12)
	ADDQ       $256, SI
	ADDQ       $256, DI
	ADDQ       $256, R9
	ADDQ       $256, R11
	ADDQ       $256, R12
	DECQ       CX
	JNZ        group

single:
	TESTQ R10, R10
	JZ    done

singleloop:
	VMOVUPS    (SI), Z0
	PREFETCHT1 (R9)
	ARGSHIFT512
	EXPCORE512
	VMOVUPS    Z7, (DI)
	VMULPS     (R12), Z31, Z10
	VMOVNTPS   Z10, (R11)
	SUM512(Z7, Y7)
	ADDQ       $64, SI
	ADDQ       $64, DI
	ADDQ       $64, R9
	ADDQ       $64, R11
	ADDQ       $64, R12
	DECQ       R10
	JNZ        singleloop

done:
	SFENCE
	HSUM512
	VZEROUPPER
	MOVSD X14, ret+64(FP)
	RET

// ---------------------------------------------------------------- AVX2

// ARGSCALE256: Y0 = x; Y15 = scale, Y14 = shift, Y13 = −shift. Out: Y3 = a, Y2 = e
// (see ARGSCALE512).
#define ARGSCALE256 \
	VMULPS      Y0, Y15, Y1; \
	VMOVAPS     Y1, Y2;      \
	VFMSUB231PS Y0, Y15, Y2; \
	VSUBPS      Y14, Y1, Y3; \
	VSUBPS      Y1, Y3, Y4;  \
	VSUBPS      Y4, Y3, Y5;  \
	VSUBPS      Y5, Y1, Y5;  \
	VSUBPS      Y4, Y13, Y4; \
	VADDPS      Y4, Y5, Y5;  \
	VADDPS      Y5, Y2, Y2

// ARGSHIFT256: ARGSHIFT512 in YMM (Y14 = shift, Y13 = −shift).
#define ARGSHIFT256 \
	VSUBPS Y14, Y0, Y3; \
	VSUBPS Y0, Y3, Y4;  \
	VSUBPS Y4, Y3, Y5;  \
	VSUBPS Y5, Y0, Y5;  \
	VSUBPS Y4, Y13, Y4; \
	VADDPS Y4, Y5, Y2

// ARGVEC256: Y0 = x, Y10 = hi, Y11 = lo. Out: Y3 = a, Y2 = e (see ARGVEC512).
#define ARGVEC256 \
	VSUBPS Y10, Y0, Y3; \
	VSUBPS Y0, Y3, Y4;  \
	VSUBPS Y4, Y3, Y5;  \
	VSUBPS Y5, Y0, Y5;  \
	VADDPS Y4, Y10, Y4; \
	VSUBPS Y4, Y5, Y2;  \
	VSUBPS Y11, Y2, Y2

// EXPCORE256: Y3 = a, Y2 = e, the table at R8. Out: Y7 = base^(a+e).
// Clobbers Y2, Y3, Y6, Y8, Y9.
#define EXPCORE256 \
	VMOVUPS      T_LO(R8), Y6;   \
	VMAXPS       Y3, Y6, Y3;     \ // a = max(lo, a), NaN kept
	VMOVUPS      T_HI(R8), Y6;   \
	VMINPS       Y3, Y6, Y3;     \ // a = min(hi, a)
	VMAXPS       T_ELO(R8), Y2, Y2; \ // NaN → −1
	VMINPS       T_EHI(R8), Y2, Y2; \
	VMULPS       T_LOG2BASE(R8), Y3, Y6; \
	VROUNDPS     $0, Y6, Y6;     \ // n
	VFNMADD231PS T_C1(R8), Y6, Y3; \
	VFNMADD231PS T_C2(R8), Y6, Y2; \
	VADDPS       Y2, Y3, Y3;     \ // r
	VMOVUPS      T_Q6(R8), Y7;   \
	VFMADD213PS  T_Q5(R8), Y3, Y7; \
	VFMADD213PS  T_Q4(R8), Y3, Y7; \
	VFMADD213PS  T_Q3(R8), Y3, Y7; \
	VFMADD213PS  T_Q2(R8), Y3, Y7; \
	VFMADD213PS  T_Q1(R8), Y3, Y7; \
	VFMADD213PS  T_ONE(R8), Y3, Y7; \ // p
	VCVTPS2DQ    Y6, Y8;         \ // n as int32
	VPMAXSD      T_BMIN(R8), Y8, Y9; \
	VPMINSD      T_BMAX(R8), Y9, Y9; \ // b
	VPSUBD       Y9, Y8, Y8;     \ // n − b
	VPADDD       T_BIAS(R8), Y8, Y8; \
	VPSLLD       $23, Y8, Y8;    \ // 2^(n−b)
	VPADDD       T_BIAS(R8), Y9, Y9; \
	VPSLLD       $23, Y9, Y9;    \ // 2^b
	VMULPS       Y8, Y7, Y7;     \ // exact
	VMULPS       Y9, Y7, Y7

// SUM256(Y, X) adds the 8 floats of Y (X its low half), as float64, into Y12
// (low 4) and Y11 (high 4).
#define SUM256(Y, X) \
	VCVTPS2PD    X, Y8;     \
	VEXTRACTF128 $1, Y, X9; \
	VCVTPS2PD    X9, Y9;     \
	VADDPD       Y8, Y12, Y12; \
	VADDPD       Y9, Y11, Y11

// HSUM256 leaves the sum of Y12's and Y11's lanes in X12.
#define HSUM256 \
	VADDPD       Y11, Y12, Y12; \
	VEXTRACTF128 $1, Y12, X11;  \
	VADDPD       X11, X12, X12; \
	VUNPCKHPD    X12, X12, X11; \
	VADDSD       X11, X12, X12

// func maxAVX2(x *float32, n int) float32
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ    x+0(FP), SI
	MOVQ    n+8(FP), CX
	SHRQ    $3, CX
	VMOVUPS (SI), Y0
	VCMPPS  $3, Y0, Y0, Y2 // unordered: NaN lanes
	ADDQ    $32, SI
	DECQ    CX
	JZ      reduce

loop:
	VMOVUPS (SI), Y1
	VMAXPS  Y1, Y0, Y0
	VCMPPS  $3, Y1, Y1, Y3
	VORPS   Y3, Y2, Y2
	ADDQ    $32, SI
	DECQ    CX
	JNZ     loop

reduce:
	VMOVMSKPS    Y2, AX
	TESTL        AX, AX
	JNZ          nan
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXSS       X1, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+16(FP)
	RET

nan:
	VZEROUPPER
	MOVL $0x7fc00000, ret+16(FP)
	RET

// func expSumAVX2(dst, x, pf *float32, n int, tab *expTable, scale, shift float32) float64
TEXT ·expSumAVX2(SB), NOSPLIT, $0-56
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         pf+16(FP), R9
	MOVQ         n+24(FP), CX
	MOVQ         tab+32(FP), R8
	VBROADCASTSS scale+40(FP), Y15
	VBROADCASTSS shift+44(FP), Y14
	VXORPS       Y13, Y13, Y13
	VSUBPS       Y14, Y13, Y13
	VXORPD       Y12, Y12, Y12
	VXORPD       Y11, Y11, Y11
	SHRQ         $3, CX
	MOVQ         CX, R10
	ANDQ         $3, R10 // single vectors after the groups of 4
	SHRQ         $2, CX  // groups of 4 vectors
	MOVL         scale+40(FP), AX
	CMPL         AX, $0x3f800000 // scale == 1
	JEQ          unitsel
	TESTQ        DI, DI
	JZ           scalenostore
	JMP          scale

unitsel:
	TESTQ        DI, DI
	JZ           unitnostore
	JMP          unit

scale:
	TESTQ CX, CX
	JZ    scale1

scale4:
	VMOVUPS    (SI), Y0
	PREFETCHT1 (R9)
	ARGSCALE256
	EXPCORE256
	VMOVUPS    Y7, (DI)
	VMOVAPS    Y7, Y10
	VMOVUPS    32(SI), Y0
	PREFETCHT1 32(R9)
	ARGSCALE256
	EXPCORE256
	VMOVUPS    Y7, 32(DI)
	VADDPS     Y7, Y10, Y10
	VMOVUPS    64(SI), Y0
	PREFETCHT1 64(R9)
	ARGSCALE256
	EXPCORE256
	VMOVUPS    Y7, 64(DI)
	VADDPS     Y7, Y10, Y10
	VMOVUPS    96(SI), Y0
	PREFETCHT1 96(R9)
	ARGSCALE256
	EXPCORE256
	VMOVUPS    Y7, 96(DI)
	VADDPS     Y7, Y10, Y10
	SUM256(Y10, X10)
	ADDQ       $128, SI
	ADDQ       $128, DI
	ADDQ       $128, R9
	DECQ       CX
	JNZ        scale4

scale1:
	TESTQ R10, R10
	JZ    done

scale1loop:
	VMOVUPS    (SI), Y0
	PREFETCHT1 (R9)
	ARGSCALE256
	EXPCORE256
	VMOVUPS    Y7, (DI)
	SUM256(Y7, X7)
	ADDQ       $32, SI
	ADDQ       $32, DI
	ADDQ       $32, R9
	DECQ       R10
	JNZ        scale1loop
	JMP        done

scalenostore:
	TESTQ CX, CX
	JZ    scalenostore1

scalenostore4:
	VMOVUPS    (SI), Y0
	PREFETCHT1 (R9)
	ARGSCALE256
	EXPCORE256
	VMOVAPS    Y7, Y10
	VMOVUPS    32(SI), Y0
	PREFETCHT1 32(R9)
	ARGSCALE256
	EXPCORE256
	VADDPS     Y7, Y10, Y10
	VMOVUPS    64(SI), Y0
	PREFETCHT1 64(R9)
	ARGSCALE256
	EXPCORE256
	VADDPS     Y7, Y10, Y10
	VMOVUPS    96(SI), Y0
	PREFETCHT1 96(R9)
	ARGSCALE256
	EXPCORE256
	VADDPS     Y7, Y10, Y10
	SUM256(Y10, X10)
	ADDQ       $128, SI
	ADDQ       $128, R9
	DECQ       CX
	JNZ        scalenostore4

scalenostore1:
	TESTQ R10, R10
	JZ    done

scalenostore1loop:
	VMOVUPS    (SI), Y0
	PREFETCHT1 (R9)
	ARGSCALE256
	EXPCORE256
	SUM256(Y7, X7)
	ADDQ       $32, SI
	ADDQ       $32, R9
	DECQ       R10
	JNZ        scalenostore1loop
	JMP        done

unit:
	TESTQ CX, CX
	JZ    unit1

unit4:
	VMOVUPS    (SI), Y0
	PREFETCHT1 (R9)
	ARGSHIFT256
	EXPCORE256
	VMOVUPS    Y7, (DI)
	VMOVAPS    Y7, Y10
	VMOVUPS    32(SI), Y0
	PREFETCHT1 32(R9)
	ARGSHIFT256
	EXPCORE256
	VMOVUPS    Y7, 32(DI)
	VADDPS     Y7, Y10, Y10
	VMOVUPS    64(SI), Y0
	PREFETCHT1 64(R9)
	ARGSHIFT256
	EXPCORE256
	VMOVUPS    Y7, 64(DI)
	VADDPS     Y7, Y10, Y10
	VMOVUPS    96(SI), Y0
	PREFETCHT1 96(R9)
	ARGSHIFT256
	EXPCORE256
	VMOVUPS    Y7, 96(DI)
	VADDPS     Y7, Y10, Y10
	SUM256(Y10, X10)
	ADDQ       $128, SI
	ADDQ       $128, DI
	ADDQ       $128, R9
	DECQ       CX
	JNZ        unit4

unit1:
	TESTQ R10, R10
	JZ    done

unit1loop:
	VMOVUPS    (SI), Y0
	PREFETCHT1 (R9)
	ARGSHIFT256
	EXPCORE256
	VMOVUPS    Y7, (DI)
	SUM256(Y7, X7)
	ADDQ       $32, SI
	ADDQ       $32, DI
	ADDQ       $32, R9
	DECQ       R10
	JNZ        unit1loop
	JMP        done

unitnostore:
	TESTQ CX, CX
	JZ    unitnostore1

unitnostore4:
	VMOVUPS    (SI), Y0
	PREFETCHT1 (R9)
	ARGSHIFT256
	EXPCORE256
	VMOVAPS    Y7, Y10
	VMOVUPS    32(SI), Y0
	PREFETCHT1 32(R9)
	ARGSHIFT256
	EXPCORE256
	VADDPS     Y7, Y10, Y10
	VMOVUPS    64(SI), Y0
	PREFETCHT1 64(R9)
	ARGSHIFT256
	EXPCORE256
	VADDPS     Y7, Y10, Y10
	VMOVUPS    96(SI), Y0
	PREFETCHT1 96(R9)
	ARGSHIFT256
	EXPCORE256
	VADDPS     Y7, Y10, Y10
	SUM256(Y10, X10)
	ADDQ       $128, SI
	ADDQ       $128, R9
	DECQ       CX
	JNZ        unitnostore4

unitnostore1:
	TESTQ R10, R10
	JZ    done

unitnostore1loop:
	VMOVUPS    (SI), Y0
	PREFETCHT1 (R9)
	ARGSHIFT256
	EXPCORE256
	SUM256(Y7, X7)
	ADDQ       $32, SI
	ADDQ       $32, R9
	DECQ       R10
	JNZ        unitnostore1loop
	JMP        done

done:
	HSUM256
	VZEROUPPER
	MOVSD X12, ret+48(FP)
	RET

// func expShiftsAVX2(dst, x, hi, lo *float32, n int, tab *expTable)
TEXT ·expShiftsAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ hi+16(FP), DX
	MOVQ lo+24(FP), BX
	MOVQ n+32(FP), CX
	MOVQ tab+40(FP), R8
	SHRQ $3, CX

loop:
	VMOVUPS (SI), Y0
	VMOVUPS (DX), Y10
	VMOVUPS (BX), Y11
	ARGVEC256
	EXPCORE256
	VMOVUPS Y7, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, BX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop
	VZEROUPPER
	RET

// func sumAVX2(x *float32, n int) float64
TEXT ·sumAVX2(SB), NOSPLIT, $0-24
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	SHRQ   $3, CX
	VXORPD Y12, Y12, Y12
	VXORPD Y11, Y11, Y11

loop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y1
	VADDPD    Y0, Y12, Y12
	VADDPD    Y1, Y11, Y11
	ADDQ      $32, SI
	DECQ      CX
	JNZ       loop
	HSUM256
	VZEROUPPER
	MOVSD     X12, ret+16(FP)
	RET

// func dotAVX2(x, y *float32, n int) float64
TEXT ·dotAVX2(SB), NOSPLIT, $0-32
	MOVQ   x+0(FP), SI
	MOVQ   y+8(FP), DI
	MOVQ   n+16(FP), CX
	SHRQ   $3, CX
	VXORPD Y12, Y12, Y12
	VXORPD Y11, Y11, Y11

loop:
	VCVTPS2PD   (SI), Y0
	VCVTPS2PD   16(SI), Y1
	VCVTPS2PD   (DI), Y2
	VCVTPS2PD   16(DI), Y3
	VFMADD231PD Y2, Y0, Y12
	VFMADD231PD Y3, Y1, Y11
	ADDQ        $32, SI
	ADDQ        $32, DI
	DECQ        CX
	JNZ         loop
	HSUM256
	VZEROUPPER
	MOVSD       X12, ret+24(FP)
	RET

// func scaleAVX2(x *float32, n int, c float32)
TEXT ·scaleAVX2(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS c+16(FP), Y15
	SHRQ         $3, CX

loop:
	VMULPS  (SI), Y15, Y0
	VMOVUPS Y0, (SI)
	ADDQ    $32, SI
	DECQ    CX
	JNZ     loop
	VZEROUPPER
	RET

// func mulDiffAVX2(dst, p, q *float32, n int, c float32)
TEXT ·mulDiffAVX2(SB), NOSPLIT, $0-36
	MOVQ         dst+0(FP), DI
	MOVQ         p+8(FP), SI
	MOVQ         q+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSS c+32(FP), Y15
	SHRQ         $3, CX

loop:
	VMOVUPS (DX), Y0
	VSUBPS  Y15, Y0, Y0
	VMULPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop
	VZEROUPPER
	RET

// func mulDiffsAVX2(dst, p, q, c *float32, n int)
TEXT ·mulDiffsAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ q+16(FP), DX
	MOVQ c+24(FP), BX
	MOVQ n+32(FP), CX
	SHRQ $3, CX

loop:
	VMOVUPS (DX), Y0
	VSUBPS  (BX), Y0, Y0
	VMULPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, BX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop
	VZEROUPPER
	RET

// func subScaledAVX2(dst, y, x *float32, n int, c float32)
TEXT ·subScaledAVX2(SB), NOSPLIT, $0-36
	MOVQ         dst+0(FP), DI
	MOVQ         y+8(FP), DX
	MOVQ         x+16(FP), SI
	MOVQ         n+24(FP), CX
	VBROADCASTSS c+32(FP), Y15
	SHRQ         $3, CX

loop:
	VMOVUPS      (DX), Y0
	VFNMADD231PS (SI), Y15, Y0 // y − c·x
	VMOVUPS      Y0, (DI)
	ADDQ         $32, SI
	ADDQ         $32, DX
	ADDQ         $32, DI
	DECQ         CX
	JNZ          loop
	VZEROUPPER
	RET

// func subShiftAVX2(dst, x *float32, n int, a, b float64)
TEXT ·subShiftAVX2(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSD a+24(FP), Y14
	VBROADCASTSD b+32(FP), Y13
	SHRQ         $3, CX

loop:
	VCVTPS2PD  (SI), Y0
	VCVTPS2PD  16(SI), Y1
	VSUBPD     Y14, Y0, Y0
	VSUBPD     Y14, Y1, Y1
	VSUBPD     Y13, Y0, Y0
	VSUBPD     Y13, Y1, Y1
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VMOVUPS    X0, (DI)
	VMOVUPS    X1, 16(DI)
	ADDQ       $32, SI
	ADDQ       $32, DI
	DECQ       CX
	JNZ        loop
	VZEROUPPER
	RET

// func streamScaledAVX512(dst, x *float32, n int, c float32)
// dst must be 64-byte aligned: non-temporal stores of whole cache lines.
TEXT ·streamScaledAVX512(SB), NOSPLIT, $0-28
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS c+24(FP), Z31
	SHRQ         $4, CX

loop:
	VMULPS   (SI), Z31, Z0
	VMOVNTPS Z0, (DI)
	ADDQ     $64, SI
	ADDQ     $64, DI
	DECQ     CX
	JNZ      loop
	SFENCE
	VZEROUPPER
	RET

// func streamScaledAVX2(dst, x *float32, n int, c float32)
// dst must be 32-byte aligned.
TEXT ·streamScaledAVX2(SB), NOSPLIT, $0-28
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS c+24(FP), Y15
	SHRQ         $3, CX

loop:
	VMULPS   (SI), Y15, Y0
	VMOVNTPS Y0, (DI)
	ADDQ     $32, SI
	ADDQ     $32, DI
	DECQ     CX
	JNZ      loop
	SFENCE
	VZEROUPPER
	RET

// func expSumStreamAVX2(dst, x, pf, out, prev *float32, n int, tab *expTable, shift, c float32) float64
TEXT ·expSumStreamAVX2(SB), NOSPLIT, $0-72
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         pf+16(FP), R9
	MOVQ         out+24(FP), R11
	MOVQ         prev+32(FP), R12
	MOVQ         n+40(FP), CX
	MOVQ         tab+48(FP), R8
	VBROADCASTSS shift+56(FP), Y14
	VXORPS       Y13, Y13, Y13
	VSUBPS       Y14, Y13, Y13
	VBROADCASTSS c+60(FP), Y15
	VXORPD       Y12, Y12, Y12
	VXORPD       Y11, Y11, Y11
	SHRQ         $3, CX
	MOVQ         CX, R10
	ANDQ         $3, R10
	SHRQ         $2, CX
	TESTQ        CX, CX
	JZ           single

group:
	VMOVUPS    (SI), Y0
	PREFETCHT1 (R9)
	ARGSHIFT256
	EXPCORE256
	VMOVUPS    Y7, (DI)
	VMOVAPS    Y7, Y10
	VMULPS     (R12), Y15, Y1
	VMOVNTPS   Y1, (R11)
	VMOVUPS    32(SI), Y0
	PREFETCHT1 32(R9)
	ARGSHIFT256
	EXPCORE256
	VMOVUPS    Y7, 32(DI)
	VADDPS     Y7, Y10, Y10
	VMULPS     32(R12), Y15, Y1
	VMOVNTPS   Y1, 32(R11)
	VMOVUPS    64(SI), Y0
	PREFETCHT1 64(R9)
	ARGSHIFT256
	EXPCORE256
	VMOVUPS    Y7, 64(DI)
	VADDPS     Y7, Y10, Y10
	VMULPS     64(R12), Y15, Y1
	VMOVNTPS   Y1, 64(R11)
	VMOVUPS    96(SI), Y0
	PREFETCHT1 96(R9)
	ARGSHIFT256
	EXPCORE256
	VMOVUPS    Y7, 96(DI)
	VADDPS     Y7, Y10, Y10
	VMULPS     96(R12), Y15, Y1
	VMOVNTPS   Y1, 96(R11)
	SUM256(Y10, X10)
	ADDQ       $128, SI
	ADDQ       $128, DI
	ADDQ       $128, R9
	ADDQ       $128, R11
	ADDQ       $128, R12
	DECQ       CX
	JNZ        group

single:
	TESTQ R10, R10
	JZ    done

singleloop:
	VMOVUPS    (SI), Y0
	PREFETCHT1 (R9)
	ARGSHIFT256
	EXPCORE256
	VMOVUPS    Y7, (DI)
	VMULPS     (R12), Y15, Y1
	VMOVNTPS   Y1, (R11)
	SUM256(Y7, X7)
	ADDQ       $32, SI
	ADDQ       $32, DI
	ADDQ       $32, R9
	ADDQ       $32, R11
	ADDQ       $32, R12
	DECQ       R10
	JNZ        singleloop

done:
	SFENCE
	HSUM256
	VZEROUPPER
	MOVSD X12, ret+64(FP)
	RET

// ---------------------------------------------------------------- tiles

// LANEMASK(REM, IOTA, T, K) sets K to the lanes l with l < REM (a count
// in a general register, any sign; IOTA holds the lane numbers 0…15 as
// int32, T is clobbered).
#define LANEMASK(REM, IOTA, T, K) \
	VPBROADCASTD REM, T; \
	VPCMPGTD     IOTA, T, K

// func onlineExp2RowsAVX512(s *float32, ld, rows, cols int, n *int, m *float32, sum *float64, tab *exp2Table16, iota *[16]int32)
// Per row r (see OnlineExp2Rows), v = n[r]: the maximum over the visible
// lanes (whole vectors straight from memory on two chains, the last
// partial one through a mask with −Inf in the hidden lanes), then
// 2^(s − m) over the visible vectors (EXP2TAB512: whole ones in groups of
// 4, two at a time interleaved, then one by one, then the partial one
// masked: its hidden lanes read m and are zeroed, its store stops at the
// row's end), then zeros over the row's remaining vectors. The rows are
// software-pipelined: the maximum of row r+1 is taken between the
// exponentials of row r and the horizontal sum that ends it, so that the
// dependent chains at a row's end (the maximum's reduction and broadcast,
// the sum's reduction) overlap the other row's independent work. A NaN among the visible scores is not tracked by the
// maximum (VMAXPS drops it or keeps it depending on the operand order) but
// gives NaN for its own entry and the row's sum; a NaN m[r] stays NaN. The
// sum adds up to 4 vectors per lane in float32, then in float64 (SUM512).
//
// Registers: SI the exp row, R14 its v, R12 &sum[r], DX the rows left;
// R8 the max row, CX its v, R11 &m[that row], R10 &n[the row after it];
// R13 = 0 only before the first row's exponentials.
TEXT ·onlineExp2RowsAVX512(SB), NOSPLIT, $0-72
	MOVQ         s+0(FP), SI
	MOVQ         ld+8(FP), BX
	SHLQ         $2, BX
	MOVQ         rows+16(FP), DX
	MOVQ         cols+24(FP), R9
	MOVQ         n+32(FP), R10
	MOVQ         m+40(FP), R11
	MOVQ         sum+48(FP), R12
	MOVQ         tab+56(FP), R8
	MOVQ         iota+64(FP), CX
	VMOVDQU32    (CX), Z10        // lane numbers
	LOADEXP2TAB512
	MOVL         $0xff800000, AX
	VPBROADCASTD AX, Z31 // −Inf
	MOVQ         SI, R8
	MOVQ         (R10), CX
	ADDQ         $8, R10
	XORQ         R13, R13
	JMP          omax

orow:
	XORQ  DI, DI
	LEAQ  64(DI), AX

oexp4:
	CMPQ    AX, R14
	JGT     oexp1
	VMOVUPS (SI)(DI*4), Z0
	VMOVUPS 64(SI)(DI*4), Z4
	EXP2TAB512_2
	VMOVUPS Z7, (SI)(DI*4)
	VMOVUPS Z23, 64(SI)(DI*4)
	VADDPS  Z23, Z7, Z12
	VMOVUPS 128(SI)(DI*4), Z0
	VMOVUPS 192(SI)(DI*4), Z4
	EXP2TAB512_2
	VMOVUPS Z7, 128(SI)(DI*4)
	VMOVUPS Z23, 192(SI)(DI*4)
	VADDPS  Z7, Z12, Z12
	VADDPS  Z23, Z12, Z12
	SUM512(Z12, Y12)
	MOVQ    AX, DI
	ADDQ    $64, AX
	JMP     oexp4

oexp1:
	VPXORQ Z12, Z12, Z12
	LEAQ   16(DI), AX

oexp1loop:
	CMPQ    AX, R14
	JGT     oexptail
	VMOVUPS (SI)(DI*4), Z0
	EXP2TAB512
	VMOVUPS Z7, (SI)(DI*4)
	VADDPS  Z7, Z12, Z12
	MOVQ    AX, DI
	ADDQ    $16, AX
	JMP     oexp1loop

oexptail:
	MOVQ    R14, AX
	SUBQ    DI, AX
	JLE     ozero
	LANEMASK(AX, Z10, Z11, K1)
	MOVQ    R9, AX
	SUBQ    DI, AX
	LANEMASK(AX, Z10, Z11, K2)
	VMOVAPS   Z30, Z0          // hidden lanes read m
	VMOVUPS   (SI)(DI*4), K1, Z0
	EXP2TAB512
	VMOVAPS.Z Z7, K1, Z7       // and give 0 (with a NaN m too)
	VMOVUPS   Z7, K2, (SI)(DI*4)
	VADDPS  Z7, Z12, Z12
	ADDQ    $16, DI

ozero:
	VPXORQ Z0, Z0, Z0

ozeroloop:
	CMPQ    DI, R9
	JGE     oexpdone
	MOVQ    R9, AX
	SUBQ    DI, AX
	LANEMASK(AX, Z10, Z11, K2)
	VMOVUPS Z0, K2, (SI)(DI*4)
	ADDQ    $16, DI
	JMP     ozeroloop

oexpdone:
	SUM512(Z12, Y12)
	CMPQ DX, $1
	JEQ  osum        // the last row: no maximum to take
	LEAQ (SI)(BX*1), R8
	MOVQ (R10), CX
	ADDQ $8, R10
	MOVQ $1, R13

omax:
	// The maximum of the row at R8 (CX visible entries), from m at R11.
	VBROADCASTSS (R11), Z1
	VMOVAPS      Z1, Z9
	XORQ         DI, DI
	LEAQ         32(DI), AX

omaxpair:
	CMPQ   AX, CX
	JGT    omaxone
	VMAXPS (R8)(DI*4), Z1, Z1
	VMAXPS 64(R8)(DI*4), Z9, Z9
	MOVQ   AX, DI
	ADDQ   $32, AX
	JMP    omaxpair

omaxone:
	VMAXPS Z9, Z1, Z1
	LEAQ   16(DI), AX
	CMPQ   AX, CX
	JGT    omaxtail
	VMAXPS (R8)(DI*4), Z1, Z1
	MOVQ   AX, DI

omaxtail:
	MOVQ    CX, AX
	SUBQ    DI, AX
	JLE     omaxdone
	LANEMASK(AX, Z10, Z11, K1)
	VMOVAPS Z31, Z0
	VMOVUPS (R8)(DI*4), K1, Z0
	VMAXPS  Z0, Z1, Z1

omaxdone:
	VEXTRACTF32X8 $1, Z1, Y2
	VMAXPS        Y2, Y1, Y1
	VEXTRACTF128  $1, Y1, X2
	VMAXPS        X2, X1, X1
	VPERMILPS     $0x4e, X1, X2
	VMAXPS        X2, X1, X1
	VPERMILPS     $0xb1, X1, X2
	VMAXSS        X2, X1, X1
	VMOVSS        (R11), X2
	VUCOMISS      X2, X2
	JPC           omaxset
	VMOVAPS       X2, X1           // m was NaN: it stays NaN

omaxset:
	VMOVSS       X1, (R11)
	ADDQ         $4, R11
	VBROADCASTSS X1, Z30          // the next exp row's shift
	MOVQ         CX, R14
	TESTQ        R13, R13
	JZ           onext

osum:
	// The row's sum (Z13, Z14), and on to the next row.
	HSUM512
	VMOVSD X14, (R12)
	ADDQ   $8, R12
	ADDQ   BX, SI
	DECQ   DX
	JZ     odone

onext:
	VPXORQ Z14, Z14, Z14
	VPXORQ Z13, Z13, Z13
	JMP    orow

odone:
	VZEROUPPER
	RET

// EXPDS512 computes one vector of Exp2MulDiffRows from Z0 = s, Z10 = hi,
// Z11 = lo, Z8 = dP, Z9 = D: Z7 = P = 2^((s − hi) − lo), Z8 = P·(dP − D).
// The argument is exact here (ARGVEC512's TwoSum, 19 instructions where
// EXPCORE512's 24 also clamp e and multiply by log₂ of the base): unlike
// the forward's (EXP2TAB512), rounding it moved TestGradientOracle's
// worst float32 fused/decomposed ratio from 0.83 to 1.04.
#define EXPDS512 \
	ARGVEC512;          \
	EXP2CORE2_512;      \
	VSUBPS Z9, Z8, Z8;  \
	VMULPS Z8, Z7, Z8

// MASKEDDS512 computes the vector of Exp2MulDiffRows at column R13 of the
// row (SI: p, DI: ds, R10: &first[r]) through masks: K2 the lanes inside
// the row (c < cols, R9), K1 those that also see the key (c ≥ first[r]).
// Lanes outside K2 are neither read nor written; lanes outside K1 get 0.
#define MASKEDDS512 \
	MOVQ      R9, AX;                  \
	SUBQ      R13, AX;                 \
	LANEMASK(AX, Z12, Z13, K2);        \
	MOVQ      (R10), AX;               \
	SUBQ      R13, AX;                 \
	LANEMASK(AX, Z12, Z13, K4);        \
	KANDNW    K2, K4, K1;              \
	VMOVUPS.Z (SI)(R13*4), K2, Z0;     \
	VMOVUPS.Z (R11)(R13*4), K2, Z10;   \
	VMOVUPS.Z (R12)(R13*4), K2, Z11;   \
	VMOVUPS.Z (DI)(R13*4), K2, Z8;     \
	VMOVUPS.Z (R14)(R13*4), K2, Z9;    \
	EXPDS512;                          \
	VMOVAPS.Z Z7, K1, Z7;              \
	VMOVAPS.Z Z8, K1, Z8;              \
	VMOVUPS   Z7, K2, (SI)(R13*4);     \
	VMOVUPS   Z8, K2, (DI)(R13*4)

// func exp2MulDiffRowsAVX512(p, ds *float32, ld, rows, cols int, first *int, hi, lo, delta *float32, tab *expTable, iota *[16]int32)
// Per row r (see Exp2MulDiffRows), f = first[r]: the vectors up to the
// first whole vector at or after f go through masks (K2 the lanes inside
// the row, K1 those that also see the key, c ≥ f; P and P·(dP − D) are
// computed on the whole vector and stored with the lanes outside K1
// zeroed), then the whole vectors inside the row without masks, then the
// row's partial last vector through masks again.
TEXT ·exp2MulDiffRowsAVX512(SB), NOSPLIT, $0-88
	MOVQ      p+0(FP), SI
	MOVQ      ds+8(FP), DI
	MOVQ      ld+16(FP), BX
	SHLQ      $2, BX
	MOVQ      rows+24(FP), DX
	MOVQ      cols+32(FP), R9
	MOVQ      first+40(FP), R10
	MOVQ      hi+48(FP), R11
	MOVQ      lo+56(FP), R12
	MOVQ      delta+64(FP), R14
	MOVQ      tab+72(FP), R8
	MOVQ      iota+80(FP), CX
	VMOVDQU32    (CX), Z12 // lane numbers
	LOADEXP512
	MOVL         $0xc2fa0000, AX
	VPBROADCASTD AX, Z29   // −125

brow:
	XORQ R13, R13
	MOVQ (R10), R15
	ADDQ $15, R15
	ANDQ $-16, R15 // the first whole visible vector
	CMPQ R15, R9
	JLE  bhead
	MOVQ R9, R15

bhead:
	CMPQ R13, R15
	JGE  bfull
	MASKEDDS512
	ADDQ $16, R13
	JMP  bhead

bfull:
	LEAQ 16(R13), AX
	CMPQ AX, R9
	JGT  btail
	VMOVUPS (SI)(R13*4), Z0
	VMOVUPS (R11)(R13*4), Z10
	VMOVUPS (R12)(R13*4), Z11
	VMOVUPS (DI)(R13*4), Z8
	VMOVUPS (R14)(R13*4), Z9
	EXPDS512
	VMOVUPS Z7, (SI)(R13*4)
	VMOVUPS Z8, (DI)(R13*4)
	MOVQ    AX, R13
	JMP     bfull

btail:
	CMPQ R13, R9
	JGE  browdone
	MASKEDDS512

browdone:
	ADDQ BX, SI
	ADDQ BX, DI
	ADDQ $8, R10
	DECQ DX
	JNZ  brow
	VZEROUPPER
	RET

// func subScaledRowsAVX512(c *float32, ldc, rows, nc int, coef *float32, ldcoef int, cnt *int, b *float32, ldb int, iota *[16]int32)
// Per row r (see SubScaledRows), per vector of its nc columns (the last
// one masked: K1 the lanes inside the row): c's vector in a register, then
// one FMA per j < cnt[r], c − coef[r,j]·b_j, then stored.
TEXT ·subScaledRowsAVX512(SB), NOSPLIT, $0-80
	MOVQ      c+0(FP), DI
	MOVQ      ldc+8(FP), R8
	SHLQ      $2, R8
	MOVQ      rows+16(FP), DX
	MOVQ      nc+24(FP), R9
	MOVQ      coef+32(FP), SI
	MOVQ      ldcoef+40(FP), R10
	SHLQ      $2, R10
	MOVQ      cnt+48(FP), R11
	MOVQ      b+56(FP), BX
	MOVQ      ldb+64(FP), R12
	SHLQ      $2, R12
	MOVQ      iota+72(FP), AX
	VMOVDQU32 (AX), Z10 // lane numbers

srow:
	MOVQ  (R11), CX // cnt[r]
	TESTQ CX, CX
	JLE   snext
	XORQ  R13, R13  // column

scol:
	MOVQ      R9, AX
	SUBQ      R13, AX
	LANEMASK(AX, Z10, Z11, K1)
	VMOVUPS.Z (DI)(R13*4), K1, Z0
	LEAQ      (BX)(R13*4), R14 // &b[0][column]
	MOVQ      SI, R15          // &coef[r][0]
	MOVQ      CX, AX

sstep:
	VBROADCASTSS (R15), Z1
	VFNMADD231PS (R14), Z1, K1, Z0 // c − coef·b
	ADDQ         $4, R15
	ADDQ         R12, R14
	DECQ         AX
	JNZ          sstep
	VMOVUPS      Z0, K1, (DI)(R13*4)
	ADDQ         $16, R13
	CMPQ         R13, R9
	JLT          scol

snext:
	ADDQ R8, DI
	ADDQ R10, SI
	ADDQ $8, R11
	DECQ DX
	JNZ  srow
	VZEROUPPER
	RET

// func Transpose8(dst *float32, ldd int, src *float32, lds int, rows, cols int)
//
// dst[p·ldd + j] = src[j·lds + p] for j < rows, p < cols, both multiples of
// 8: 8×8 blocks, each loaded as four rows' halves per ymm (rows j and j+4
// in the two 128-bit lanes), then transposed within the lanes by unpack
// and shuffle (AVX).
TEXT ·Transpose8(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R11
	SHLQ $2, R11
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R8
	SHLQ $2, R8
	MOVQ rows+32(FP), BX
	SHRQ $3, BX
	JZ   done
	MOVQ cols+40(FP), DX
	SHRQ $3, DX
	JZ   done
	LEAQ (R8)(R8*2), R9   // 3·lds
	LEAQ (R11)(R11*2), R12 // 3·ldd

rowblock:
	MOVQ SI, AX          // rows j…j+3 of this block column
	LEAQ (SI)(R8*4), R10 // rows j+4…j+7
	MOVQ DI, CX          // dst rows p…p+3
	MOVQ DX, R14

colblock:
	VMOVUPS     (AX), X0
	VINSERTF128 $1, (R10), Y0, Y0
	VMOVUPS     (AX)(R8*1), X1
	VINSERTF128 $1, (R10)(R8*1), Y1, Y1
	VMOVUPS     (AX)(R8*2), X2
	VINSERTF128 $1, (R10)(R8*2), Y2, Y2
	VMOVUPS     (AX)(R9*1), X3
	VINSERTF128 $1, (R10)(R9*1), Y3, Y3
	VMOVUPS     16(AX), X4
	VINSERTF128 $1, 16(R10), Y4, Y4
	VMOVUPS     16(AX)(R8*1), X5
	VINSERTF128 $1, 16(R10)(R8*1), Y5, Y5
	VMOVUPS     16(AX)(R8*2), X6
	VINSERTF128 $1, 16(R10)(R8*2), Y6, Y6
	VMOVUPS     16(AX)(R9*1), X7
	VINSERTF128 $1, 16(R10)(R9*1), Y7, Y7

	VUNPCKLPS Y1, Y0, Y8 // r0[0] r1[0] r0[1] r1[1] per lane
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VSHUFPS   $0x44, Y10, Y8, Y12 // column 0 of the four rows (and of the four below)
	VSHUFPS   $0xEE, Y10, Y8, Y13 // column 1
	VSHUFPS   $0x44, Y11, Y9, Y14 // column 2
	VSHUFPS   $0xEE, Y11, Y9, Y15 // column 3
	VMOVUPS   Y12, (CX)
	VMOVUPS   Y13, (CX)(R11*1)
	VMOVUPS   Y14, (CX)(R11*2)
	VMOVUPS   Y15, (CX)(R12*1)
	LEAQ      (CX)(R11*4), R13
	VUNPCKLPS Y5, Y4, Y8
	VUNPCKHPS Y5, Y4, Y9
	VUNPCKLPS Y7, Y6, Y10
	VUNPCKHPS Y7, Y6, Y11
	VSHUFPS   $0x44, Y10, Y8, Y12
	VSHUFPS   $0xEE, Y10, Y8, Y13
	VSHUFPS   $0x44, Y11, Y9, Y14
	VSHUFPS   $0xEE, Y11, Y9, Y15
	VMOVUPS   Y12, (R13)
	VMOVUPS   Y13, (R13)(R11*1)
	VMOVUPS   Y14, (R13)(R11*2)
	VMOVUPS   Y15, (R13)(R12*1)

	ADDQ $32, AX
	ADDQ $32, R10
	LEAQ (R13)(R11*4), CX
	DECQ R14
	JNZ  colblock

	LEAQ (SI)(R8*8), SI // next 8 rows of src
	ADDQ $32, DI        // next 8 columns of dst
	DECQ BX
	JNZ  rowblock

done:
	VZEROUPPER
	RET
