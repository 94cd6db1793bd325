//go:build vm

// In-VM tests of the RTC driver against the CMOS RTC of qemu's PC and
// Debian's kernel (scripts/vmtest; docs/vmtest.md).
package rtc

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"latencytest/internal/bintest"
	"latencytest/rundata"
)

const vmBinary = "/bin/latencytest"

// run runs one idle phase on the RTC and returns its run.json and samples.
func run(t *testing.T, args ...string) (*rundata.Run, []rundata.Sample) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "x")
	args = append([]string{"run", "--driver", "rtc", "--tests", "idle", "--cpu-load", "0", "--no-report", "--quiet", "--out", out}, args...)
	b, err := exec.Command(vmBinary, args...).CombinedOutput()
	t.Logf("latencytest %s\n%s", strings.Join(args, " "), b)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	r := bintest.ReadRun(t, out)
	return r, bintest.ReadSamples(t, out, r.Phases[0])
}

// 2048 Hz for 5 s is 10240 interrupts (± 2 %), every period on the grid:
// the periods measured and those an xrun dropped (the owed ones and the
// interrupts until the next wakeup, the driver's restart: Transfer) span
// the grid's 10240. Counting the measured periods alone failed a
// rehearsal: 10010, two xruns having dropped 230.
func TestVMRTCPeriods(t *testing.T) {
	r, ss := run(t, "--rtc-rate", "2048", "--periods", "64", "--duration", "5s")
	ph := r.Phases[0]
	if r.Rate != 2048 || r.PeriodFrames != 1 || !r.Simulated {
		t.Errorf("shape: rate %d, period %d frames, simulated %v", r.Rate, r.PeriodFrames, r.Simulated)
	}
	if len(ss) == 0 {
		t.Fatal("no samples")
	}
	span := (ss[len(ss)-1].Due-ss[0].Due)/488281 + 1
	t.Logf("%d periods measured, %d dropped at xruns, the grid's span %d", ph.Periods, span-ph.Periods, span)
	if span < 10240*98/100 || span > 10240*102/100 {
		t.Errorf("the periods span %d interrupts of the grid, want 10240 ± 2 %%", span)
	}
	if int64(len(ss)) != ph.Periods {
		t.Errorf("%d samples for %d periods", len(ss), ph.Periods)
	}
	for i := 1; i < len(ss); i++ {
		if step := ss[i].Due - ss[i-1].Due; ss[i].Xrun == 0 && ss[i-1].Xrun == 0 && step != 488281 {
			t.Fatalf("period %d: due %d ns after the last, want the kernel's 488281", i, step)
		}
	}
}

// With --cpus the RTC's stream runs on the first CPU listed and a timer
// thread at its rate and period on the other, each pinned to its CPU:
// each counts 2048 Hz × 3 s less the stream time its xruns lost (± 2 %)
// in a samples file of its own.
func TestVMRTCCPUs(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x")
	args := []string{"run", "--driver", "rtc", "--tests", "idle", "--cpu-load", "0", "--no-report", "--quiet", "--out", out,
		"--rtc-rate", "2048", "--periods", "64", "--duration", "3s", "--cpus", "1,0"}
	b, err := exec.Command(vmBinary, args...).CombinedOutput()
	t.Logf("latencytest %s\n%s", strings.Join(args, " "), b)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	r := bintest.ReadRun(t, out)
	ph := r.Phases[0]
	if !strings.Contains(r.Device, "rtc") || len(ph.CPUs) != 2 || ph.CPUs[0].CPU != 1 || ph.CPUs[1].CPU != 0 {
		t.Fatalf("run.json: device %q, cpus %+v", r.Device, ph.CPUs)
	}
	for _, c := range ph.CPUs {
		if a := c.RT.Obtained.Affinity; len(a) != 1 || a[0] != c.CPU {
			t.Errorf("CPU %d: its thread obtained affinity %v", c.CPU, a)
		}
		ss := bintest.ReadSamples(t, out, c.Phase)
		lost, _ := rundata.StreamLost(ss, 488281)
		want := (3e9 - float64(lost)) / 488281
		if n := int64(len(ss)); float64(c.Periods) < want*0.98 || float64(c.Periods) > want*1.02 || n != c.Periods {
			t.Errorf("CPU %d: %d periods, %d samples; want %.0f ± 2 %% (3 s less %.1f ms lost to %d xruns)", c.CPU, c.Periods, n, want, float64(lost)/1e6, c.Xruns)
		}
	}
}

// A 100 ms stall of the loop reads back as 100 ms of lateness and one
// xrun, not a flood of late periods.
func TestVMRTCStall(t *testing.T) {
	_, ss := run(t, "--rtc-rate", "2048", "--periods", "4", "--duration", "3s", "--test-stall", "2000:100ms")
	var stalled *rundata.Sample
	late := 0
	for i := range ss {
		if ss[i].Index == 2000 {
			stalled = &ss[i]
		}
		if ss[i].Latency() > 50e6 {
			late++
		}
	}
	if stalled == nil {
		t.Fatal("no period 2000")
	}
	if l := stalled.Latency(); l < 100e6 || l > 110e6 {
		t.Errorf("the stalled period is %.1f ms late, want 100 ms (+ its wakeup)", float64(l)/1e6)
	}
	if stalled.Xrun < 95e6 || stalled.Xrun > 110e6 {
		t.Errorf("its xrun lasted %.1f ms, want 100 ms less the 1.5 ms still queued", float64(stalled.Xrun)/1e6)
	}
	if late != 1 {
		t.Errorf("%d periods more than 50 ms late, want only the stalled one", late)
	}
}

// A rate the RTC refuses, or no RTC, is one line and exit 2.
func TestVMRTCErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rtc-rate", "1000"}, "--rtc-rate 1000: allowed a power of two"},
		{[]string{"--device", "/dev/rtc7"}, `--device "/dev/rtc7": no such RTC`},
	} {
		args := append([]string{"run", "--driver", "rtc", "--tests", "idle", "--duration", "1s", "--quiet", "--out", filepath.Join(t.TempDir(), "x")}, c.args...)
		cmd := exec.Command(vmBinary, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), c.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
			t.Errorf("%v: %v, stderr %q; want exit 2 and one line with %q", c.args, err, stderr.String(), c.want)
		}
	}
}
