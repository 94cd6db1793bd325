package stress

import (
	"syscall"
	"unsafe"
)

// archGetFS is arch_prctl's ARCH_GET_FS.
const archGetFS = 0x1003

// threadPointer is this thread's TLS base (ok false if it cannot be
// read). glibc keeps the thread's rseq area there, which the kernel writes
// on every preemption: a child that unmapped it would be killed.
//
//go:nosplit
//go:norace
func threadPointer() (tp uintptr, ok bool) {
	var fs uintptr
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_ARCH_PRCTL, archGetFS, uintptr(unsafe.Pointer(&fs)), 0, 0, 0, 0); errno != 0 {
		return 0, false
	}
	return fs, true
}
