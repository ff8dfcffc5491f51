// Body of the micro-kernels: a 6-row tile two vectors wide, included by
// micro_amd64.s once per kernel after a register set (zmm.h, ymm.h) and an
// element type (f32.h, f64.h), which define
//   V0–V11 VB0 VB1 VA0 VA1 VW         the vector registers and their width in bytes
//   INTERLEAVE W0–W11                 (zmm.h only) a second set of accumulators
//   VFMA VBCAST VADDV VMULV VMOVV     the element type's instructions
// and LOC, the frame offset of alpha, beta (+8) and ldc in bytes (+16);
// it undefines them all at its end. On entry:
//   CX depth k      R11 chunk length kb   SI &A[0,0]     R8 A's row stride
//   R12 A's depth stride   DI &B[0,0]     R13 B's depth stride
//   DX &C[0,0]      R14 loadC             (strides in bytes)
//
// V0–V11 sum the current chunk (row q in V(2r), V(2r+1)); with INTERLEAVE
// (zmm.h: 32 registers) they sum its even steps and W0–W11 its odd steps,
// joined at the chunk's end. VB0, VB1 hold a row of B, VA0, VA1 broadcasts
// of A. Chunk c is added to total c mod 4; the four totals (12 vectors
// each) are on the frame at 0, TOTAL, 2·TOTAL, 3·TOTAL and are combined as
// a tree at the end (see the package comment).

#define TOTAL (12*VW)

// T = acc (the first chunk of a total)
#define STORE_TOTAL(t) \
	VMOVV V0, 0(t); VMOVV V1, 1*VW(t); VMOVV V2, 2*VW(t); VMOVV V3, 3*VW(t); \
	VMOVV V4, 4*VW(t); VMOVV V5, 5*VW(t); VMOVV V6, 6*VW(t); VMOVV V7, 7*VW(t); \
	VMOVV V8, 8*VW(t); VMOVV V9, 9*VW(t); VMOVV V10, 10*VW(t); VMOVV V11, 11*VW(t)

// acc += T
#define ADD_TOTAL(t) \
	VADDV 0(t), V0, V0; VADDV 1*VW(t), V1, V1; VADDV 2*VW(t), V2, V2; VADDV 3*VW(t), V3, V3; \
	VADDV 4*VW(t), V4, V4; VADDV 5*VW(t), V5, V5; VADDV 6*VW(t), V6, V6; VADDV 7*VW(t), V7, V7; \
	VADDV 8*VW(t), V8, V8; VADDV 9*VW(t), V9, V9; VADDV 10*VW(t), V10, V10; VADDV 11*VW(t), V11, V11

// T += acc
#define FLUSH_TOTAL(t) \
	ADD_TOTAL(t); STORE_TOTAL(t)

// acc += (T + U)
#define ADD_PAIR(t, u) \
	VMOVV 0(t), VB0; VADDV 0(u), VB0, VB0; VADDV VB0, V0, V0; \
	VMOVV 1*VW(t), VB1; VADDV 1*VW(u), VB1, VB1; VADDV VB1, V1, V1; \
	VMOVV 2*VW(t), VB0; VADDV 2*VW(u), VB0, VB0; VADDV VB0, V2, V2; \
	VMOVV 3*VW(t), VB1; VADDV 3*VW(u), VB1, VB1; VADDV VB1, V3, V3; \
	VMOVV 4*VW(t), VB0; VADDV 4*VW(u), VB0, VB0; VADDV VB0, V4, V4; \
	VMOVV 5*VW(t), VB1; VADDV 5*VW(u), VB1, VB1; VADDV VB1, V5, V5; \
	VMOVV 6*VW(t), VB0; VADDV 6*VW(u), VB0, VB0; VADDV VB0, V6, V6; \
	VMOVV 7*VW(t), VB1; VADDV 7*VW(u), VB1, VB1; VADDV VB1, V7, V7; \
	VMOVV 8*VW(t), VB0; VADDV 8*VW(u), VB0, VB0; VADDV VB0, V8, V8; \
	VMOVV 9*VW(t), VB1; VADDV 9*VW(u), VB1, VB1; VADDV VB1, V9, V9; \
	VMOVV 10*VW(t), VB0; VADDV 10*VW(u), VB0, VB0; VADDV VB0, V10, V10; \
	VMOVV 11*VW(t), VB1; VADDV 11*VW(u), VB1, VB1; VADDV VB1, V11, V11

