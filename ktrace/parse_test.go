package ktrace

import "testing"

// Lines as this machine's tracefs printed them (trace_clock mono).
func TestParseLine(t *testing.T) {
	cases := []struct {
		line string
		want Event
	}{
		{`            bash-16560   [001] d..2.   782.982208: sched_switch: prev_comm=bash prev_pid=16560 prev_prio=120 prev_state=R+ ==> next_comm=kworker/1:0 next_pid=20768 next_prio=120`,
			Event{TS: 782982208000, CPU: 1, Kind: evSwitch, PID: 20768, Comm: "kworker/1:0", Prio: 120, PrevPID: 16560, PrevComm: "bash", PrevPrio: 120, PrevRunnable: true}},
		{`     latencytest-15981   [000] d.h2.   782.978914: sched_wakeup: comm=latencytest pid=15981 prio=19 target_cpu=000`,
			Event{TS: 782978914000, CPU: 0, Kind: evWakeup, PID: 15981, Comm: "latencytest", Prio: 19}},
		// Task names with spaces, dashes and brackets.
		{` Web Content-a-9   [003] d..2. 10.000001: sched_switch: prev_comm=Web Content-a prev_pid=9 prev_prio=120 prev_state=S ==> next_comm=[pool] x next_pid=77 next_prio=-1`,
			Event{TS: 10000001000, CPU: 3, Kind: evSwitch, PID: 77, Comm: "[pool] x", Prio: -1, PrevPID: 9, PrevComm: "Web Content-a", PrevPrio: 120}},
		{`          <idle>-0       [001] d.h1.  1000.000100: irq_handler_entry: irq=24 name=ahci[0000:00:1f.2]`,
			Event{TS: 1000000100000, CPU: 1, Kind: evIRQEntry, IRQ: 24, Name: "ahci[0000:00:1f.2]"}},
		{`          <idle>-0       [001] d.h1.  1000.000200: irq_handler_exit: irq=24 ret=handled`,
			Event{TS: 1000000200000, CPU: 1, Kind: evIRQExit, IRQ: 24}},
		{`     ksoftirqd/1-22      [001] ..s..   782.982230: softirq_entry: vec=3 [action=NET_RX]`,
			Event{TS: 782982230000, CPU: 1, Kind: evSoftEntry, IRQ: 3, Name: "NET_RX"}},
		{`     ksoftirqd/1-22      [001] ..s..   782.982254: softirq_exit: vec=3 [action=NET_RX]`,
			Event{TS: 782982254000, CPU: 1, Kind: evSoftExit, IRQ: 3, Name: "NET_RX"}},
		{`          <idle>-0       [000] d.h1.   782.980000: local_timer_entry: vector=236`,
			Event{TS: 782980000000, CPU: 0, Kind: evVectorEntry, Name: "local_timer"}},
		{`          <idle>-0       [000] d.h1.   782.980003: call_function_single_exit: vector=251`,
			Event{TS: 782980003000, CPU: 0, Kind: evVectorExit, Name: "call_function_single"}},
		// With record-tgid: "(  123)" between the CPU and the flags.
		{`            bash-16560   (  16560) [001] d..2.   782.982208: sched_wakeup: comm=x pid=5 prio=120 target_cpu=001`,
			Event{TS: 782982208000, CPU: 1, Kind: evWakeup, PID: 5, Comm: "x", Prio: 120, TargetCPU: 1}},
	}
	for _, c := range cases {
		got, ok := parseLine(c.line)
		if !ok || got != c.want {
			t.Errorf("parseLine(%q)\n = %+v, %v\nwant %+v", c.line, got, ok, c.want)
		}
	}
	for _, bad := range []string{
		"# tracer: nop",
		"",
		`     bash-1   [001] d..2.   1.000001: timer_start: timer=0000 function=x`,
		`     bash-1   [x] d..2.   1.000001: sched_switch: prev_comm=a`,
		`     bash-1   [001] d..2.   1.0x: sched_wakeup: comm=a pid=1 prio=1`,
		`     bash-1   [001] d..2.   1.000001: sched_switch: prev_comm=a prev_pid=1`,
	} {
		if ev, ok := parseLine(bad); ok {
			t.Errorf("parseLine(%q) = %+v, want not ok", bad, ev)
		}
	}
	if n, ok := lostEvents([]byte("CPU:1 [LOST 123 EVENTS]")); !ok || n != 123 {
		t.Errorf("lost = %d, %v", n, ok)
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add(`            bash-16560   [001] d..2.   782.982208: sched_switch: prev_comm=bash prev_pid=16560 prev_prio=120 prev_state=R+ ==> next_comm=kworker/1:0 next_pid=20768 next_prio=120`)
	f.Add(`     ksoftirqd/1-22      [001] ..s..   782.982230: softirq_entry: vec=3 [action=NET_RX]`)
	f.Fuzz(func(t *testing.T, line string) {
		ev, ok := parseLine(line)
		if ok && (ev.Kind < evSwitch || ev.Kind > evVectorExit || ev.TS < 0) {
			t.Errorf("parseLine(%q) = %+v", line, ev)
		}
	})
}

func TestCPUMask(t *testing.T) {
	for _, c := range []struct {
		cpus []int
		want string
	}{{[]int{0}, "00000001"}, {[]int{1, 3}, "0000000a"}, {[]int{0, 33}, "00000002,00000001"}} {
		if got := cpuMask(c.cpus); got != c.want {
			t.Errorf("cpuMask(%v) = %s, want %s", c.cpus, got, c.want)
		}
	}
}
