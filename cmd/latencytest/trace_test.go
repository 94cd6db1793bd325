package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/internal/culprit"
	"latencytest/internal/procfile"
	"latencytest/internal/threads"
	"latencytest/ktrace"
	"latencytest/rundata"
)

// The known culprit: this test binary, named lt-culprit, at SCHED_FIFO 90
// on CPU 0, busy-looping 5 ms every 200 ms and saying when, by its clock.
const (
	culpritName   = "lt-culprit"
	culpritBusy   = 5 * time.Millisecond
	culpritBursts = 15
)

// known is the known culprit: SCHED_FIFO 90 on CPU 0, above the audio
// thread at 80, busy-looping 5 ms every 200 ms.
var known = culprit.Config{Name: culpritName, CPU: 0, Prio: 90, Busy: culpritBusy, Gap: 200 * time.Millisecond,
	Bursts: culpritBursts, Settle: 300 * time.Millisecond}

func runCulprit() {
	if err := culprit.Run(known, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// tracerInstances lists latencytest's trace instances left in tracefs.
func tracerInstances(t *testing.T) []string {
	t.Helper()
	ms, _ := filepath.Glob("/sys/kernel/tracing/instances/latencytest-*")
	return ms
}

// run --trace with a known culprit: every spike inside one of its bursts
// is put down to it, by name and policy, with the time it ran there
// (± 20 %), it tops the phase's culprit table, an xrun's line names it,
// and the tracer is left as it was found.
func TestRunTraceKnownCulprit(t *testing.T) {
	allowed, err := threads.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 || allowed[0] != known.CPU {
		t.Fatalf("allowed CPUs %v: the test needs CPU %d, the culprit's, and another (CI machines have them)", allowed, known.CPU)
	}
	// Under run --cpus the thread on the culprit's CPU has its spikes,
	// each explained on that CPU, and the other CPU's thread none of them;
	// a stall of the other's loop is its spike, explained on its CPU.
	t.Run("one thread", func(t *testing.T) { traceKnownCulprit(t, -1, "--affinity", strconv.Itoa(known.CPU)) })
	t.Run("cpus", func(t *testing.T) {
		traceKnownCulprit(t, allowed[1], "--cpus", fmt.Sprintf("%d,%d", known.CPU, allowed[1]),
			"--test-stall", fmt.Sprintf("%d:%v@%d", stallAt, stallFor, allowed[1]))
	})
}

// The stall of the other CPU's loop in TestRunTraceKnownCulprit's --cpus
// case: 20 ms at its period 2000 (2.7 s in), between the culprit's bursts
// or not, on a CPU the culprit never runs on.
const (
	stallAt  = 2000
	stallFor = 20 * time.Millisecond
)

// traceKnownCulprit runs TestRunTraceKnownCulprit with the threads where
// asks; stalled is the CPU whose loop stalls (-1: none).
func traceKnownCulprit(t *testing.T, stalled int, where ...string) {
	cpus := where[0] == "--cpus"
	out := filepath.Join(t.TempDir(), "out")
	prom := filepath.Join(t.TempDir(), "lt.prom")
	// Spikes of 3 ms or more, as in the VM test: the culprit's 5 ms bursts
	// make them, and an idle CPU's local timer coming late does not. On
	// this VM that came 26–53 times in 5 s, 0.6–3.5 ms each, 36–72 ms in
	// all (the host scheduling a halted vCPU, which the guest's tracer
	// sees as idle), and topped the table above the culprit's 60 ms in 5
	// of 9 runs with every spike above half a period recorded, 1 of the 3
	// on the code before this change to the test (1 Dec 2026, 20:40 UTC).
	//
	// The culprit starts once the run measures (its first line, said as
	// the stream opens), not after a fixed 700 ms: a loaded host can open
	// the stream later than the culprit's first bursts (a fresh clone's
	// make test on a busy host had spikes in only 9 of the 15).
	// Every spike's window is dumped (LATENCYTEST_TRACE_DEBUG), for the
	// message of a spike misjudged.
	args := append([]string{"run", "--driver", "timer", "--tests", "idle", "--duration", "5s"}, where...)
	cmd, stderr := started(t, []string{"LATENCYTEST_TRACE_DEBUG=1"}, streamLine, append(args,
		"--cpu-load", "0", "--period", "64", "--periods", "3", "--trace", "--trace-above", "3ms", "--out", out, "--no-report", "--metrics-file", prom)...)
	culp := exec.Command(os.Args[0])
	culp.Env = append(os.Environ(), "LT_CULPRIT=1")
	var culpErr strings.Builder
	culp.Stderr = &culpErr
	said, err := culp.Output()
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("culprit: %v (the trace test needs root)\n%s", err, culpErr.String())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	bursts, err := culprit.Parse(string(said))
	if err != nil {
		t.Fatal(err)
	}
	r := readRun(t, out)
	if r.Trace == nil || !r.Trace.Enabled {
		t.Fatalf("run.json trace: %+v", r.Trace)
	}
	ss, err := rundata.ReadSpikes(out)
	if err != nil {
		t.Fatal(err)
	}
	caused, stallSeen := 0, false
	for _, sp := range ss {
		if sp.CPU == stalled && sp.Period == stallAt && sp.LatencyNS >= int64(stallFor) {
			stallSeen = true
		}
		if sp.CPU != known.CPU {
			if !cpus {
				t.Errorf("period %d: a spike on CPU %d, want all on the audio thread's %d", sp.Period, sp.CPU, known.CPU)
			}
			for _, c := range sp.Causes {
				if c.Name == culpritName {
					t.Errorf("period %d on CPU %d: the culprit, on CPU %d, among its causes: %v", sp.Period, sp.CPU, known.CPU, sp.Causes)
				}
			}
			continue
		}
		d, w := sp.DueNS, sp.DueNS+sp.LatencyNS
		for _, b := range bursts {
			if !b.Caused(d, w) {
				continue
			}
			caused++
			if msg := b.Judge(known, d, w, sp.Causes); msg != "" {
				t.Errorf("period %d, %.2f ms late: %s (%v)\n%s", sp.Period, float64(sp.LatencyNS)/1e6, msg, b, spikeAccount(sp, r.Trace)+windowDump(stderr.String(), d))
			}
		}
	}
	if stalled >= 0 && !stallSeen {
		t.Errorf("no spike at period %d on CPU %d, whose loop stalled %v there", stallAt, stalled, stallFor)
	}
	if caused < culpritBursts*2/3 {
		t.Errorf("%d spikes inside the culprit's %d bursts, want at least %d", caused, culpritBursts, culpritBursts*2/3)
	}
	// The culprit is the phase's first thread. The machine's own stops
	// (the CPU idle while the wakeup came late: a VM's host, 92 ms of
	// them in one rehearsal's 5 s against the culprit's 56) are no
	// thread's and may outweigh it.
	cs, _ := rundata.Culprits(ss)
	threads := slices.DeleteFunc(slices.Clone(cs), func(c rundata.Cause) bool {
		return c.Kind != rundata.CauseThread && c.Kind != rundata.CauseHeld
	})
	if len(threads) == 0 || threads[0].Name != culpritName {
		var table []string
		for _, c := range cs {
			table = append(table, fmt.Sprintf("%s %.2f ms", c, float64(c.NS)/1e6))
		}
		t.Errorf("the phase's culprits: %s; want %s the first thread", strings.Join(table, ", "), culpritName)
	}
	xrun := "] xrun at period"
	if cpus {
		xrun = fmt.Sprintf(" CPU %d] xrun at period", known.CPU)
	}
	if !slices.ContainsFunc(strings.Split(stderr.String(), "\n"), func(l string) bool {
		return strings.Contains(l, xrun) && strings.Contains(l, culpritName+" (SCHED_FIFO 90)")
	}) {
		t.Errorf("no xrun line names the culprit:\n%s", stderr.String())
	}
	if left := tracerInstances(t); len(left) != 0 {
		t.Errorf("trace instances left behind: %v", left)
	}
	// The metrics count the spikes spikes.json holds, by their largest cause.
	byCause := map[string]float64{}
	countByCause(byCause, ss)
	sameByCause(t, prom, byCause)
}

// spikeAccount is all the tracer said of sp, and of the run's trace, for
// a failure's message: a misjudged spike cannot be looked at again.
func spikeAccount(sp rundata.Spike, tr *rundata.Trace) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "  cpu %d (cpus %v), wakeup %d ns, run delay %d ns, unexplained %d ns, events lost %v; trace: %d lost, %d dropped\n",
		sp.CPU, sp.CPUs, sp.WakeupNS, sp.RunDelayNS, sp.UnexplainedNS, sp.EventsLost, tr.Lost, tr.Dropped)
	for _, sl := range sp.Strip {
		fmt.Fprintf(&sb, "  +%.3f ms %s %s %.3f ms\n", float64(sl.StartNS)/1e6, sl.Kind, sl.Name, float64(sl.NS)/1e6)
	}
	return sb.String()
}

