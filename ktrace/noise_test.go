package ktrace

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"latencytest/internal/held"
	"latencytest/internal/procfile/proctest"
	"latencytest/rundata"
)

// The offset is the smallest stamp − start − duration seen lately: an
// event written late or a context that was interrupted (its duration net
// of that) only ever reads more; an old bucket's minimum is forgotten.
func TestClockMap(t *testing.T) {
	var c clockMap
	for _, x := range []struct{ stamp, off, want int64 }{
		{1e9, -2084149, -2084149},
		{1.1e9, -2084147, -2084149},
		{1.2e9, -2084000, -2084149},
		{2.3e9, -2084100, -2084149}, // a new bucket; the previous one counts still
		{3.4e9, -2084090, -2084100}, // the first bucket is forgotten
	} {
		if got := c.note(x.stamp, x.off); got != x.want {
			t.Errorf("note(%d, %d) = %d, want %d", x.stamp, x.off, got, x.want)
		}
	}
}

func noise(end int64, kind int, start, ns int64, name string, n int) Event {
	ev := Event{TS: end, Kind: evNoise, NoiseKind: kind, NoiseStart: start, NoiseNS: ns}
	if kind == noiseThread {
		ev.PID, ev.Comm = n, name
	} else {
		ev.IRQ, ev.Name = n, name
	}
	return ev
}

// A known window from osnoise events alone: a hog that started before the
// window runs into it, the local timer and a device IRQ interrupt it, a
// softirq runs, the audio thread runs at the end; each instant goes to the
// innermost interference, a span ends at its start plus its own and its
// nested interferences' durations, and a gap no event covers is
// unexplained.
func TestExplainNoise(t *testing.T) {
	audio := Thread{TID: 42}
	evs := []Event{
		noise(900*us, noiseThread, 100*us, 800*us, "swapper/0", 0),
		noise(1300*us, noiseIRQ, 1200*us, 100*us, "local_timer", 236),
		noise(1600*us, noiseIRQ, 1500*us, 100*us, "ahci", 24),
		noise(1800*us, noiseSoftIRQ, 1600*us, 200*us, "NET_RX", 3),
		// Net of the 400 µs of IRQs and softirq nested in it; written
		// 7 µs after it ended (the stamp is not its end).
		noise(2507*us, noiseThread, 950*us, 1150*us, "hog", 7),
		noise(2600*us, noiseThread, 2520*us, 80*us, "lt-audio", 42),
		sw(2600*us, 0, "hog", 7, 120), // not noise: ignored here
	}
	causes, unexplained := explainNoise(evs, 800*us, 2550*us, audio)
	want := []rundata.Cause{
		{Kind: rundata.CauseThread, Name: "hog", PID: 7, NS: 1150 * us}, // 950–2500 less 400 of interrupts
		{Kind: rundata.CauseSoftIRQ, Name: "NET_RX", NS: 200 * us},
		{Kind: rundata.CauseIdle, Name: "idle", NS: 100 * us},
		{Kind: rundata.CauseIRQ, Name: "vector local_timer", NS: 100 * us},
		{Kind: rundata.CauseIRQ, Name: "IRQ 24 ahci", NS: 100 * us},
		{Kind: rundata.CauseAudio, Name: "lt-audio", PID: 42, NS: 30 * us},
	}
	// Unexplained: 900–950 and 2500–2520.
	if !reflect.DeepEqual(causes, want) || unexplained != 70*us {
		t.Errorf("causes %+v, unexplained %d\nwant %+v, 70 µs", causes, unexplained, want)
	}
}

// fakeOsnoise lays out what startOsnoise reads and writes in a directory.
func fakeOsnoise(t *testing.T, options, cpus string) (*tracefs, string) {
	t.Helper()
	root := t.TempDir()
	inst := filepath.Join(root, "instances", "latencytest-1")
	for _, d := range []string{filepath.Join(root, "osnoise"), inst} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, ev := range osnoiseEvents {
		os.MkdirAll(filepath.Join(inst, "events", ev), 0o755)
		os.WriteFile(filepath.Join(inst, "events", ev, "enable"), []byte("0\n"), 0o644)
	}
	os.WriteFile(filepath.Join(root, "osnoise", "options"), []byte(options), 0o644)
	os.WriteFile(filepath.Join(root, "osnoise", "cpus"), []byte(cpus), 0o644)
	os.WriteFile(filepath.Join(inst, "current_tracer"), []byte("nop\n"), 0o644)
	return &tracefs{root: root}, inst
}