// one depth step: row i of the tile, in q(2i) and q(2i+1), += A[i,p]·B[p,:]
// with op VFMA, or = A[i,p]·B[p,:] with op VMULV (a chunk's first step)
#define STEP(op, q0, q1, q2, q3, q4, q5, q6, q7, q8, q9, q10, q11) \
	VMOVV  (DI), VB0; VMOVV 1*VW(DI), VB1; \
	VBCAST (SI), VA0; op VB0, VA0, q0; op VB1, VA0, q1; \
	VBCAST (SI)(R8*1), VA1; op VB0, VA1, q2; op VB1, VA1, q3; \
	VBCAST (SI)(R8*2), VA0; op VB0, VA0, q4; op VB1, VA0, q5; \
	VBCAST (R10), VA1; op VB0, VA1, q6; op VB1, VA1, q7; \
	VBCAST (R10)(R8*1), VA0; op VB0, VA0, q8; op VB1, VA0, q9; \
	VBCAST (R10)(R8*2), VA1; op VB0, VA1, q10; op VB1, VA1, q11

// to the next depth step
#define NEXT \
	ADDQ R12, SI; ADDQ R12, R10; ADDQ R13, DI

	// Fetch C's tile into L1 now: the epilogue reads and writes it.
	MOVQ       LOC+16(SP), AX
	MOVQ       DX, R9
	PREFETCHT0 (R9)
	PREFETCHT0 VW*2-1(R9)
	ADDQ       AX, R9
	PREFETCHT0 (R9)
	PREFETCHT0 VW*2-1(R9)
	ADDQ       AX, R9
	PREFETCHT0 (R9)
	PREFETCHT0 VW*2-1(R9)
	ADDQ       AX, R9
	PREFETCHT0 (R9)
	PREFETCHT0 VW*2-1(R9)
	ADDQ       AX, R9
	PREFETCHT0 (R9)
	PREFETCHT0 VW*2-1(R9)
	ADDQ       AX, R9
	PREFETCHT0 (R9)
	PREFETCHT0 VW*2-1(R9)

	LEAQ (R8)(R8*2), R9  // 3 rows
	LEAQ (SI)(R9*1), R10 // row 3 of A
	XORQ BX, BX          // chunk index

chunk:
	MOVQ    R11, AX
	CMPQ    CX, AX
	CMOVQLT CX, AX // steps in this chunk: min(kb, depth left)
	SUBQ    AX, CX

#ifdef INTERLEAVE
#include "steps2.h"
#else
#include "steps1.h"
#endif
	TESTQ CX, CX
	JZ    last
	MOVQ  BX, AX // chunk c goes into total c mod 4
	ANDQ  $3, AX
	IMULQ $TOTAL, AX
	LEAQ  (SP)(AX*1), AX
	CMPQ  BX, $4
	JGE   flush
	STORE_TOTAL(AX)
	INCQ  BX
	JMP   chunk

flush:
	FLUSH_TOTAL(AX)
	INCQ BX
	JMP  chunk

last:
	// The last chunk c = BX joins its total t = c mod 4 in registers;
	// totals 0…min(c, 3) are in use. The result is (T_t + T_t^1) +
	// (T_q + T_q+1) with {q, q+1} the other pair.
	MOVQ  BX, R11
	ANDQ  $3, R11 // t
	CMPQ  BX, $4
	JLT   partner
	MOVQ  R11, AX
	IMULQ $TOTAL, AX
	LEAQ  (SP)(AX*1), AX
	ADD_TOTAL(AX)