// windowDump is the trace's events of the window from due, as the run
// dumped them on stderr (ktrace.Options.Debug).
func windowDump(stderr string, due int64) string {
	_, rest, ok := strings.Cut(stderr, fmt.Sprintf("ktrace: the window %d–", due))
	if !ok {
		return "  (no dump of the window)\n"
	}
	var sb strings.Builder
	for i, line := range strings.Split(rest, "\n") {
		if i > 0 && !strings.HasPrefix(line, "  ") {
			break
		}
		sb.WriteString("  " + line + "\n")
	}
	return sb.String()
}

// countByCause adds the spikes ss to byCause, by their largest cause
// ("kind/name", as promByCause keys them).
func countByCause(byCause map[string]float64, ss []rundata.Spike) {
	for _, sp := range ss {
		if len(sp.Causes) > 0 {
			byCause[sp.Causes[0].Kind+"/"+sp.Causes[0].Name]++
		}
	}
}

// sameByCause checks that the metrics file prom counts the spikes byCause
// counts, cause by cause, the culprit among them.
func sameByCause(t *testing.T, prom string, byCause map[string]float64) {
	t.Helper()
	got := promByCause(t, prom)
	if len(got) != len(byCause) || got[rundata.CauseThread+"/"+culpritName] == 0 {
		t.Errorf("metrics file's spikes by cause %v, spikes.json's %v", got, byCause)
	}
	for k, n := range byCause {
		if got[k] != n {
			t.Errorf("spikes with largest cause %s: metrics file %v, spikes.json %v", k, got[k], n)
		}
	}
}