// The tracer runs without its workload on the CPUs asked, and its shared
// settings are put back as found when it stops: each option written back
// (a plain file keeps only the last write, the kernel takes them one by
// one), the CPUs as they were. While one run holds them, another is
// refused them and changes nothing.
func TestStartStopOsnoise(t *testing.T) {
	fs, inst := fakeOsnoise(t, "DEFAULTS OSNOISE_WORKLOAD NO_PANIC_ON_STOP NO_OSNOISE_PREEMPT_DISABLE NO_OSNOISE_IRQ_DISABLE \n", "0-1\n")
	store := testStore(t, fs.root)
	h, err := fs.startOsnoise(store, inst, []int{1})
	if err != nil {
		t.Fatal(err)
	}
	read := func(dir, f string) string {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		return strings.TrimSpace(string(b))
	}
	if got := read(fs.root, "osnoise/options"); got != "NO_OSNOISE_WORKLOAD" {
		t.Errorf("options written %q", got)
	}
	if read(fs.root, "osnoise/cpus") != "1" || read(inst, "current_tracer") != "osnoise" {
		t.Errorf("cpus %q, current_tracer %q", read(fs.root, "osnoise/cpus"), read(inst, "current_tracer"))
	}
	for _, ev := range osnoiseEvents {
		if read(inst, filepath.Join("events", ev, "enable")) != "1" {
			t.Errorf("%s not enabled", ev)
		}
	}
	var found []string
	for _, w := range h.Found {
		found = append(found, filepath.Base(w.Path)+"="+w.Value)
	}
	want := []string{"options=OSNOISE_WORKLOAD", "options=NO_PANIC_ON_STOP", "options=NO_OSNOISE_PREEMPT_DISABLE", "options=NO_OSNOISE_IRQ_DISABLE", "cpus=0-1"}
	if !reflect.DeepEqual(found, want) {
		t.Errorf("recorded as found %v, want %v", found, want)
	}
	var he *held.HeldError
	if _, err := fs.startOsnoise(store, inst, []int{0}); !errors.As(err, &he) || read(fs.root, "osnoise/cpus") != "1" {
		t.Errorf("a second run while held: %v, cpus %q", err, read(fs.root, "osnoise/cpus"))
	}
	if err := fs.stopOsnoise(inst, h); err != nil {
		t.Fatal(err)
	}
	// The last option written is the last one found; the cpus as found.
	if read(fs.root, "osnoise/options") != "NO_OSNOISE_IRQ_DISABLE" || read(fs.root, "osnoise/cpus") != "0-1" || read(inst, "current_tracer") != "nop" {
		t.Errorf("after stop: options %q, cpus %q, current_tracer %q", read(fs.root, "osnoise/options"), read(fs.root, "osnoise/cpus"), read(inst, "current_tracer"))
	}
}

