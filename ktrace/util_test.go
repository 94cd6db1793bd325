package ktrace

import (
	"strconv"
	"unsafe"
)

func itoa(n int) string { return strconv.Itoa(n) }

// unsafeString returns a NUL-terminated copy of s for prctl.
func unsafeString(s string) unsafe.Pointer {
	b := append([]byte(s), 0)
	return unsafe.Pointer(&b[0])
}
