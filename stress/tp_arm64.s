#include "textflag.h"

// func tpidrEL0() uintptr
TEXT ·tpidrEL0(SB), NOSPLIT|NOFRAME, $0-8
	WORD $0xd53bd040 // MRS TPIDR_EL0, R0
	MOVD R0, ret+0(FP)
	RET
