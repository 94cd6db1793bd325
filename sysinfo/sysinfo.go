// Package sysinfo describes the machine being measured: the facts a reader
// of a latency figure needs to know before trusting or comparing it.
package sysinfo

import (
	"bufio"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"latencytest/rundata"
)

// Read gathers the system description. Facts that cannot be read are left
// empty rather than guessed.
func Read() rundata.System {
	var s rundata.System
	s.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		s.KernelRelease = unix.ByteSliceToString(u.Release[:])
		s.KernelVersion = unix.ByteSliceToString(u.Version[:])
	}
	if b, err := os.ReadFile("/proc/cmdline"); err == nil {
		s.Cmdline = strings.TrimSpace(string(b))
	}
	rt, _ := os.ReadFile("/sys/kernel/realtime")
	dyn, _ := os.ReadFile("/sys/kernel/debug/sched/preempt")
	s.Preempt = PreemptModel(s.KernelVersion, string(rt), string(dyn))
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		s.CPUModel = CPUModel(bufio.NewScanner(f))
		f.Close()
	}
	s.CPUs = runtime.NumCPU()
	s.Context = Context(os.DirFS("/"))
	return s
}

// PreemptModel names the kernel's preemption model from the uname version
// string, /sys/kernel/realtime and, on PREEMPT_DYNAMIC kernels, debugfs's
// sched/preempt (whose current choice is in parentheses). Any of them may be
// empty. The answer is one of "PREEMPT_RT", "full", "voluntary", "none",
// "dynamic" (mode unknown without debugfs), optionally as "dynamic (full)".
func PreemptModel(unameV, realtime, dynamic string) string {
	if strings.TrimSpace(realtime) == "1" || strings.Contains(unameV, "PREEMPT_RT") {
		return "PREEMPT_RT"
	}
	if strings.Contains(unameV, "PREEMPT_DYNAMIC") {
		if i := strings.Index(dynamic, "("); i >= 0 {
			if j := strings.Index(dynamic[i:], ")"); j > 0 {
				return "dynamic (" + dynamic[i+1:i+j] + ")"
			}
		}
		return "dynamic"
	}
	for _, f := range strings.Fields(unameV) {
		if f == "PREEMPT" {
			return "full"
		}
	}
	return "voluntary or none"
}

// CPUModel returns the first "model name" of /proc/cpuinfo (x86), or the
// "Hardware"/"CPU part" style fields other architectures use.
func CPUModel(sc *bufio.Scanner) string {
	var fallback string
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "model name":
			return v
		case "Hardware", "cpu model", "uarch":
			if fallback == "" {
				fallback = v
			}
		}
	}
	return fallback
}
