package main

import (
	enc "encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A 30 ms stall at 4 × 256 frames (5.33 ms periods): the verdict is the
// buffer in which the stalled period's write would have come in time, 1 +
// ⌈30 ms / 5.33 ms⌉ = 7 periods (or more, should the machine add to the
// stall), exactly the one the samples' latest write needs, and the
// terminal says it.
func TestRunVerdict(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	r := latencytest(t, "run", "--driver", "timer", "--tests", "idle", "--duration", "2s", "--cpu-load", "0",
		"--period", "256", "--periods", "4", "--test-stall", "100:30ms", "--out", out, "--no-report", "--quiet")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	run := readRun(t, out)
	ph := run.Phases[0]
	period := int64(256) * 1e9 / 48000
	var late int64
	for _, s := range readSamples(t, out, ph) {
		late = max(late, s.Woke+s.DSP-s.Due)
	}
	want := 1 + (late+period-1)/period
	if ph.Safe == nil || int64(ph.Safe.Periods) != want || want < 7 || ph.Safe.MarginNS != (want-1)*period-late {
		t.Fatalf("safe %+v, want %d periods (latest write %.2f ms after its period was due)", ph.Safe, want, float64(late)/1e6)
	}
	if line := fmt.Sprintf("verdict: 256 frames × 4 (21.3 ms) held under none of the phases; idle needs × %d", want); !strings.Contains(r.stdout, line) {
		t.Errorf("no line %q in\n%s", line, r.stdout)
	}
	// The closing block answers first — did the sound break, the verdict,
	// the worst wakeup — then the T: lines; `report --text DIR` prints the
	// same block again from the results directory.
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	prefixes := []string{"sound: ", "verdict: ", "worst wakeup: ", "T: idle ", "results: "}
	if len(lines) < len(prefixes) {
		t.Fatalf("closing block %q", r.stdout)
	}
	k := 0
	for _, l := range lines {
		if k < len(prefixes) && strings.HasPrefix(l, prefixes[k]) {
			k++
		}
	}
	if k != len(prefixes) || !strings.HasPrefix(lines[0], "sound: ") {
		t.Errorf("closing block not in the order %q:\n%s", prefixes, r.stdout)
	}
	if want := fmt.Sprintf("worst wakeup: %d µs late, in idle", int64(math.Floor(run.Phases[0].Latency.Max))); !strings.Contains(r.stdout, want) {
		t.Errorf("no %q in\n%s", want, r.stdout)
	}
	text := latencytest(t, "report", "--text", out)
	if want := strings.TrimSuffix(r.stdout, lines[len(lines)-1]+"\n"); text.code != 0 || text.stdout != want {
		t.Errorf("report --text: exit %d\n%s\nwant\n%s", text.code, text.stdout, want)
	}
}

// The first line says what is measured, and that --driver auto fell back
// to the timer; a tone or a file to play with no card to play them on is
// refused, not ignored.
func TestRunFirstLine(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	r := latencytest(t, "run", "--tests", "idle", "--duration", "1s", "--cpu-load", "0", "--out", out, "--no-report")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	run := readRun(t, out)
	first, _, _ := strings.Cut(r.stderr, "\n") // the progress lines' stream
	want := fmt.Sprintf("timer (CLOCK_MONOTONIC): 64 frames × 2 (2.7 ms) at 48000 Hz, %s", run.RT.Obtained.Policy)
	if run.Driver != "timer" || !strings.HasPrefix(first, want) || !strings.HasSuffix(first, "(--driver auto: no sound card found; the timer stands in for one, its xruns simulated)") {
		t.Errorf("first line %q, want %q… (--driver auto: …)", first, want)
	}
	wav := filepath.Join(t.TempDir(), "song.wav")
	var hdr []byte // 16-bit stereo 48 kHz, one frame of silence
	for _, v := range []any{[]byte("RIFF"), uint32(40), []byte("WAVEfmt "), uint32(16), uint16(1), uint16(2), uint32(48000), uint32(192000), uint16(4), uint16(16), []byte("data"), uint32(4), uint32(0)} {
		hdr, _ = enc.Append(hdr, enc.LittleEndian, v)
	}
	if err := os.WriteFile(wav, hdr, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--tone", "440"}, {"--file", wav}, {"--driver", "timer", "--tone", "1000"}} {
		fresh := filepath.Join(t.TempDir(), "never")
		args = append([]string{"run", "--tests", "idle", "--duration", "1s", "--out", fresh}, args...)
		r := latencytest(t, args...)
		oneLine(t, r, strings.Join(args, " "))
		if !strings.Contains(r.stderr, "plays no sound; allowed with --driver alsa, portaudio or jack") {
			t.Errorf("%v: %q", args, r.stderr)
		}
	}
}

// --fail-above and --max-xruns: a 30 ms stall at 8 × 256 frames is above
// --fail-above 20ms, exit 1 with a line naming the phase; the same run
// passes --fail-above 1s --max-xruns 5 with exit 0 (the 42.7 ms buffer
// holds a 30 ms stall: no xrun); a stall past the buffer is an xrun, more
// than --max-xruns 0. Bad values are bad input.
func TestRunGate(t *testing.T) {
	run := func(gate ...string) result {
		args := append([]string{"run", "--driver", "timer", "--tests", "idle", "--duration", "1s", "--cpu-load", "0",
			"--period", "256", "--periods", "8", "--out", filepath.Join(t.TempDir(), "r"), "--no-report", "--quiet"}, gate...)
		return latencytest(t, args...)
	}
	if r := run("--test-stall", "50:30ms", "--fail-above", "20ms"); r.code != 1 || !strings.Contains(r.stderr, "latencytest run: failed: idle: max latency") {
		t.Errorf("30 ms stall, --fail-above 20ms: exit %d, %q; want 1 naming idle", r.code, r.stderr)
	}
	if r := run("--test-stall", "50:30ms", "--fail-above", "1s", "--max-xruns", "5"); r.code != 0 || strings.Contains(r.stderr, "failed") {
		t.Errorf("30 ms stall, --fail-above 1s --max-xruns 5: exit %d, %q; want 0", r.code, r.stderr)
	}
	if r := run("--test-stall", "50:100ms", "--max-xruns", "0"); r.code != 1 || !strings.Contains(r.stderr, "xruns, more than --max-xruns 0") {
		t.Errorf("100 ms stall, --max-xruns 0: exit %d, %q; want 1", r.code, r.stderr)
	}
	for _, bad := range [][]string{{"--fail-above", "-1ms"}, {"--max-xruns", "-2"}, {"--max-xruns", "0", "--period", "64,128"}} {
		oneLine(t, run(bad...), strings.Join(bad, " "))
	}
}

// The disk phases say where their files are, and a tmpfs is said to be
// RAM: /dev/shm here, as /tmp is on many systems.
func TestRunDiskInRAMSaid(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "lt-disk-")
	if err != nil {
		t.Fatalf("/dev/shm: %v", err)
	}
	defer os.RemoveAll(shm)
	out := filepath.Join(t.TempDir(), "run")
	r := latencytest(t, "run", "--driver", "timer", "--tests", "disk-write", "--duration", "2s", "--periods", "8",
		"--disk-size", "4M", "--disk-dir", shm, "--out", out, "--no-report")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	st := readRun(t, out).Phases[0].StressorStats
	if st["in_ram"] != true || st["filesystem"] != "tmpfs (in RAM)" || st["dir"] != shm {
		t.Errorf("stressor stats %v", st)
	}
	if want := "[disk-write] files in " + shm + ": tmpfs (in RAM); this loads memory, not a disk"; !strings.Contains(r.stderr, want) {
		t.Errorf("no %q in\n%s", want, r.stderr)
	}
}

