//go:build vm && (amd64 || 386 || arm)

package alsa

import "golang.org/x/sys/unix"

// sysPollName names poll, which alsa-lib waits in (aplay -M), on the
// architectures that have it.
func sysPollName(nr int) string {
	if nr == unix.SYS_POLL {
		return "poll"
	}
	return ""
}
