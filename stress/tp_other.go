//go:build !amd64

package stress

// threadPointer is 0 where we cannot read the TLS base without assembly:
// the child then keeps all its memory (see childUnmap).
//
//go:nosplit
//go:norace
func threadPointer() uintptr { return 0 }