// run --trace under an ordinary (SCHED_OTHER) load only, latencytest's
// hackbench stressor: the late time is put down to hackbench's tasks, the
// kernel's work and the machine's other tasks by their names, and never
// mostly left unexplained. The audio thread is on CPU 0, latencytest's own
// work off it; the stressor runs on both.
func TestRunTraceUnderHackbench(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(binary, "run", "--driver", "timer", "--tests", "hackbench", "--duration", "8s", "--affinity", "0",
		"--cpu-load", "0", "--period", "64", "--trace", "--trace-above", "100us", "--out", out, "--no-report", "--quiet")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s (the trace test needs root)", err, b)
	}
	ss, err := rundata.ReadSpikes(out)
	if err != nil {
		t.Fatal(err)
	}
	// Under this load a wakeup later than 100 µs is about one in a hundred
	// here (p99 80–110 µs, docs/benchmarks.md): dozens in 8 s.
	if len(ss) < 5 {
		t.Fatalf("%d spikes above 100 µs in 8 s of hackbench, want at least 5 to judge", len(ss))
	}
	cs, total := rundata.Culprits(ss)
	share := func(ns int64) float64 { return 100 * float64(ns) / float64(total) }
	const load = "latencytest stressor hackbench"
	var loadNS, othersNS int64
	for _, c := range cs {
		t.Logf("%5.1f %%  %s %s", share(c.NS), c.Kind, c)
		switch {
		case c.Name == load:
			loadNS += c.NS
		case (c.Kind == rundata.CauseThread || c.Kind == rundata.CauseHeld) && !strings.HasPrefix(c.Name, "latencytest"):
			othersNS += c.NS
		case c.Name == "unexplained" && c.NS*2 > total:
			t.Errorf("%.1f of %.1f ms of the spikes unexplained", float64(c.NS)/1e6, float64(total)/1e6)
		}
	}
	// The machine's other tasks (a build beside the test) are named too,
	// and take their share: hackbench's is judged on the rest.
	if loadNS*4 < total-othersNS {
		t.Errorf("hackbench's tasks took %.1f %% of the late time, the machine's other tasks %.1f %%: want a quarter or more of the rest", share(loadNS), share(othersNS))
	}
	// Any other thread that took more than a twentieth of the late time is
	// named as the kernel's or the machine's thread of that id was named:
	// a kernel thread by its flags, another by its command name (this VM's
	// own agent, process_api's tokio-rt-worker, is one).
	byName, tids := map[string]int64{}, map[string]int{}
	for _, sp := range ss {
		for _, c := range sp.Causes {
			if (c.Kind == rundata.CauseThread || c.Kind == rundata.CauseHeld) && c.Name != load {
				byName[c.Name] += c.NS
				tids[c.Name] = c.PID
			}
		}
	}
	for name, ns := range byName {
		if ns*20 <= total {
			continue
		}
		comm, kernel, ok := threadOf(tids[name])
		switch {
		case !ok:
			t.Logf("%s (%d): %.1f %% of the late time, ended since", name, tids[name], share(ns))
		case kernel:
			t.Logf("%s (%d): %.1f %% of the late time, the kernel's", name, tids[name], share(ns))
		case comm != name:
			t.Errorf("%s (%d): %.1f %% of the late time, but thread %d is %q", name, tids[name], share(ns), tids[name], comm)
		default:
			t.Logf("%s (%d): %.1f %% of the late time, a task of this machine's", name, tids[name], share(ns))
		}
	}
}

