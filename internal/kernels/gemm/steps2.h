// The depth steps of one chunk for micro.h with INTERLEAVE (AX steps, at
// least one): even steps into V0–V11, odd steps into W0–W11, joined at the
// end; the first step of each set sets it, the others add. (A separate
// file: the assembler expands macros even inside a false #ifdef.)
	STEP(VMULV, V0, V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11)
	NEXT
	DECQ AX
	JZ   joined // one step: no odd set
	STEP(VMULV, W0, W1, W2, W3, W4, W5, W6, W7, W8, W9, W10, W11)
	NEXT
	DECQ AX
	CMPQ AX, $2
	JLT  tail

twostep:
	STEP(VFMA, V0, V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11)
	NEXT
	STEP(VFMA, W0, W1, W2, W3, W4, W5, W6, W7, W8, W9, W10, W11)
	NEXT
	SUBQ $2, AX
	CMPQ AX, $2
	JGE  twostep

tail:
	TESTQ AX, AX
	JZ    join
	STEP(VFMA, V0, V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11)
	NEXT

join:
	VADDV W0, V0, V0
	VADDV W1, V1, V1
	VADDV W2, V2, V2
	VADDV W3, V3, V3
	VADDV W4, V4, V4
	VADDV W5, V5, V5
	VADDV W6, V6, V6
	VADDV W7, V7, V7
	VADDV W8, V8, V8
	VADDV W9, V9, V9
	VADDV W10, V10, V10
	VADDV W11, V11, V11

joined:
