package check

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"latencytest/rundata"
)

// taskStat builds a /proc/PID/task/TID/stat line; the name holds a space
// and a parenthesis, as names may.
func taskStat(tid int, comm string, kernel bool, prio, policy int) string {
	f := make([]string, 52)
	for i := range f {
		f[i] = "0"
	}
	f[0], f[1], f[2] = strconv.Itoa(tid), "("+comm+")", "S"
	if kernel {
		f[8] = strconv.Itoa(pfKthread | 0x40)
	}
	f[39], f[40] = strconv.Itoa(prio), strconv.Itoa(policy)
	return strings.Join(f, " ") + "\n"
}

// addTask puts a thread into a /proc fixture.
func addTask(fsys fstest.MapFS, pid, tid int, comm string, kernel bool, prio, policy int, cpus string) {
	dir := "proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid)
	fsys[dir+"/stat"] = file(taskStat(tid, comm, kernel, prio, policy))
	fsys[dir+"/status"] = file("Name:\t" + comm + "\nCpus_allowed:\tf\nCpus_allowed_list:\t" + cpus + "\n")
}

func auditEnv(prio int, cpus []int) *env {
	fsys := fstest.MapFS{}
	addTask(fsys, 18, 18, "migration/0", true, 99, schedFIFO, "0")
	addTask(fsys, 21, 21, "migration/1", true, 99, schedFIFO, "1")
	addTask(fsys, 130, 130, "irq/129-snd_hda_intel:card0", true, 90, schedFIFO, "0-3")
	addTask(fsys, 131, 131, "irq/16-ehci_hcd:usb1", true, 50, schedFIFO, "0-3")
	addTask(fsys, 700, 700, "jackd", false, 10, 0, "0-3")              // SCHED_OTHER main thread: not listed
	addTask(fsys, 700, 703, "jackd (rt)", false, 85, schedFIFO, "0-3") // its real-time thread
	addTask(fsys, 800, 800, "hog", false, 70, schedRR, "0-3")
	addTask(fsys, 900, 901, "dl", false, 0, schedDeadline, "2")
	addTask(fsys, 950, 950, "pinned", false, 95, schedFIFO, "3")
	return &env{fsys: fsys, audioPrio: prio, cpus: cpus}
}

func tasksByComm(ts []rundata.RTTask) map[string]rundata.RTTask {
	m := map[string]rundata.RTTask{}
	for _, t := range ts {
		m[t.Comm] = t
	}
	return m
}

func TestRTTaskAudit(t *testing.T) {
	ts := auditEnv(80, []int{0, 1}).rtTasks(80, []int{0, 1})
	m := tasksByComm(ts)
	if len(ts) != 8 {
		t.Fatalf("%d real-time threads, want 8 (the SCHED_OTHER one left out): %+v", len(ts), ts)
	}
	want := map[string]bool{ // comm: can run before a FIFO 80 thread on CPUs 0-1
		"migration/0": true, "migration/1": true, "irq/129-snd_hda_intel:card0": true,
		"irq/16-ehci_hcd:usb1": false, "jackd (rt)": true, "hog": false,
		"dl":     false, // SCHED_DEADLINE, but only on CPU 2
		"pinned": false, // FIFO 95, but only on CPU 3
	}
	for comm, w := range want {
		if got, ok := m[comm]; !ok || got.Preempts != w {
			t.Errorf("%s: listed %v, preempts %v, want listed, preempts %v", comm, ok, got.Preempts, w)
		}
	}
	if j := m["jackd (rt)"]; j.TID != 703 || j.PID != 700 || j.Policy != "SCHED_FIFO" || j.Priority != 85 || j.CPUs != "0-3" || j.Kernel {
		t.Errorf("jackd's thread: %+v", j)
	}
	if !m["migration/0"].Kernel || !m["irq/129-snd_hda_intel:card0"].SoundIRQ || m["irq/16-ehci_hcd:usb1"].SoundIRQ {
		t.Errorf("kernel/sound flags: %+v", ts)
	}
	if ts[0].Priority != 99 || ts[len(ts)-1].Policy != "SCHED_DEADLINE" {
		t.Errorf("not sorted by priority: %+v", ts)
	}
	// On every CPU, the deadline task and the pinned one count too; at
	// SCHED_OTHER every real-time thread does.
	all := tasksByComm(auditEnv(80, nil).rtTasks(80, nil))
	if !all["dl"].Preempts || !all["pinned"].Preempts || all["hog"].Preempts {
		t.Errorf("any CPU: %+v", all)
	}
	for _, tk := range auditEnv(0, nil).rtTasks(0, nil) {
		if !tk.Preempts {
			t.Errorf("at SCHED_OTHER %s does not preempt", tk.Comm)
		}
	}
}