// threadOf reads thread tid's command name and whether it is the
// kernel's (the PF_KTHREAD flag, field 9 of its stat) from /proc; ok is
// false once it has ended.
func threadOf(tid int) (comm string, kernel, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", tid, tid))
	if err != nil {
		return "", false, false
	}
	st, ok := procfile.ParseStat(b)
	return st.Comm, st.Flags&0x00200000 != 0, ok && st.Sched
}

// Without tracefs the run goes on, says in one line why causes were not
// recorded, and measures as it would.
func TestRunTraceWithoutTracefs(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	// A mount namespace of its own, with /sys/kernel hidden under an
	// empty tmpfs: no tracefs to find or mount.
	cmd := exec.Command("unshare", "--mount", "sh", "-c",
		`mount --make-rprivate / && mount -t tmpfs none /sys/kernel && exec "$@"`, "sh",
		binary, "run", "--driver", "timer", "--tests", "idle", "--duration", "1s", "--cpu-load", "0", "--trace",
		"--out", out, "--no-report", "--quiet")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run without tracefs: %v\n%s (the test needs root and unshare)", err, b)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "trace:") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "causes not recorded: no tracefs") {
		t.Errorf("trace lines %q, want one saying why", lines)
	}
	r := readRun(t, out)
	if r.Trace == nil || r.Trace.Enabled || !strings.Contains(r.Trace.Note, "no tracefs") {
		t.Errorf("run.json trace %+v", r.Trace)
	}
	// 750 periods in 1 s at 64 frames, less those an xrun on this shared
	// machine skipped (the virtual buffer restarts after it).
	ph := r.Phases[0]
	if skipped := int64(ph.XrunMSTotal*1000/r.PeriodUS) + int64(ph.Xruns); ph.Periods > 751 || ph.Periods < 749-skipped {
		t.Errorf("%d periods in 1 s at 64 frames with %d xruns of %.1f ms, want 750 less those", ph.Periods, ph.Xruns, ph.XrunMSTotal)
	}
	if _, err := os.Stat(filepath.Join(out, rundata.SpikesFile)); !os.IsNotExist(err) {
		t.Errorf("spikes.json written without a trace: %v", err)
	}
}

// monitor --trace over rotations: each directory's spikes.json holds the
// spikes of its own periods (numbered within it, due in its rotation),
// none twice, and the metrics count the spikes of all directories by
// their largest cause; the known culprit is found.
func TestMonitorTraceRotation(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "res")
	prom := filepath.Join(dir, "lt.prom")
	const rotate = time.Second
	cmd, se := started(t, nil, "metrics: http://", "monitor", "--rotate", rotate.String(), "--keep", "0", "--affinity", "0",
		"--period", "64", "--periods", "3", "--trace", "--out", out, "--listen", "127.0.0.1:0", "--metrics-file", prom)
	time.Sleep(700 * time.Millisecond)
	culp := exec.Command(os.Args[0])
	culp.Env = append(os.Environ(), "LT_CULPRIT=1")
	if out, err := culp.CombinedOutput(); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("culprit: %v (the trace test needs root)\n%s", err, out)
	}
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(unix.SIGINT)
	if code, _ := exitCode(t, cmd, time.Now()); code != 130 {
		t.Fatalf("exit %d, want 130: %s", code, se)
	}
	names := rotations(t, out)
	if len(names) < 3 {
		t.Fatalf("%d rotations: %v", len(names), names)
	}
	byCause := map[string]float64{}
	for _, name := range names {
		d := filepath.Join(out, name)
		run := readRun(t, d)
		if run.Trace == nil || !run.Trace.Enabled {
			t.Fatalf("%s: run.json trace %+v", name, run.Trace)
		}
		ph := run.Phases[0]
		samples := readSamples(t, d, ph)
		ss, err := rundata.ReadSpikes(d)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, sp := range ss {
			if sp.Period < 0 || sp.Period >= int64(len(samples)) {
				t.Errorf("%s: spike at period %d of %d", name, sp.Period, len(samples))
				continue
			}
			if s := samples[sp.Period]; s.Due-sp.DueNS > rundata.DueTolerance || sp.DueNS-s.Due > rundata.DueTolerance ||
				s.Latency() != sp.LatencyNS {
				t.Errorf("%s: spike at period %d due %d, %d ns late; the period is due %d, %d ns late",
					name, sp.Period, sp.DueNS, sp.LatencyNS, s.Due, s.Latency())
			}
		}
		countByCause(byCause, ss)
	}
	sameByCause(t, prom, byCause)
	if left := tracerInstances(t); len(left) != 0 {
		t.Errorf("trace instances left behind: %v", left)
	}
}