// A run killed with SIGKILL while it holds the tracer's settings: the
// next run's start puts back what the killed one found (its record), not
// what it had set, and after the next run the settings are as before the
// killed one.
func TestOsnoiseKilledHolder(t *testing.T) {
	fs, inst := fakeOsnoise(t, "OSNOISE_WORKLOAD PANIC_ON_STOP\n", "0-1\n")
	storeDir := filepath.Join(t.TempDir(), "run")
	proctest.KillHolder(t, "KTRACE_HOLD_OSNOISE="+fs.root+","+inst+","+storeDir)
	options := func() string { b, _ := os.ReadFile(filepath.Join(fs.root, "osnoise", "options")); return string(b) }
	if options() != "NO_OSNOISE_WORKLOAD" {
		t.Fatalf("the killed run left options %q, want its NO_OSNOISE_WORKLOAD", options())
	}
	store, err := held.Open(storeDir, []string{fs.root + "/"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := fs.startOsnoise(store, inst, []int{1})
	if err != nil {
		t.Fatal(err)
	}
	// A plain file shows only the last option put back: the found one.
	if len(h.Recovered) != 3 || h.Recovered[0].Value != "OSNOISE_WORKLOAD" || h.Found[0].Value != "PANIC_ON_STOP" {
		t.Errorf("recovered %v, found %v: want the killed run's record, OSNOISE_WORKLOAD first, put back", h.Recovered, h.Found)
	}
	fs.stopOsnoise(inst, h)
	b, _ := os.ReadFile(filepath.Join(fs.root, "osnoise", "cpus"))
	if options() != "PANIC_ON_STOP" || string(b) != "0-1" {
		t.Errorf("after the next run: options %q (last written), cpus %q; want PANIC_ON_STOP, 0-1", options(), b)
	}
}

// holdOsnoise is TestOsnoiseKilledHolder's killed run: it holds the fake
// tracer of spec ("root,instance,store"), says "held" and waits.
func holdOsnoise(spec string) {
	f := strings.Split(spec, ",")
	store, err := held.Open(f[2], []string{f[0] + "/"})
	if err == nil {
		_, err = (&tracefs{root: f[0]}).startOsnoise(store, f[1], []int{1})
	}
	proctest.Hold(err)
}

// Without the NO_OSNOISE_WORKLOAD option, or with the tracer in use by
// someone else, the tracer is not used (its workload threads would
// disturb the audio thread; the other user owns its settings).
func TestOsnoiseUsable(t *testing.T) {
	fs, inst := fakeOsnoise(t, "DEFAULTS OSNOISE_WORKLOAD\n", "0-1\n")
	os.WriteFile(filepath.Join(fs.root, "available_tracers"), []byte("timerlat osnoise nop\n"), 0o644)
	os.MkdirAll(filepath.Join(fs.root, "events", "osnoise"), 0o755)
	os.WriteFile(filepath.Join(fs.root, "current_tracer"), []byte("nop\n"), 0o644)
	if why, ok := fs.osnoiseUsable(); !ok {
		t.Errorf("usable: %s", why)
	}
	os.WriteFile(filepath.Join(inst, "current_tracer"), []byte("timerlat\n"), 0o644)
	if why, ok := fs.osnoiseUsable(); ok || !strings.Contains(why, "in use") {
		t.Errorf("timerlat in another instance: %v %q", ok, why)
	}
	os.WriteFile(filepath.Join(inst, "current_tracer"), []byte("nop\n"), 0o644)
	os.WriteFile(filepath.Join(fs.root, "osnoise", "options"), []byte("DEFAULTS PANIC_ON_STOP\n"), 0o644)
	if why, ok := fs.osnoiseUsable(); ok || !strings.Contains(why, "NO_OSNOISE_WORKLOAD") {
		t.Errorf("no workload option: %v %q", ok, why)
	}
	os.WriteFile(filepath.Join(fs.root, "available_tracers"), []byte("function nop\n"), 0o644)
	if why, ok := fs.osnoiseUsable(); ok || !strings.Contains(why, "no osnoise tracer") {
		t.Errorf("no tracer: %v %q", ok, why)
	}
}

// A burst that started long before the window was interrupted before the
// window began: that interrupt's event, written before the window, still
// moves the burst's end, which lies inside the window.
func TestExplainNoiseNestedBeforeWindow(t *testing.T) {
	audio := Thread{TID: 42}
	evs := []Event{
		noise(1100*us, noiseIRQ, 1000*us, 100*us, "local_timer", 236), // before the window
		noise(5207*us, noiseThread, 100*us, 5000*us, "lt-culprit", 9), // 100–5200 µs, net of the timer
		noise(5300*us, noiseThread, 5200*us, 100*us, "lt-audio", 42),
	}
	causes, unexplained := explainNoise(evs, 2000*us, 5300*us, audio)
	want := []rundata.Cause{
		{Kind: rundata.CauseThread, Name: "lt-culprit", PID: 9, NS: 3200 * us},
		{Kind: rundata.CauseAudio, Name: "lt-audio", PID: 42, NS: 100 * us},
	}
	if !reflect.DeepEqual(causes, want) || unexplained != 0 {
		t.Errorf("causes %+v unexplained %d\nwant %+v", causes, unexplained, want)
	}
}

// The accounts disagree when their top causes differ, or their times by
// more than 5 %; then the window's events are written out.
func TestDisagreeDumpsTheWindow(t *testing.T) {
	culprit := rundata.Cause{Kind: rundata.CauseThread, Name: "lt-culprit", PID: 9, NS: 5000 * us}
	timer := rundata.Cause{Kind: rundata.CauseIRQ, Name: "vector local_timer", NS: 5000 * us}
	short := culprit
	short.NS = 4700 * us
	for _, tc := range []struct {
		sched, noise rundata.Cause
		want         bool
	}{
		{culprit, culprit, false},
		{culprit, short, true},
		{culprit, timer, true},
	} {
		sp := rundata.Spike{Causes: []rundata.Cause{tc.sched}, KernelNoise: []rundata.Cause{tc.noise}}
		if got := disagree(sp); got != tc.want {
			t.Errorf("sched %v, osnoise %v: disagree %v, want %v", tc.sched, tc.noise, got, tc.want)
		}
	}
	var b strings.Builder
	evs := []Event{noise(5207*us, noiseThread, 100*us, 5000*us, "lt-culprit", 9)}
	dumpWindow(&b, "the two accounts disagree", &cpuLog{evs: evs}, 0, 6000*us)
	if !strings.Contains(b.String(), "lt-culprit/9") || !strings.Contains(b.String(), "start +100.0 net 5000.0") {
		t.Errorf("dump:\n%s", b.String())
	}
}
