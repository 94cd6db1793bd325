package stress

// tpidrEL0 reads TPIDR_EL0, the thread pointer (tp_arm64.s).
func tpidrEL0() uintptr

// threadPointer is this thread's TLS base: glibc's, with its rseq area,
// which the kernel writes on every preemption (a child that unmapped it
// would be killed); 0 in a Go program without cgo, which has no TLS on
// arm64 (its runtime keeps g in a register).
//
//go:nosplit
//go:norace
func threadPointer() (tp uintptr, ok bool) { return tpidrEL0(), true }
