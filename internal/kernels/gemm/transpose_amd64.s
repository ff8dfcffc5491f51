//go:build !purego

#include "textflag.h"

// func transposeD4(dst *float64, ldd int, src *float64, lds int, rows, cols int)
//
// dst[p·ldd + j] = src[j·lds + p] for j < rows, p < cols, both multiples of
// 4: 4×4 blocks, rows j, j+2 (and j+1, j+3) in the two lanes of a ymm,
// then unpack (AVX).
TEXT ·transposeD4(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R11
	SHLQ $3, R11
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R8
	SHLQ $3, R8
	MOVQ rows+32(FP), BX
	SHRQ $2, BX
	JZ   doneD
	MOVQ cols+40(FP), DX
	SHRQ $2, DX
	JZ   doneD
	LEAQ (R8)(R8*2), R9    // 3·lds
	LEAQ (R11)(R11*2), R12 // 3·ldd

rowblockD:
	MOVQ SI, AX
	MOVQ DI, CX
	MOVQ DX, R14

colblockD:
	VMOVUPD     (AX), X0
	VINSERTF128 $1, (AX)(R8*2), Y0, Y0 // row 0 | row 2, columns 0–1
	VMOVUPD     (AX)(R8*1), X1
	VINSERTF128 $1, (AX)(R9*1), Y1, Y1 // row 1 | row 3
	VMOVUPD     16(AX), X2
	VINSERTF128 $1, 16(AX)(R8*2), Y2, Y2 // columns 2–3
	VMOVUPD     16(AX)(R8*1), X3
	VINSERTF128 $1, 16(AX)(R9*1), Y3, Y3
	VUNPCKLPD   Y1, Y0, Y4 // column 0 of rows 0–3
	VUNPCKHPD   Y1, Y0, Y5 // column 1
	VUNPCKLPD   Y3, Y2, Y6
	VUNPCKHPD   Y3, Y2, Y7
	VMOVUPD     Y4, (CX)
	VMOVUPD     Y5, (CX)(R11*1)
	VMOVUPD     Y6, (CX)(R11*2)
	VMOVUPD     Y7, (CX)(R12*1)
	ADDQ        $32, AX
	LEAQ        (CX)(R11*4), CX
	DECQ        R14
	JNZ         colblockD

	LEAQ (SI)(R8*4), SI
	ADDQ $32, DI
	DECQ BX
	JNZ  rowblockD

doneD:
	VZEROUPPER
	RET

// func copyRows(dst unsafe.Pointer, ldd int, src unsafe.Pointer, lds, rows, width int)
//
// Copies rows of width bytes (a multiple of 8, at most 128) from src, at a
// stride of lds bytes, to dst at a stride of ldd bytes: packing nr-wide
// pieces of B's rows, or a strip of A stored transposed (AVX).
TEXT ·copyRows(SB), NOSPLIT, $0-48
	MOVQ  dst+0(FP), DI
	MOVQ  ldd+8(FP), R10
	MOVQ  src+16(FP), SI
	MOVQ  lds+24(FP), R8
	MOVQ  rows+32(FP), BX
	MOVQ  width+40(FP), DX
	TESTQ BX, BX
	JZ    copied

row:
	MOVQ DX, CX
	MOVQ SI, R9
	MOVQ DI, R11

by32:
	CMPQ    CX, $32
	JLT     by16
	VMOVUPS (R9), Y0
	VMOVUPS Y0, (R11)
	ADDQ    $32, R9
	ADDQ    $32, R11
	SUBQ    $32, CX
	JMP     by32

by16:
	CMPQ    CX, $16
	JLT     by8
	VMOVUPS (R9), X0
	VMOVUPS X0, (R11)
	ADDQ    $16, R9
	ADDQ    $16, R11
	SUBQ    $16, CX

by8:
	TESTQ CX, CX
	JZ    next
	MOVQ  (R9), AX
	MOVQ  AX, (R11)

next:
	ADDQ R8, SI
	ADDQ R10, DI
	DECQ BX
	JNZ  row

copied:
	VZEROUPPER
	RET

// func copyPieces(dst unsafe.Pointer, ldd int, src unsafe.Pointer, lds, rows, pieces, width int)
//
// Cuts each of rows rows of src (at a stride of lds bytes) into pieces
// pieces of width bytes (a multiple of 8) and copies piece s of row p to
// dst + s·ldd + p·width: packing strips of A stored transposed, reading
// A along its rows (packABlock). Row p+8 is prefetched while row p is cut:
// the rows are a page or more apart, which the prefetchers do not follow.
TEXT ·copyPieces(SB), NOSPLIT, $0-56
	MOVQ  dst+0(FP), DI
	MOVQ  ldd+8(FP), R10
	MOVQ  src+16(FP), SI
	MOVQ  lds+24(FP), R8
	MOVQ  rows+32(FP), BX
	MOVQ  pieces+40(FP), DX
	MOVQ  width+48(FP), CX
	TESTQ BX, BX
	JZ    cut
	TESTQ DX, DX
	JZ    cut

prow:
	LEAQ  (SI)(R8*8), AX // prefetch row p+8
	MOVQ  DX, R12
	IMULQ CX, R12

prefetch:
	PREFETCHT0 (AX)
	ADDQ       $64, AX
	SUBQ       $64, R12
	JG         prefetch
	PREFETCHT0 -1(AX)(R12*1) // the row's last line

	MOVQ SI, R9
	MOVQ DI, R11
	MOVQ DX, R12

piece:
	MOVQ CX, R13
	MOVQ R11, R14

by16:
	CMPQ    R13, $16
	JLT     by8
	VMOVUPS (R9), X0
	VMOVUPS X0, (R14)
	ADDQ    $16, R9
	ADDQ    $16, R14
	SUBQ    $16, R13
	JMP     by16

by8:
	TESTQ R13, R13
	JZ    pieced
	MOVQ  (R9), AX
	MOVQ  AX, (R14)
	ADDQ  $8, R9

pieced:
	ADDQ R10, R11
	DECQ R12
	JNZ  piece

	ADDQ R8, SI
	ADDQ CX, DI
	DECQ BX
	JNZ  prow

cut:
	VZEROUPPER
	RET
