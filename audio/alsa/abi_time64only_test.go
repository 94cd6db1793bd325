//go:build linux && (amd64 || arm64) && !vm

package alsa

// time32Checks: none on 64-bit, whose time_t was always 64-bit.
func time32Checks() []struct {
	c     string
	goVal uintptr
} {
	return nil
}
