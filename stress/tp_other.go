//go:build !amd64 && !arm64 && !arm

package stress

// threadPointer cannot read the TLS base here without assembly written for
// the architecture (386 has none yet): ok is false, and the child then
// keeps all its memory (see childUnmap).
//
//go:nosplit
//go:norace
func threadPointer() (tp uintptr, ok bool) { return 0, false }