func TestRTTasksFinding(t *testing.T) {
	f := checkRTTasks(auditEnv(80, []int{0, 1}))[0]
	if f.Status != WARN || !strings.Contains(f.Value, "8 real-time threads; 4 can run before the audio thread at FIFO 80") ||
		!strings.Contains(f.Value, "jackd (rt) (703) FIFO 85") || f.Fix == "" {
		t.Errorf("finding: %+v", f)
	}
	if !strings.Contains(f.Value, "soundcard thread irq/129-snd_hda_intel:card0 (130) FIFO 90: 4 of 7 real-time threads above it") {
		t.Errorf("sound IRQ standing: %q", f.Value)
	}
	// Only the kernel's own threads and the soundcard's above it: OK.
	if f := checkRTTasks(auditEnv(86, []int{0, 1}))[0]; f.Status != OK {
		t.Errorf("at FIFO 86: %+v", f)
	}
	if f := checkRTTasks(&env{fsys: fstest.MapFS{}})[0]; f.Status != INFO {
		t.Errorf("no /proc: %+v", f)
	}
}

func TestRTThrottle(t *testing.T) {
	cases := []struct{ runtime, status, value string }{
		{"950000", WARN, "950000 of every 1000000 µs; a throttled audio thread sleeps up to 50.0 ms"},
		{"-1", OK, "off"},
		{"1000000", OK, "off"},
		{"x", INFO, "unreadable"},
	}
	for _, c := range cases {
		e := &env{fsys: fstest.MapFS{
			"proc/sys/kernel/sched_rt_runtime_us": file(c.runtime + "\n"),
			"proc/sys/kernel/sched_rt_period_us":  file("1000000\n"),
		}}
		f := checkRTThrottle(e)[0]
		if f.Status != c.status || !strings.Contains(f.Value, c.value) {
			t.Errorf("runtime %s: %s %q, want %s with %q", c.runtime, f.Status, f.Value, c.status, c.value)
		}
	}
	if f := checkRTThrottle(&env{fsys: fstest.MapFS{}})[0]; f.Status != INFO {
		t.Errorf("unreadable: %+v", f)
	}
}

func TestParseCPUs(t *testing.T) {
	for s, want := range map[string]string{"0-3,6": "[0 1 2 3 6] true", "2": "[2] true", "": "[] false", "3-1": "[] false", "a": "[] false", "1-": "[] false"} {
		got, ok := parseCPUs(s)
		if g := fmt.Sprint(got, " ", ok); g != want {
			t.Errorf("parseCPUs(%q) = %s, want %s", s, g, want)
		}
	}
}

// A run records the check's findings and the task list as it starts: the
// list comes from the findings' walk of /proc, not a second one; another
// audio thread gets a walk of its own.
func TestRTTasksWalkedOnce(t *testing.T) {
	e := auditEnv(80, []int{0, 1})
	first := run(e)
	fsys := e.fsys.(fstest.MapFS)
	addTask(fsys, 990, 990, "late", false, 99, schedFIFO, "0")
	if ts := e.rtTasks(80, []int{0, 1}); len(ts) != 8 {
		t.Errorf("%d tasks after the findings' walk, want its 8 (not walked again)", len(ts))
	}
	if ts := e.rtTasks(50, []int{0, 1}); len(ts) != 9 {
		t.Errorf("%d tasks for another audio thread, want 9 from a walk of its own", len(ts))
	}
	if len(first) == 0 {
		t.Error("no findings")
	}
}
