//go:build !purego

#include "textflag.h"

// func pause(n int)
// n PAUSE instructions: the spin-wait hint, which lets the core's other
// hardware thread run and saves power while a goroutine polls.
TEXT ·pause(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	TESTQ CX, CX
	JLE  done

loop:
	PAUSE
	DECQ CX
	JNZ  loop

done:
	RET
