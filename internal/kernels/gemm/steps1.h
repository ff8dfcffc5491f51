// The depth steps of one chunk for micro.h without INTERLEAVE (AX steps,
// at least one): the first one sets V0–V11, the others add.
	STEP(VMULV, V0, V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11)
	NEXT
	DECQ AX
	JZ   stepped

step:
	STEP(VFMA, V0, V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11)
	NEXT
	DECQ AX
	JNZ  step

stepped:
