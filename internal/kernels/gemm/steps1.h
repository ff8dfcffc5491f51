// The depth steps of one chunk for micro.h without INTERLEAVE.
step:
	STEP(V0, V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11)
	NEXT
	DECQ AX
	JNZ  step