partner:
	MOVQ  R11, AX
	XORQ  $1, AX
	CMPQ  AX, BX
	JGT   pair // t^1 > c: not in use
	IMULQ $TOTAL, AX
	LEAQ  (SP)(AX*1), AX
	ADD_TOTAL(AX)

pair:
	MOVQ  R11, AX // the other pair starts at q = (t^2) & 2
	XORQ  $2, AX
	ANDQ  $2, AX
	CMPQ  AX, BX
	JGT   combined
	LEAQ  1(AX), R12
	IMULQ $TOTAL, AX
	LEAQ  (SP)(AX*1), AX
	CMPQ  R12, BX
	JGT   single
	IMULQ $TOTAL, R12
	LEAQ  (SP)(R12*1), R12
	ADD_PAIR(AX, R12)
	JMP   combined

single:
	ADD_TOTAL(AX)

combined:
	// C = alpha·total (+ beta·C)
	VBCAST LOC(SP), VB0
	VMULV  VB0, V0, V0
	VMULV  VB0, V1, V1
	VMULV  VB0, V2, V2
	VMULV  VB0, V3, V3
	VMULV  VB0, V4, V4
	VMULV  VB0, V5, V5
	VMULV  VB0, V6, V6
	VMULV  VB0, V7, V7
	VMULV  VB0, V8, V8
	VMULV  VB0, V9, V9
	VMULV  VB0, V10, V10
	VMULV  VB0, V11, V11
	MOVQ   LOC+16(SP), R8
	TESTQ  R14, R14
	JZ     store
	VBCAST LOC+8(SP), VB1
	MOVQ   DX, AX
	VFMA   (AX), VB1, V0
	VFMA   1*VW(AX), VB1, V1
	ADDQ   R8, AX
	VFMA   (AX), VB1, V2
	VFMA   1*VW(AX), VB1, V3
	ADDQ   R8, AX
	VFMA   (AX), VB1, V4
	VFMA   1*VW(AX), VB1, V5
	ADDQ   R8, AX
	VFMA   (AX), VB1, V6
	VFMA   1*VW(AX), VB1, V7
	ADDQ   R8, AX
	VFMA   (AX), VB1, V8
	VFMA   1*VW(AX), VB1, V9
	ADDQ   R8, AX
	VFMA   (AX), VB1, V10
	VFMA   1*VW(AX), VB1, V11

store:
	VMOVV V0, (DX)
	VMOVV V1, 1*VW(DX)
	ADDQ  R8, DX
	VMOVV V2, (DX)
	VMOVV V3, 1*VW(DX)
	ADDQ  R8, DX
	VMOVV V4, (DX)
	VMOVV V5, 1*VW(DX)
	ADDQ  R8, DX
	VMOVV V6, (DX)
	VMOVV V7, 1*VW(DX)
	ADDQ  R8, DX
	VMOVV V8, (DX)
	VMOVV V9, 1*VW(DX)
	ADDQ  R8, DX
	VMOVV V10, (DX)
	VMOVV V11, 1*VW(DX)
	VZEROUPPER
	RET

#undef TOTAL
#undef STORE_TOTAL
#undef ADD_TOTAL
#undef FLUSH_TOTAL
#undef ADD_PAIR
#undef STEP
#undef NEXT
#undef VFMA
#undef VBCAST
#undef VADDV
#undef VMULV
#undef VMOVV
#undef VW
#undef V0
#undef V1
#undef V2
#undef V3
#undef V4
#undef V5
#undef V6
#undef V7
#undef V8
#undef V9
#undef V10
#undef V11
#ifdef INTERLEAVE
#undef W0
#undef W1
#undef W2
#undef W3
#undef W4
#undef W5
#undef W6
#undef W7
#undef W8
#undef W9
#undef W10
#undef W11
#undef INTERLEAVE
#endif
#undef VB0
#undef VB1
#undef VA0
#undef VA1
#undef LOC
