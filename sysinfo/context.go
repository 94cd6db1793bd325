package sysinfo

import (
	"bufio"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"latencytest/rundata"
)

// taintLetters are the kernel's taint flags by bit, as /proc/sys/kernel/
// tainted's bits and the letters of an oops (kernel/panic.c's taint_flags).
const taintLetters = "PFSRMBUDAWCIOELKXTN"

// Context reads, from the root file system root (os.DirFS("/")), what
// besides the kernel changes a latency figure: the uptime, the kernel's
// taint (a proprietary or out-of-tree module), the CPU frequency
// governors, and whether the machine is a virtual one. What cannot be
// read is left empty.
func Context(root fs.FS) rundata.Context {
	var c rundata.Context
	if b, err := fs.ReadFile(root, "proc/uptime"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			c.UptimeS, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	if b, err := fs.ReadFile(root, "proc/sys/kernel/tainted"); err == nil {
		c.Tainted, c.TaintFlags = Taint(strings.TrimSpace(string(b)))
	}
	c.Governors = governors(root)
	c.Virtual = virtual(root)
	return c
}

// Taint decodes /proc/sys/kernel/tainted: its value and its letters, in
// bit order ("PO": a proprietary module and an out-of-tree one).
func Taint(s string) (uint64, string) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, ""
	}
	var b strings.Builder
	for i := 0; i < len(taintLetters); i++ {
		if v&(1<<i) != 0 {
			b.WriteByte(taintLetters[i])
		}
	}
	return v, b.String()
}

// governors are the CPUs' cpufreq governors, each once, sorted; none
// where the kernel has no cpufreq (a VM).
func governors(root fs.FS) []string {
	dirs, _ := fs.Glob(root, "sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")
	var out []string
	for _, p := range dirs {
		if b, err := fs.ReadFile(root, p); err == nil {
			if g := strings.TrimSpace(string(b)); g != "" && !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	slices.Sort(out)
	return out
}

// virtual says whether the CPU reports a hypervisor (the cpuinfo flag),
// and which, from the firmware's vendor and product ("QEMU Standard PC");
// "" on bare metal.
func virtual(root fs.FS) string {
	f, err := root.Open("proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	vm := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "flags" {
			vm = slices.Contains(strings.Fields(v), "hypervisor")
			break
		}
	}
	if !vm {
		return ""
	}
	var name []string
	for _, p := range []string{"sys_vendor", "product_name"} {
		if b, err := fs.ReadFile(root, path.Join("sys/class/dmi/id", p)); err == nil {
			if s := strings.TrimSpace(string(b)); s != "" {
				name = append(name, s)
			}
		}
	}
	if len(name) == 0 {
		return "virtual machine"
	}
	return strings.Join(name, " ")
}

// CPUTimes is what a phase's load and steal come from: /proc/loadavg's
// one-minute figure, and /proc/stat's total and steal jiffies.
type CPUTimes struct {
	Load1        float64
	Total, Steal uint64
}

// ReadCPUTimes reads CPUTimes from root; zero where it cannot.
func ReadCPUTimes(root fs.FS) CPUTimes {
	var t CPUTimes
	if b, err := fs.ReadFile(root, "proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			t.Load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	if b, err := fs.ReadFile(root, "proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		if len(f) > 8 && f[0] == "cpu" {
			for i, v := range f[1:] {
				n, _ := strconv.ParseUint(v, 10, 64)
				if i < 8 { // user … steal; guest time is in user already
					t.Total += n
				}
				if i == 7 {
					t.Steal = n
				}
			}
		}
	}
	return t
}

// StealPct is the share of the CPUs' time between a and b that the
// hypervisor gave to others (steal), percent; 0 without one.
func StealPct(a, b CPUTimes) float64 {
	if b.Total <= a.Total || b.Steal < a.Steal {
		return 0
	}
	return 100 * float64(b.Steal-a.Steal) / float64(b.Total-a.Total)
}