// A run --trace killed with SIGKILL runs none of its own clean-up: its
// guard leaves the tracer as found, the run's trace instance removed
// within a second, and then ends itself.
func TestRunTraceKilledLeavesTracerAsFound(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(binary, "run", "--driver", "timer", "--tests", "idle", "--duration", "30s", "--cpu-load", "0", "--trace",
		"--out", out, "--no-report", "--quiet")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	owner, err := procfile.ProcOf(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	inst := filepath.Join("/sys/kernel/tracing/instances", ktrace.InstanceName(owner))
	// Killed once the phase measures: the guard, started before it, is
	// ready then (killed sooner, while it starts, it cannot clean up, and
	// the next run that traces removes the instance: docs/spikes.md).
	samples := filepath.Join(out, "samples", "01-idle.bin")
	var guards []int
	for deadline, size := time.Now().Add(10*time.Second), int64(-1); len(guards) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no trace instance %s, tracer guard and samples within 10 s\n%s", inst, stderr.String())
		}
		fi, err := os.Stat(samples)
		if err == nil && size >= 0 && fi.Size() > size && isDir(inst) {
			guards = children(cmd.Process.Pid, traceGuardCommand)
		}
		if err == nil {
			size = fi.Size()
		}
	}
	// The guard's signal comes when the thread that started it ends, which
	// may be before the run's last thread has closed the trace pipes: the
	// instance is busy (EBUSY) until then, and the guard waits for it. The
	// time is logged.
	killed := time.Now()
	cmd.Process.Kill()
	cmd.Wait()
	for deadline := killed.Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Lstat(inst); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed run's trace instance %s is still there 10 s after its SIGKILL", inst)
		}
	}
	t.Logf("the instance was removed %v after the run's SIGKILL", time.Since(killed).Round(time.Millisecond))
	for deadline := time.Now().Add(2 * time.Second); alive(guards[0]); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the tracer guard %d still runs 2 s after it removed the instance", guards[0])
		}
	}
}

// Two runs --trace, each as PID 1 of a PID namespace of its own (two
// containers), the second started while the first traces: each gets an
// instance of its own and its guard, the second's end leaves the first's
// instance tracing, and neither leaves one behind.
func TestRunTraceTwoPIDNamespaces(t *testing.T) {
	needRoot(t)
	self, err := procfile.Self()
	if err != nil {
		t.Fatal(err)
	}
	start := func(d string) (*exec.Cmd, *strings.Builder, string) {
		out := filepath.Join(t.TempDir(), "out")
		cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", binary, "run", "--driver", "timer", "--tests", "idle",
			"--duration", d, "--cpu-load", "0", "--trace", "--out", out, "--no-report", "--quiet")
		var se strings.Builder
		cmd.Stderr = &se
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, &se, out
	}
	ours := func() []string {
		var names []string
		for _, m := range tracerInstances(t) {
			// latencytest-NS-PID-START, of a PID 1 of another namespace
			if f := strings.Split(filepath.Base(m), "-"); len(f) == 4 && f[2] == "1" && f[1] != strconv.Itoa(int(self.NS)) {
				names = append(names, filepath.Base(m))
			}
		}
		return names
	}
	waitFor := func(n int, when string) []string {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if got := ours(); len(got) == n {
				return got
			}
		}
		t.Fatalf("%s: PID 1 trace instances %v, want %d", when, ours(), n)
		return nil
	}
	first, se1, out1 := start("4s")
	one := waitFor(1, "the first traces")
	second, se2, _ := start("1s")
	waitFor(2, "both trace")
	if err := second.Wait(); err != nil {
		t.Fatalf("second run: %v\n%s", err, se2.String())
	}
	if got := ours(); len(got) != 1 || got[0] != one[0] {
		t.Errorf("the second ended: instances %v, want the first's %v still", got, one)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first run: %v\n%s", err, se1.String())
	}
	waitFor(0, "both ended")
	for _, se := range []string{se1.String(), se2.String()} {
		if strings.Contains(se, "no guard") {
			t.Errorf("a run as PID 1 had no tracer guard:\n%s", se)
		}
	}
	if tr := readRun(t, out1).Trace; tr == nil || !tr.Enabled {
		t.Errorf("the first run's trace: %+v", tr)
	}
}
