// Body of the AVX-512 micro-kernels (6 rows × 2 zmm), included by
// micro_amd64.s once per element type with these macros defined:
//   VFMA VBCAST VADDV VMULV VMOVV   the element type's instructions
//   LOC                             frame offset of alpha, beta (+8), ldc in bytes (+16)
// and these registers loaded:
//   CX depth k      R11 chunk length kb   SI &A[0,0]     R8 A's row stride
//   R12 A's depth stride   DI &B[0,0]     R13 B's depth stride
//   DX &C[0,0]      R14 loadC             (strides in bytes)
//
// Z0–Z11 sum the current chunk (row r in Z(2r), Z(2r+1)), Z12–Z23 the
// chunks so far; Z24, Z25 hold a row of B, Z26, Z27 broadcasts of A.

	LEAQ (R8)(R8*2), R9  // 3 rows
	LEAQ (SI)(R9*1), R10 // row 3 of A
	XORQ BX, BX          // chunks done

chunk:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	MOVQ    R11, AX
	CMPQ    CX, AX
	CMOVQLT CX, AX // steps in this chunk: min(kb, depth left)
	SUBQ    AX, CX

step:
	VMOVV  (DI), Z24
	VMOVV  64(DI), Z25
	VBCAST (SI), Z26
	VFMA   Z24, Z26, Z0
	VFMA   Z25, Z26, Z1
	VBCAST (SI)(R8*1), Z27
	VFMA   Z24, Z27, Z2
	VFMA   Z25, Z27, Z3
	VBCAST (SI)(R8*2), Z26
	VFMA   Z24, Z26, Z4
	VFMA   Z25, Z26, Z5
	VBCAST (R10), Z27
	VFMA   Z24, Z27, Z6
	VFMA   Z25, Z27, Z7
	VBCAST (R10)(R8*1), Z26
	VFMA   Z24, Z26, Z8
	VFMA   Z25, Z26, Z9
	VBCAST (R10)(R8*2), Z27
	VFMA   Z24, Z27, Z10
	VFMA   Z25, Z27, Z11
	ADDQ   R12, SI
	ADDQ   R12, R10
	ADDQ   R13, DI
	DECQ   AX
	JNZ    step

	TESTQ BX, BX
	JNZ   sum
	VMOVV Z0, Z12 // first chunk: it is the total
	VMOVV Z1, Z13
	VMOVV Z2, Z14
	VMOVV Z3, Z15
	VMOVV Z4, Z16
	VMOVV Z5, Z17
	VMOVV Z6, Z18
	VMOVV Z7, Z19
	VMOVV Z8, Z20
	VMOVV Z9, Z21
	VMOVV Z10, Z22
	VMOVV Z11, Z23
	INCQ  BX
	JMP   more

sum:
	VADDV Z0, Z12, Z12
	VADDV Z1, Z13, Z13
	VADDV Z2, Z14, Z14
	VADDV Z3, Z15, Z15
	VADDV Z4, Z16, Z16
	VADDV Z5, Z17, Z17
	VADDV Z6, Z18, Z18
	VADDV Z7, Z19, Z19
	VADDV Z8, Z20, Z20
	VADDV Z9, Z21, Z21
	VADDV Z10, Z22, Z22
	VADDV Z11, Z23, Z23

more:
	TESTQ CX, CX
	JNZ   chunk

	// C = alpha·total (+ beta·C)
	VBCAST LOC(SP), Z28
	VMULV  Z28, Z12, Z12
	VMULV  Z28, Z13, Z13
	VMULV  Z28, Z14, Z14
	VMULV  Z28, Z15, Z15
	VMULV  Z28, Z16, Z16
	VMULV  Z28, Z17, Z17
	VMULV  Z28, Z18, Z18
	VMULV  Z28, Z19, Z19
	VMULV  Z28, Z20, Z20
	VMULV  Z28, Z21, Z21
	VMULV  Z28, Z22, Z22
	VMULV  Z28, Z23, Z23
	MOVQ   LOC+16(SP), R8
	TESTQ  R14, R14
	JZ     store
	VBCAST LOC+8(SP), Z29
	MOVQ   DX, AX
	VFMA   (AX), Z29, Z12
	VFMA   64(AX), Z29, Z13
	ADDQ   R8, AX
	VFMA   (AX), Z29, Z14
	VFMA   64(AX), Z29, Z15
	ADDQ   R8, AX
	VFMA   (AX), Z29, Z16
	VFMA   64(AX), Z29, Z17
	ADDQ   R8, AX
	VFMA   (AX), Z29, Z18
	VFMA   64(AX), Z29, Z19
	ADDQ   R8, AX
	VFMA   (AX), Z29, Z20
	VFMA   64(AX), Z29, Z21
	ADDQ   R8, AX
	VFMA   (AX), Z29, Z22
	VFMA   64(AX), Z29, Z23

store:
	VMOVV Z12, (DX)
	VMOVV Z13, 64(DX)
	ADDQ  R8, DX
	VMOVV Z14, (DX)
	VMOVV Z15, 64(DX)
	ADDQ  R8, DX
	VMOVV Z16, (DX)
	VMOVV Z17, 64(DX)
	ADDQ  R8, DX
	VMOVV Z18, (DX)
	VMOVV Z19, 64(DX)
	ADDQ  R8, DX
	VMOVV Z20, (DX)
	VMOVV Z21, 64(DX)
	ADDQ  R8, DX
	VMOVV Z22, (DX)
	VMOVV Z23, 64(DX)
	VZEROUPPER
	RET
