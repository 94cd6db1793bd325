package check

import (
	"strconv"
	"strings"

	"latencytest/rundata"
)

// swapActive reports whether /proc/swaps lists any swap area.
func swapActive(swaps string) bool {
	lines := strings.Split(strings.TrimSpace(swaps), "\n")
	return len(lines) > 1
}

func checkSwappiness(e *env) []rundata.Finding {
	const name = "swappiness"
	const why = "with swap active the kernel pages out memory not locked, such as a stressor's or the desktop's, and the disk traffic that causes competes with the audio path"
	const fix = "sysctl -w vm.swappiness=10 (persist in /etc/sysctl.d/99-audio.conf)"
	s, err := e.read("/proc/sys/vm/swappiness")
	if err != nil {
		return []rundata.Finding{finding(name, INFO, "cannot read /proc/sys/vm/swappiness", why, "")}
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return []rundata.Finding{finding(name, INFO, "unreadable value "+strconv.Quote(strings.TrimSpace(s)), why, "")}
	}
	swaps, serr := e.read("/proc/swaps")
	switch {
	case serr == nil && !swapActive(swaps):
		return []rundata.Finding{finding(name, OK, strconv.Itoa(n)+", no swap active", why, "")}
	case n > 10:
		return []rundata.Finding{finding(name, WARN, strconv.Itoa(n)+" with swap active", why, fix)}
	}
	return []rundata.Finding{finding(name, OK, strconv.Itoa(n), why, "")}
}
