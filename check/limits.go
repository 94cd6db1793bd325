package check

import (
	"fmt"
	"strconv"
	"strings"

	"latencytest/rundata"
)

// Capability bits of /proc/self/status's CapEff.
const (
	capIPCLock = 14
	capSysNice = 23
)

// wantRTPrio is the priority latencytest asks for by default; a limit below
// it means SCHED_FIFO is refused or lowered.
const wantRTPrio = 80

// parseCapEff returns the effective capability mask from /proc/self/status.
func parseCapEff(status string) (uint64, bool) {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return n, err == nil
		}
	}
	return 0, false
}

func (e *env) hasCap(bit uint) bool {
	st, err := e.read("/proc/self/status")
	if err != nil {
		return false
	}
	m, ok := parseCapEff(st)
	return ok && m&(1<<bit) != 0
}

func checkRTPrio(e *env) []rundata.Finding {
	const name = "rtprio limit"
	const why = "SCHED_FIFO lets the audio thread run before every ordinary thread; the rtprio limit caps the priority an unprivileged user may take"
	const fix = "add '@audio - rtprio 95' to /etc/security/limits.d/audio.conf and add yourself to group audio, then log in again"
	switch {
	case e.hasCap(capSysNice):
		return []rundata.Finding{finding(name, OK, "CAP_SYS_NICE (any priority)", why, "")}
	case e.rtprio.err != nil:
		return []rundata.Finding{finding(name, INFO, "cannot read RLIMIT_RTPRIO: "+e.rtprio.err.Error(), why, fix)}
	case e.rtprio.unlimited || e.rtprio.cur >= wantRTPrio:
		return []rundata.Finding{finding(name, OK, limitString(e.rtprio), why, "")}
	case e.rtprio.cur == 0:
		return []rundata.Finding{finding(name, WARN, "0: SCHED_FIFO is refused", why, fix)}
	}
	return []rundata.Finding{finding(name, WARN, fmt.Sprintf("%d: below the %d latencytest asks for", e.rtprio.cur, wantRTPrio), why, fix)}
}

func checkMemlock(e *env) []rundata.Finding {
	const name = "memlock limit"
	const why = "mlockall keeps the audio path's memory resident; a page fault on it costs a disk read"
	const fix = "add '@audio - memlock unlimited' to /etc/security/limits.d/audio.conf and add yourself to group audio, then log in again"
	switch {
	case e.hasCap(capIPCLock):
		return []rundata.Finding{finding(name, OK, "CAP_IPC_LOCK (no limit)", why, "")}
	case e.memlock.err != nil:
		return []rundata.Finding{finding(name, INFO, "cannot read RLIMIT_MEMLOCK: "+e.memlock.err.Error(), why, fix)}
	case e.memlock.unlimited:
		return []rundata.Finding{finding(name, OK, "unlimited", why, "")}
	}
	// A Go process maps far more than it touches; mlockall of everything
	// needs a limit well beyond the usual 8 MiB default.
	return []rundata.Finding{finding(name, WARN, limitString(e.memlock)+": mlockall will fail", why, fix)}
}

func limitString(l limit) string {
	if l.unlimited {
		return "unlimited"
	}
	if l.cur >= 1<<20 && l.cur%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", l.cur>>20)
	}
	if l.cur >= 1<<10 && l.cur%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", l.cur>>10)
	}
	return strconv.FormatUint(l.cur, 10)
}
