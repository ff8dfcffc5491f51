// Body of the AVX2 micro-kernels (6 rows × 2 ymm), included by
// micro_amd64.s once per element type with these macros defined:
//   VFMA VBCAST VADDV VMULV VMOVV   the element type's instructions
//   LOC                             frame offset of alpha, beta (+8), ldc in bytes (+16)
// and the registers loaded as for micro_avx512.h.
//
// Y0–Y11 sum the current chunk (row r in Y(2r), Y(2r+1)); the chunks so
// far are summed in the frame's first 384 bytes (there are not enough ymm
// registers for a second set); Y12, Y13 hold a row of B, Y14, Y15
// broadcasts of A.

	LEAQ (R8)(R8*2), R9  // 3 rows
	LEAQ (SI)(R9*1), R10 // row 3 of A
	XORQ BX, BX          // chunks done

chunk:
	VPXOR   Y0, Y0, Y0
	VPXOR   Y1, Y1, Y1
	VPXOR   Y2, Y2, Y2
	VPXOR   Y3, Y3, Y3
	VPXOR   Y4, Y4, Y4
	VPXOR   Y5, Y5, Y5
	VPXOR   Y6, Y6, Y6
	VPXOR   Y7, Y7, Y7
	VPXOR   Y8, Y8, Y8
	VPXOR   Y9, Y9, Y9
	VPXOR   Y10, Y10, Y10
	VPXOR   Y11, Y11, Y11
	MOVQ    R11, AX
	CMPQ    CX, AX
	CMOVQLT CX, AX // steps in this chunk: min(kb, depth left)
	SUBQ    AX, CX

step:
	VMOVV  (DI), Y12
	VMOVV  32(DI), Y13
	VBCAST (SI), Y14
	VFMA   Y12, Y14, Y0
	VFMA   Y13, Y14, Y1
	VBCAST (SI)(R8*1), Y15
	VFMA   Y12, Y15, Y2
	VFMA   Y13, Y15, Y3
	VBCAST (SI)(R8*2), Y14
	VFMA   Y12, Y14, Y4
	VFMA   Y13, Y14, Y5
	VBCAST (R10), Y15
	VFMA   Y12, Y15, Y6
	VFMA   Y13, Y15, Y7
	VBCAST (R10)(R8*1), Y14
	VFMA   Y12, Y14, Y8
	VFMA   Y13, Y14, Y9
	VBCAST (R10)(R8*2), Y15
	VFMA   Y12, Y15, Y10
	VFMA   Y13, Y15, Y11
	ADDQ   R12, SI
	ADDQ   R12, R10
	ADDQ   R13, DI
	DECQ   AX
	JNZ    step

	TESTQ CX, CX
	JZ    last
	TESTQ BX, BX
	JNZ   sum
	VMOVV Y0, 0(SP) // first chunk: it is the total
	VMOVV Y1, 32(SP)
	VMOVV Y2, 64(SP)
	VMOVV Y3, 96(SP)
	VMOVV Y4, 128(SP)
	VMOVV Y5, 160(SP)
	VMOVV Y6, 192(SP)
	VMOVV Y7, 224(SP)
	VMOVV Y8, 256(SP)
	VMOVV Y9, 288(SP)
	VMOVV Y10, 320(SP)
	VMOVV Y11, 352(SP)
	INCQ  BX
	JMP   chunk

sum:
	VADDV 0(SP), Y0, Y0
	VMOVV Y0, 0(SP)
	VADDV 32(SP), Y1, Y1
	VMOVV Y1, 32(SP)
	VADDV 64(SP), Y2, Y2
	VMOVV Y2, 64(SP)
	VADDV 96(SP), Y3, Y3
	VMOVV Y3, 96(SP)
	VADDV 128(SP), Y4, Y4
	VMOVV Y4, 128(SP)
	VADDV 160(SP), Y5, Y5
	VMOVV Y5, 160(SP)
	VADDV 192(SP), Y6, Y6
	VMOVV Y6, 192(SP)
	VADDV 224(SP), Y7, Y7
	VMOVV Y7, 224(SP)
	VADDV 256(SP), Y8, Y8
	VMOVV Y8, 256(SP)
	VADDV 288(SP), Y9, Y9
	VMOVV Y9, 288(SP)
	VADDV 320(SP), Y10, Y10
	VMOVV Y10, 320(SP)
	VADDV 352(SP), Y11, Y11
	VMOVV Y11, 352(SP)
	JMP   chunk

last: // the last chunk joins the total in registers
	TESTQ BX, BX
	JZ    scale
	VADDV 0(SP), Y0, Y0
	VADDV 32(SP), Y1, Y1
	VADDV 64(SP), Y2, Y2
	VADDV 96(SP), Y3, Y3
	VADDV 128(SP), Y4, Y4
	VADDV 160(SP), Y5, Y5
	VADDV 192(SP), Y6, Y6
	VADDV 224(SP), Y7, Y7
	VADDV 256(SP), Y8, Y8
	VADDV 288(SP), Y9, Y9
	VADDV 320(SP), Y10, Y10
	VADDV 352(SP), Y11, Y11

scale: // C = alpha·total (+ beta·C)
	VBCAST LOC(SP), Y12
	VMULV  Y12, Y0, Y0
	VMULV  Y12, Y1, Y1
	VMULV  Y12, Y2, Y2
	VMULV  Y12, Y3, Y3
	VMULV  Y12, Y4, Y4
	VMULV  Y12, Y5, Y5
	VMULV  Y12, Y6, Y6
	VMULV  Y12, Y7, Y7
	VMULV  Y12, Y8, Y8
	VMULV  Y12, Y9, Y9
	VMULV  Y12, Y10, Y10
	VMULV  Y12, Y11, Y11
	MOVQ   LOC+16(SP), R8
	TESTQ  R14, R14
	JZ     store
	VBCAST LOC+8(SP), Y13
	MOVQ   DX, AX
	VFMA   (AX), Y13, Y0
	VFMA   32(AX), Y13, Y1
	ADDQ   R8, AX
	VFMA   (AX), Y13, Y2
	VFMA   32(AX), Y13, Y3
	ADDQ   R8, AX
	VFMA   (AX), Y13, Y4
	VFMA   32(AX), Y13, Y5
	ADDQ   R8, AX
	VFMA   (AX), Y13, Y6
	VFMA   32(AX), Y13, Y7
	ADDQ   R8, AX
	VFMA   (AX), Y13, Y8
	VFMA   32(AX), Y13, Y9
	ADDQ   R8, AX
	VFMA   (AX), Y13, Y10
	VFMA   32(AX), Y13, Y11

store:
	VMOVV Y0, (DX)
	VMOVV Y1, 32(DX)
	ADDQ  R8, DX
	VMOVV Y2, (DX)
	VMOVV Y3, 32(DX)
	ADDQ  R8, DX
	VMOVV Y4, (DX)
	VMOVV Y5, 32(DX)
	ADDQ  R8, DX
	VMOVV Y6, (DX)
	VMOVV Y7, 32(DX)
	ADDQ  R8, DX
	VMOVV Y8, (DX)
	VMOVV Y9, 32(DX)
	ADDQ  R8, DX
	VMOVV Y10, (DX)
	VMOVV Y11, 32(DX)
	VZEROUPPER
	RET
