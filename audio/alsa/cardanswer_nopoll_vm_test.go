//go:build vm && !(amd64 || 386 || arm)

package alsa

// sysPollName: no poll system call here (alsa-lib's poll is ppoll).
func sysPollName(int) string { return "" }