// Every subcommand's -h has three examples (run's groups its flags by
// what they set and leaves the test hooks out), and run's and monitor's are
// run, each as printed but on the timer driver, for a second (a monitor
// rotating every second, stopped after two), into a temporary directory:
// an example the binary refuses (exit 2) fails the test. run's third
// example, a --period list with --fail-above, was refused so.
func TestHelpExamples(t *testing.T) {
	examples := map[string][][]string{}
	for _, cmd := range []string{"run", "monitor", "report", "compare", "devices", "check", "stress"} {
		r := latencytest(t, cmd, "-h")
		_, ex, ok := strings.Cut(r.stdout, "\nExamples:\n")
		n := 0
		for _, l := range strings.Split(ex, "\n") {
			if strings.HasPrefix(l, "  latencytest "+cmd) || strings.HasPrefix(l, "  for d in") {
				n++
			}
			if f := strings.Fields(l); strings.HasPrefix(l, "  latencytest "+cmd+" ") && !strings.ContainsAny(l, "|;*") {
				examples[cmd] = append(examples[cmd], f[2:])
			}
		}
		if r.code != 0 || !ok || n != 3 {
			t.Errorf("%s -h: exit %d, %d examples:\n%s", cmd, r.code, n, r.stdout)
		}
	}
	r := latencytest(t, "run", "-h")
	for _, want := range []string{"\nStream:\n", "\nReal-time:\n", "\nPhases and loads:\n", "\nOutput:\n", "\nTracing:\n", "\nLoads (each stressor's flags"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run -h has no %q", want)
		}
	}
	if strings.Contains(r.stdout, "test-stall") || strings.Contains(r.stdout, "\nOther:\n") {
		t.Errorf("run -h shows a test hook or an ungrouped flag:\n%s", r.stdout)
	}
	if len(examples["run"]) != 3 || len(examples["monitor"]) != 3 {
		t.Fatalf("examples to run: %d of run, %d of monitor, want 3 each", len(examples["run"]), len(examples["monitor"]))
	}
	for _, ex := range examples["run"] {
		args := append(onTimer(t, ex, "1s"), "--out", filepath.Join(t.TempDir(), "out"), "--no-report", "--quiet")
		r := latencytestWithin(t, 2*time.Minute, append([]string{"run"}, args...)...)
		if r.code != 0 && (r.code != 1 || !strings.Contains(r.stderr, "latencytest run: failed: ")) { // a gate may fail on a busy machine
			t.Errorf("run %s: exit %d: %s", strings.Join(ex, " "), r.code, r.stderr)
		}
	}
	for _, ex := range examples["monitor"] {
		dir := t.TempDir()
		args := append(onTimer(t, ex, ""), "--rotate", "1s", "--out", filepath.Join(dir, "out"))
		for i, a := range args {
			switch {
			case a == "--listen":
				args[i+1] = "127.0.0.1:0" // not the machine's port for every interface
			case a == "--metrics-file":
				args[i+1] = filepath.Join(dir, "lt.prom")
			}
		}
		if code, stderr := stoppedAfter(t, 2*time.Second, append([]string{"monitor"}, args...)...); code != 130 {
			t.Errorf("monitor %s: exit %d after SIGINT, want 130: %s", strings.Join(ex, " "), code, stderr)
		}
	}
}

