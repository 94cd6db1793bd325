#include "textflag.h"

// func tpidruro() uintptr
TEXT ·tpidruro(SB), NOSPLIT|NOFRAME, $0-4
	MRC 15, 0, R0, C13, C0, 3 // TPIDRURO
	MOVW R0, ret+0(FP)
	RET
