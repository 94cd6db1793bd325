package audio

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"latencytest/rundata"
)

// RTSetup applies the real-time setup asked for to the calling OS thread
// (scheduling policy, priority and affinity are per thread on Linux) and to
// the process (mlockall). A refused step does not stop the measurement: it
// is recorded in the result, whose Obtained side says what really holds.
// The returned release undoes what must not outlive the run: the
// /dev/cpu_dma_latency request lasts exactly as long as its file is open.
func RTSetup(asked rundata.RTParams) (setup rundata.RTSetup, release func()) {
	setup.Asked = asked
	ob := &setup.Obtained
	ob.Policy = "SCHED_OTHER"
	refuse := func(format string, a ...any) { setup.Refused = append(setup.Refused, fmt.Sprintf(format, a...)) }

	if asked.Priority > 0 {
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(asked.Priority)}
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			refuse("SCHED_FIFO priority %d: %v (run as root, or raise the rtprio limit in /etc/security/limits.conf)", asked.Priority, err)
		} else {
			ob.Policy, ob.Priority = "SCHED_FIFO", asked.Priority
		}
	}
	if asked.Mlockall {
		// MCL_ONFAULT locks pages as they are first touched instead of
		// faulting in every mapping now: a Go process maps far more
		// than it uses (whole heap arenas), which would otherwise cost
		// some 140 MB of locked memory and a start-up of page faults.
		// What the loop touches is touched during set-up (NewRing
		// writes its whole buffer). Kernels before 4.4 lack it.
		err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE | unix.MCL_ONFAULT)
		if err == unix.EINVAL {
			err = unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE)
		}
		if err != nil {
			refuse("mlockall: %v (raise the memlock limit)", err)
		} else {
			ob.Mlockall = true
		}
	}
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
	return setup, release
}
