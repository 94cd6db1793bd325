//go:build vm

package alsa

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/internal/bintest"
	"latencytest/internal/culprit"
	"latencytest/rundata"
)

// irqCulpritEnv makes the test binary the culprit of TestVMRTLateInterrupt.
const irqCulpritEnv = "ALSA_IRQ_CULPRIT"

// irqCulprit holds CPU 0 for 5 ms at a time at SCHED_FIFO 60: above the
// interrupt threads of a PREEMPT_RT kernel (50), below the audio thread
// (80), so that only the card's interrupt is held up. The gap is not a
// multiple of the 21.3 ms period, so the bursts fall on every part of it.
var irqCulprit = culprit.Config{Name: "lt-irqculprit", CPU: 0, Prio: 60, Busy: 5 * time.Millisecond,
	Gap: 97 * time.Millisecond, Bursts: 100, Settle: 50 * time.Millisecond}

// TestMain runs the culprit when asked (the non-VM build's TestMain, in
// abi_cross_test.go, has the layout dump instead).
func TestMain(m *testing.M) {
	if os.Getenv(irqCulpritEnv) == "1" {
		if err := culprit.Run(irqCulprit, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestVMRTLateInterrupt: on PREEMPT_RT a card's interrupt handler runs in
// a thread (SCHED_FIFO 50). A task at 60 busy 5 ms at a time on the CPU of
// that thread and of the audio thread (80) holds up the interrupt, not the
// audio thread: the pointer update, and the wakeup right after it, come
// when the burst ends. A period that ended on the card's clock inside a
// burst is therefore late by the rest of the burst, and must read so
// (docs/method.md): from the pointer update's timestamp it would read a
// few µs. Each such period is checked against the burst's end as the
// culprit's own clock says, and the split says the time went to the
// update. scripts/vmtest -rt -cards hda (make test runs it).
func TestVMRTLateInterrupt(t *testing.T) {
	if b, _ := os.ReadFile("/sys/kernel/realtime"); strings.TrimSpace(string(b)) != "1" {
		t.Skip("needs the PREEMPT_RT kernel's interrupt threads: scripts/vmtest -rt -cards hda (make test runs it)")
	}
	hda, ok := needCards(t)["hda"]
	if !ok {
		t.Skip("no HDA card in this VM: scripts/vmtest -rt -cards hda")
	}
	irq := cardIRQ(t, "snd_hda_intel")
	if err := os.WriteFile(fmt.Sprintf("/proc/irq/%d/smp_affinity_list", irq), []byte("0"), 0); err != nil {
		t.Fatalf("interrupt %d to CPU 0: %v", irq, err)
	}
	out := filepath.Join(t.TempDir(), "out")
	run := exec.Command(vmBinary, "run", "--driver", "alsa", "--device", hda.hw(), "--tests", "idle", "--duration", "12s",
		"--affinity", "0", "--cpu-load", "0", "--period", "1024", "--periods", "2", "--out", out, "--no-report", "--quiet")
	var stderr strings.Builder
	run.Stderr = &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	if err := bintest.WaitMeasuring(filepath.Join(out, "samples", "01-idle.bin"), 60*time.Second); err != nil {
		run.Process.Kill()
		run.Wait()
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	logIRQThread(t, irq)
	culp := exec.Command(os.Args[0], "-test.run=^$")
	culp.Env = append(os.Environ(), irqCulpritEnv+"=1")
	culp.Stderr = os.Stderr
	said, err := culp.Output()
	if err != nil {
		run.Process.Kill()
		run.Wait()
		t.Fatalf("culprit: %v", err)
	}
	if err := run.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	bursts, err := culprit.Parse(string(said))
	if err != nil {
		t.Fatal(err)
	}
	r := bintest.ReadRun(t, out)
	ph := r.Phases[0]
	t.Logf("%s: %d periods, %d xruns; latency µs %+v; update delay %+v; after update %+v",
		hda.hw(), ph.Periods, ph.Xruns, ph.Latency, ph.UpdateDelay, ph.AfterUpdate)
	checkHeldPeriods(t, bintest.ReadSamples(t, out, ph), bursts)
	if ph.UpdateDelay == nil || ph.UpdateDelay.Max < 4000 || ph.Latency.Max < 4000 {
		t.Errorf("the 5 ms bursts do not show: latency max %.0f µs, update delay %+v", ph.Latency.Max, ph.UpdateDelay)
	}
	// The verdict's worst write: a buffer of Periods periods left Margin
	// of the Periods − 1 after the due one (rundata.Verdict).
	const period = 1024 * 1_000_000_000 / 48000
	if ph.Safe == nil || int64(ph.Safe.Periods-1)*period-ph.Safe.MarginNS < 4_000_000 {
		t.Errorf("verdict %+v: its worst write is not the ~5 ms late", ph.Safe)
	}
}

// checkHeldPeriods checks each period that ended on the card's clock well
// inside a burst (from 0.5 ms after its start to 1 ms before its end,
// where the host's jitter cannot move it out): its latency is at least the
// rest of the burst, less the 1 ms the emulated card's DMA moves in (its
// pointer, and with it the grid, is known to a millisecond).
func checkHeldPeriods(t *testing.T, ss []rundata.Sample, bursts []culprit.Burst) {
	t.Helper()
	held := 0
	for _, s := range ss {
		if s.Xrun != 0 {
			continue
		}
		end := s.Due // the samples file's due is the period's end on the card's clock
		for _, b := range bursts {
			if end < b.Start+500_000 || end > b.End-1_000_000 {
				continue
			}
			held++
			if want := b.End - end - 1_000_000; s.Latency() < want {
				t.Errorf("period %d ended %.2f ms into a burst of %.2f ms: %.2f ms late, want at least %.2f",
					s.Index, float64(end-b.Start)/1e6, float64(b.End-b.Start)/1e6, float64(s.Latency())/1e6, float64(want)/1e6)
			}
		}
	}
	t.Logf("%d periods ended inside one of %d bursts", held, len(bursts))
	if held < 5 {
		t.Errorf("only %d periods ended inside a burst: the test saw too little", held)
	}
}

// cardIRQ is the interrupt the driver named registered (/proc/interrupts).
func cardIRQ(t *testing.T, driver string) int {
	t.Helper()
	f, err := os.Open("/proc/interrupts")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), driver) {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(sc.Text(), ":", 2)[0]))
		if err == nil {
			return n
		}
	}
	t.Fatalf("no interrupt of %s in /proc/interrupts", driver)
	return 0
}

// logIRQThread logs the interrupt's thread and its policy: the test is
// about a thread at 50 below the culprit's 60.
func logIRQThread(t *testing.T, irq int) {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, p := range dirs {
		b, _ := os.ReadFile(p)
		if !strings.HasPrefix(string(b), fmt.Sprintf("irq/%d-", irq)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		a, err := unix.SchedGetAttr(pid, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("interrupt %d's thread %s (pid %d): policy %d priority %d", irq, strings.TrimSpace(string(b)), pid, a.Policy, a.Priority)
		if a.Policy != unix.SCHED_FIFO || a.Priority >= uint32(irqCulprit.Prio) {
			t.Fatalf("interrupt thread at policy %d priority %d, want SCHED_FIFO below %d", a.Policy, a.Priority, irqCulprit.Prio)
		}
		return
	}
	t.Fatalf("no thread for interrupt %d: not a PREEMPT_RT kernel's threaded interrupt", irq)
}
