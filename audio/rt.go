package audio

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"latencytest/rundata"
)

// RTSetup applies the real-time setup asked for to the calling OS thread
// (scheduling policy, priority and affinity are per thread on Linux) and to
// the process (mlockall). A refused step does not stop the measurement: it
// is recorded in the result, whose Obtained side says what really holds.
// The returned release undoes what must not outlive the run: the
// /dev/cpu_dma_latency request lasts exactly as long as its file is open.
//
// The thread is pinned first and made real-time last: a SCHED_FIFO thread
// never runs, not even while its memory is locked (which faults in the
// whole program's code), on the CPUs kept for latencytest's own work, nor
// holds a CPU at real-time priority for that set-up.
func RTSetup(asked rundata.RTParams) (setup rundata.RTSetup, release func()) {
	setup.Asked = asked
	ob := &setup.Obtained
	ob.Policy = "SCHED_OTHER"
	refuse := func(format string, a ...any) { setup.Refused = append(setup.Refused, fmt.Sprintf(format, a...)) }

	if len(asked.Affinity) > 0 {
		var set unix.CPUSet
		for _, c := range asked.Affinity {
			set.Set(c)
		}
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			refuse("CPU affinity %v: %v", asked.Affinity, err)
		} else {
			ob.Affinity = append([]int(nil), asked.Affinity...)
		}
	}
	if asked.Mlockall {
		ob.Mlockall = lockMemory(refuse)
	}
	release = func() {}
	if asked.DMALatency {
		f, err := os.OpenFile("/dev/cpu_dma_latency", os.O_WRONLY, 0)
		if err == nil {
			var zero [4]byte
			binary.LittleEndian.PutUint32(zero[:], 0)
			if _, err = f.Write(zero[:]); err != nil {
				f.Close()
			}
		}
		if err != nil {
			refuse("/dev/cpu_dma_latency: %v (deep C-states stay allowed)", err)
		} else {
			ob.DMALatency = true
			release = func() { f.Close() }
		}
	}
	if asked.Priority > 0 {
		// Reset on fork: a thread or process started from this one does
		// not inherit real-time priority (cthread.h says how one did).
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(asked.Priority), Flags: unix.SCHED_FLAG_RESET_ON_FORK}
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			refuse("SCHED_FIFO priority %d: %v (run as root, or raise the rtprio limit in /etc/security/limits.conf)", asked.Priority, err)
		} else {
			ob.Policy, ob.Priority = "SCHED_FIFO", asked.Priority
		}
	}
	return setup, release
}

// lockMemory locks the process's memory, and reports whether it did.
//
// MCL_ONFAULT locks pages as they are first touched instead of faulting
// in every mapping now: a Go process maps far more than it uses (whole
// heap arenas), which would otherwise cost some 140 MB of locked memory
// and a start-up of page faults. What the loop touches is touched during
// set-up (NewRing writes its whole buffer, Engine.Run grows the stack)
// and the code is locked whole by lockCode. Kernels before 4.4 lack
// MCL_ONFAULT.
func lockMemory(refuse func(string, ...any)) bool {
	err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE | unix.MCL_ONFAULT)
	if err == unix.EINVAL {
		err = unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE)
	}
	if err != nil {
		refuse("mlockall: %v (raise the memlock limit)", err)
		return false
	}
	if err := lockCode(); err != nil {
		refuse("locking the program's code: %v", err)
	}
	return true
}

// lockCode locks, and so faults in now, every read-only mapping of a
// file: the program's code and read-only data (and a cgo build's
// libraries). Under MCL_ONFAULT a page of code runs from the page cache
// only once it has faulted in, and the loop's rare paths — the first
// xrun's recovery, the runtime's tables that growing a stack reads —
// would take that fault in the loop, at the worst moment. Writable
// mappings are left alone: locking them copies every page.
func lockCode() error {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(maps), "\n") {
		start, end, ok := codeMapping(line)
		if !ok {
			continue
		}
		if _, _, e := unix.RawSyscall(unix.SYS_MLOCK, uintptr(start), uintptr(end-start), 0); e != 0 {
			return fmt.Errorf("mlock %x-%x: %w", start, end, e)
		}
	}
	return nil
}

// codeMapping parses one line of /proc/self/maps and reports the range of
// a read-only, private mapping of a regular file (not a device such as a
// soundcard's buffer).
func codeMapping(line string) (start, end uint64, ok bool) {
	f := strings.Fields(line)
	if len(f) < 6 || !strings.HasPrefix(f[5], "/") || strings.HasPrefix(f[5], "/dev/") || f[4] == "0" {
		return 0, 0, false
	}
	if perms := f[1]; len(perms) != 4 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' {
		return 0, 0, false
	}
	a, b, found := strings.Cut(f[0], "-")
	if !found {
		return 0, 0, false
	}
	start, err1 := strconv.ParseUint(a, 16, 64)
	end, err2 := strconv.ParseUint(b, 16, 64)
	return start, end, err1 == nil && err2 == nil && end > start
}

// TouchPages reads one byte of every page of b, so that a mapping (a
// soundcard's buffer) has all its pages present before the loop starts:
// under mlockall(MCL_ONFAULT) a page is present, and locked, only once
// touched. A buffer that the loop or the kernel writes is to be written
// instead (clear(b)): reading fresh memory only maps the shared zero page.
func TouchPages(b []byte) (sum byte) {
	page := os.Getpagesize()
	for i := 0; i < len(b); i += page {
		sum += b[i]
	}
	return sum
}