// Help shows no default that means off ("(default 0s)" was shown for
// --fail-above, --break-above and, after its own words, --trace-above),
// and a command without flags (version) no empty "Flags:" heading.
func TestHelpDefaults(t *testing.T) {
	r := latencytest(t, "run", "-h")
	for _, off := range []string{"(default 0s)", "(default -1)", "(default 0)", "(default false)"} {
		if strings.Contains(r.stdout, off) {
			t.Errorf("run -h shows %q:\n%s", off, r.stdout)
		}
	}
	for _, name := range []string{"fail-above", "max-xruns", "break-above"} {
		if _, usage, _ := strings.Cut(r.stdout, "  -"+name+" "); !strings.Contains(strings.SplitN(usage, "\n", 3)[1], "(default: off)") {
			t.Errorf("run -h: --%s does not say it is off by default", name)
		}
	}
	if r := latencytest(t, "version", "-h"); r.code != 0 || strings.Contains(r.stdout, "Flags:") {
		t.Errorf("version -h: exit %d:\n%s", r.code, r.stdout)
	}
}

// onTimer is an example's flags for the timer driver: without the ALSA
// device's own (--device, --access; this machine may have no card), with
// --duration d (none for ""), and without --rotate and --out, which the
// caller gives.
func onTimer(t *testing.T, ex []string, d string) []string {
	t.Helper()
	args := []string{"--driver", "timer"}
	for i := 0; i < len(ex); i++ {
		switch ex[i] {
		case "--device", "--access", "--duration", "--rotate", "--out":
			i++ // and its value
			continue
		}
		args = append(args, ex[i])
	}
	if d != "" {
		args = append(args, "--duration", d)
	}
	return args
}

// stoppedAfter runs the binary, sends it SIGINT after d and returns its
// exit code and standard error; one still running a minute later is
// killed (and fails on the code).
func stoppedAfter(t *testing.T, d time.Duration, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var se strings.Builder
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := time.AfterFunc(d, func() { cmd.Process.Signal(syscall.SIGINT) })
	kill := time.AfterFunc(d+time.Minute, func() { cmd.Process.Kill() })
	code, _ := exitCode(t, cmd, time.Now())
	stop.Stop()
	kill.Stop()
	return code, se.String()
}
