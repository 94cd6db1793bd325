package sysinfo

import (
	"slices"
	"testing"
	"testing/fstest"
)

// Context reads the uptime, the taint's letters, each governor once and
// a hypervisor's name from a machine's files; a bare-metal machine
// without cpufreq has none.
func TestContext(t *testing.T) {
	vm := fstest.MapFS{
		"proc/uptime":                   {Data: []byte("12345.67 20000.00\n")},
		"proc/sys/kernel/tainted":       {Data: []byte("4097\n")}, // P and O
		"proc/cpuinfo":                  {Data: []byte("processor\t: 0\nflags\t\t: fpu vme hypervisor lm\n")},
		"sys/class/dmi/id/sys_vendor":   {Data: []byte("QEMU\n")},
		"sys/class/dmi/id/product_name": {Data: []byte("Standard PC (Q35 + ICH9, 2009)\n")},
		"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor":  {Data: []byte("powersave\n")},
		"sys/devices/system/cpu/cpu1/cpufreq/scaling_governor":  {Data: []byte("performance\n")},
		"sys/devices/system/cpu/cpu10/cpufreq/scaling_governor": {Data: []byte("powersave\n")},
	}
	c := Context(vm)
	if c.UptimeS != 12345.67 || c.Tainted != 4097 || c.TaintFlags != "PO" || c.Virtual != "QEMU Standard PC (Q35 + ICH9, 2009)" ||
		!slices.Equal(c.Governors, []string{"performance", "powersave"}) {
		t.Errorf("VM context %+v", c)
	}
	metal := fstest.MapFS{"proc/cpuinfo": {Data: []byte("flags\t\t: fpu vme lm\n")}, "proc/sys/kernel/tainted": {Data: []byte("0\n")}}
	if c := Context(metal); c.Virtual != "" || c.Tainted != 0 || c.TaintFlags != "" || c.Governors != nil {
		t.Errorf("bare metal context %+v", c)
	}
}

// Steal is the share of the time between two readings, of every CPU
// state up to steal.
func TestStealPct(t *testing.T) {
	read := func(stat string) CPUTimes {
		return ReadCPUTimes(fstest.MapFS{"proc/stat": {Data: []byte(stat)}, "proc/loadavg": {Data: []byte("2.50 1.00 0.50 1/100 42\n")}})
	}
	a := read("cpu  100 0 100 700 0 0 0 100 0 0\ncpu0 1 2 3\n")
	b := read("cpu  200 0 200 1300 0 0 0 300 50 0\n")
	if a.Load1 != 2.5 || a.Total != 1000 || a.Steal != 100 {
		t.Errorf("reading %+v", a)
	}
	if got := StealPct(a, b); got != 20 { // 200 of 1000 jiffies
		t.Errorf("steal %.1f %%, want 20", got)
	}
	if got := StealPct(b, a); got != 0 {
		t.Errorf("backwards: %.1f", got)
	}
}
