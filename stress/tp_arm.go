package stress

// tpidruro reads TPIDRURO, the thread pointer the kernel sets for user
// space (tp_arm.s).
func tpidruro() uintptr

// threadPointer is this thread's TLS base: glibc's, with its rseq area,
// which the kernel writes on every preemption (a child that unmapped it
// would be killed), or whatever the Go runtime set.
//
//go:nosplit
//go:norace
func threadPointer() (tp uintptr, ok bool) { return tpidruro(), true }
