//go:build vm

package alsa

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/internal/onecpu"
	"latencytest/rundata"
)

// The emulated cards' anomalies at 2×64 frames, with the kernel's own
// record as the witness (issue 47, items 3 and 4). Debian's kernel has no
// CONFIG_SND_PCM_XRUN_DEBUG (no xrun_debug, no snd_pcm hwptr or xrun
// tracepoints), so the record is made here with kprobes on the card
// driver's own callbacks, in a trace instance on the trace clock "mono"
// (CLOCK_MONOTONIC, the clock of the samples' Woke and Due):
//
//   - every read of the hardware position (the driver's pointer callback,
//     a kretprobe with the position it returned, in frames);
//   - every trigger (START 1, STOP 0, …): a STOP that does not end the
//     run is the kernel stopping the stream for an xrun, for any player,
//     aplay or latencytest;
//   - the card's interrupt (irq_handler_entry of the handlers named snd_*)
//     and snd_pcm_period_elapsed;
//   - the switches and wakeups of the players' threads (SCHED_FIFO 80,
//     kernel prio 19: aplay's, latencytest's audio thread).
//
// A gap of a buffer's time or more between two successive position reads
// of a running stream is a lost buffer nobody could tell: the driver reads
// its position modulo the buffer, and nobody looked in between.

// cardTraced names what is traced on a card: its driver's pointer and
// trigger callbacks (Debian's 6.1 modules).
type cardTraced struct {
	pointers []string
	trigger  string
}

var cardTrace = map[string]cardTraced{
	"hda": {pointers: []string{"azx_pcm_pointer"}, trigger: "azx_pcm_trigger"},
	// PCM device 0's playback is DAC2 (snd_ensoniq_playback2_ops), device
	// 1's DAC1: both are traced, only the one played reads.
	"es1370": {pointers: []string{"snd_ensoniq_playback1_pointer", "snd_ensoniq_playback2_pointer"}, trigger: "snd_ensoniq_trigger"},
}

const (
	traceRoot  = "/sys/kernel/tracing"
	traceGroup = "cardtrace"
	playerPrio = 19 // SCHED_FIFO 80 as the kernel's prio field says it
)

// cardTracer is the trace instance of one card's callbacks.
type cardTracer struct {
	inst    string
	defined []string // kprobe events, to remove
}

// writeTrace writes a tracefs file (O_TRUNC: "trace" is cleared so).
func writeTrace(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", value, path, err)
	}
	return nil
}

// appendTrace appends a line to a tracefs file (kprobe_events).
func appendTrace(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("add %q to %s: %w", line, path, err)
	}
	return nil
}

// startCardTrace defines the kprobes of ct, makes the instance and arms
// its events (tracing off until begin).
func startCardTrace(t *testing.T, ct cardTraced) *cardTracer {
	t.Helper()
	if _, err := os.Stat(filepath.Join(traceRoot, "instances")); err != nil {
		if err := unix.Mount("nodev", traceRoot, "tracefs", 0, ""); err != nil {
			t.Fatalf("mount tracefs: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(traceRoot, "kprobe_events")); err != nil {
		t.Fatalf("no kprobe_events (a kernel without CONFIG_KPROBE_EVENTS): %v", err)
	}
	// No optimized kprobes: the optimizer patches code later, from a
	// worker, with every CPU online.
	if err := writeTrace("/proc/sys/debug/kprobes-optimization", "0"); err != nil {
		t.Logf("kprobes-optimization: %v", err)
	}
	c := &cardTracer{inst: filepath.Join(traceRoot, "instances", traceGroup)}
	defs := []string{
		fmt.Sprintf("p:%s/trig %s cmd=$arg2:s32", traceGroup, ct.trigger),
		fmt.Sprintf("p:%s/elapsed snd_pcm_period_elapsed", traceGroup),
	}
	for i, p := range ct.pointers {
		defs = append(defs, fmt.Sprintf("r:%s/ptr%d %s pos=$retval:u64", traceGroup, i, p))
	}
	kev := filepath.Join(traceRoot, "kprobe_events")
	for _, d := range defs {
		if err := appendTrace(kev, d); err != nil {
			funcs, _ := os.ReadFile(filepath.Join(traceRoot, "available_filter_functions"))
			var near []string
			for _, l := range strings.Split(string(funcs), "\n") {
				if strings.Contains(l, "azx_pcm") || strings.Contains(l, "snd_ensoniq") || strings.Contains(l, "snd_audiopci") {
					near = append(near, l)
				}
			}
			t.Fatalf("%v; the card drivers' traceable functions: %s", err, strings.Join(near, ", "))
		}
		c.defined = append(c.defined, strings.Fields(d)[0][2:])
	}
	t.Cleanup(func() { c.remove(t) })
	if err := os.Mkdir(c.inst, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatalf("trace instance: %v", err)
	}
	set := func(name, v string) {
		if err := writeTrace(filepath.Join(c.inst, name), v); err != nil {
			t.Fatal(err)
		}
	}
	set("tracing_on", "0")
	set("buffer_size_kb", "16384") // the followed thread's system calls too
	set("trace_clock", "mono")
	set("events/irq/irq_handler_entry/filter", `name ~ "snd_*"`)
	set("events/sched/sched_switch/filter", fmt.Sprintf("prev_prio == %d || next_prio == %d", playerPrio, playerPrio))
	set("events/sched/sched_wakeup/filter", fmt.Sprintf("prio == %d", playerPrio))
	// The system calls: none until a player's audio thread is followed
	// (followPlayer), the filter set before the events are armed, so that
	// changing it later patches no code.
	if err := c.followThread(0); err != nil {
		t.Fatal(err)
	}
	err := onecpu.Run(func() error {
		for _, ev := range []string{traceGroup, "irq/irq_handler_entry", "sched/sched_switch", "sched/sched_wakeup", "raw_syscalls/sys_enter", "raw_syscalls/sys_exit"} {
			if err := writeTrace(filepath.Join(c.inst, "events", ev, "enable"), "1"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("arm the trace: %v", err)
	}
	return c
}

// remove disarms the events (one CPU online), removes the instance and
// the kprobes.
func (c *cardTracer) remove(t *testing.T) {
	err := onecpu.Run(func() error {
		writeTrace(filepath.Join(c.inst, "tracing_on"), "0")
		return writeTrace(filepath.Join(c.inst, "events/enable"), "0")
	})
	if err != nil {
		t.Errorf("disarm the trace: %v", err)
	}
	if err := unix.Rmdir(c.inst); err != nil && !errors.Is(err, unix.ENOENT) {
		t.Errorf("remove %s: %v", c.inst, err)
	}
	for _, d := range c.defined {
		if err := appendTrace(filepath.Join(traceRoot, "kprobe_events"), "-:"+d); err != nil {
			t.Errorf("remove kprobe %s: %v", d, err)
		}
	}
}

// begin clears the buffer and starts tracing (no thread's system calls).
func (c *cardTracer) begin(t *testing.T) {
	t.Helper()
	if err := c.followThread(0); err != nil {
		t.Fatal(err)
	}
	if err := writeTrace(filepath.Join(c.inst, "trace"), ""); err != nil {
		t.Fatal(err)
	}
	if err := writeTrace(filepath.Join(c.inst, "tracing_on"), "1"); err != nil {
		t.Fatal(err)
	}
}

// end stops tracing and returns what was traced; a buffer that lost
// events fails the test (a gap in the record is no gap in the reads).
func (c *cardTracer) end(t *testing.T) cardRecord {
	t.Helper()
	if err := writeTrace(filepath.Join(c.inst, "tracing_on"), "0"); err != nil {
		t.Fatal(err)
	}
	stats, _ := filepath.Glob(filepath.Join(c.inst, "per_cpu", "cpu*", "stats"))
	for _, s := range stats {
		b, _ := os.ReadFile(s)
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); (strings.HasPrefix(l, "overrun:") || strings.HasPrefix(l, "dropped events:")) && f[len(f)-1] != "0" {
				t.Fatalf("%s: %s: the trace lost events", s, l)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(c.inst, "trace"))
	if err != nil {
		t.Fatal(err)
	}
	return parseCardTrace(string(b))
}

// traceLineRE is a line of the text trace: task-pid [cpu] flags secs.µs: event: body.
var traceLineRE = regexp.MustCompile(`^\s*(.*)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+(\d+)\.(\d+):\s+([a-z_0-9]+):\s*(.*)$`)

var (
	posRE   = regexp.MustCompile(` pos=(\d+)`)
	cmdRE   = regexp.MustCompile(` cmd=(-?\d+)`)
	prevRE  = regexp.MustCompile(`prev_comm=(.*) prev_pid=(\d+) prev_prio=(\d+) prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+) next_prio=(\d+)`)
	wakeRE  = regexp.MustCompile(`pid=(\d+) prio=(\d+)`)
	irqNoRE = regexp.MustCompile(`irq=(\d+) name=(\S+)`)
)

// traceEvent is one traced event (ts: CLOCK_MONOTONIC ns, µs resolution).
type traceEvent struct {
	ts      int64
	cpu     int
	ctx     byte // the flags' third character: h hardirq, s softirq, . task
	pid     int  // the task the event ran in
	kind    string
	pos     int64  // ptr: the position returned, frames
	cmd     int    // trig
	in, out int    // sched_switch: the player's pid switched in, out (0: none); sched_wakeup: in
	state   string // sched_switch: the state the player switched out in (S asleep, R/R+ preempted)
	other   string // sched_switch: the task on the other side of the player's switch (next_comm out, prev_comm in)
	irq     string
	nr      int    // sys_enter, sys_exit: the system call's number
	req     uint64 // sys_enter: its second argument (ioctl's request)
}

// cardRecord is one run's trace.
type cardRecord struct {
	reads, irqs, elapsed, trigs, sched []traceEvent
	sys                                []traceEvent // the followed thread's system calls (cardanswer_vm_test.go)
}

func parseCardTrace(s string) cardRecord {
	var r cardRecord
	for _, l := range strings.Split(s, "\n") {
		m := traceLineRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		sec, _ := strconv.ParseInt(m[5], 10, 64)
		us, _ := strconv.ParseInt(m[6], 10, 64)
		for i := len(m[6]); i < 6; i++ {
			us *= 10
		}
		e := traceEvent{ts: sec*1e9 + us*1000, kind: m[7]}
		e.cpu, _ = strconv.Atoi(m[3])
		e.pid, _ = strconv.Atoi(m[2])
		if len(m[4]) >= 3 {
			e.ctx = m[4][2]
		}
		body := m[8]
		switch {
		case strings.HasPrefix(e.kind, "ptr"):
			if p := posRE.FindStringSubmatch(body); p != nil {
				e.pos, _ = strconv.ParseInt(p[1], 10, 64)
			}
			r.reads = append(r.reads, e)
		case e.kind == "trig":
			if p := cmdRE.FindStringSubmatch(body); p != nil {
				e.cmd, _ = strconv.Atoi(p[1])
			}
			r.trigs = append(r.trigs, e)
		case e.kind == "elapsed":
			r.elapsed = append(r.elapsed, e)
		case e.kind == "irq_handler_entry":
			if p := irqNoRE.FindStringSubmatch(body); p != nil {
				e.irq = p[2]
			}
			r.irqs = append(r.irqs, e)
		case e.kind == "sched_switch":
			if p := prevRE.FindStringSubmatch(body); p != nil {
				if p[3] == strconv.Itoa(playerPrio) {
					e.out, _ = strconv.Atoi(p[2])
					e.state, e.other = p[4], p[5]
				}
				if p[7] == strconv.Itoa(playerPrio) {
					e.in, _ = strconv.Atoi(p[6])
					e.other = p[1]
				}
			}
			r.sched = append(r.sched, e)
		case e.kind == "sched_wakeup":
			if p := wakeRE.FindStringSubmatch(body); p != nil && p[2] == strconv.Itoa(playerPrio) {
				e.in, _ = strconv.Atoi(p[1])
			}
			r.sched = append(r.sched, e)
		case e.kind == "sys_enter" || e.kind == "sys_exit":
			if parseSys(&e, body) {
				r.sys = append(r.sys, e)
			}
		}
	}
	return r
}

// span is a stretch of time (CLOCK_MONOTONIC ns).
type span struct{ from, to int64 }

func (s span) len() int64 { return s.to - s.from }

// running are the stretches the stream ran: from a START (or PAUSE
// RELEASE, RESUME) to the next STOP (or PAUSE PUSH, SUSPEND).
func (r cardRecord) running() []span {
	var out []span
	start := int64(-1)
	for _, e := range r.trigs {
		switch e.cmd {
		case 1, 4, 6:
			if start < 0 {
				start = e.ts
			}
		case 0, 3, 5:
			if start >= 0 {
				out = append(out, span{start, e.ts})
				start = -1
			}
		}
	}
	return out
}

// stops are the STOP triggers but the run's last: the kernel stopping the
// stream for an xrun (after an xrun the stream is not running, and the
// player's drop triggers nothing; the last STOP is the run's end).
func (r cardRecord) stops() []traceEvent {
	var out []traceEvent
	for _, e := range r.trigs {
		if e.cmd == 0 {
			out = append(out, e)
		}
	}
	if len(out) > 0 {
		out = out[:len(out)-1]
	}
	return out
}

// posGap is a stretch between two successive position reads.
type posGap struct {
	span
	posFrom, posTo int64 // the positions read at its ends (-1: a trigger)
	atStart        bool  // from the START or the stretch's first read: the card starting
}

// gaps are the stretches of at least min between successive instants of
// ts within the running stretches (their starts and ends counted as
// instants: a freeze right after a START or before a STOP leaves no read
// either).
func gaps(run []span, evs []traceEvent, min int64) []posGap {
	var out []posGap
	for _, s := range run {
		// At a start: from the START or a read within a millisecond of
		// it (the player's own reads right after its start).
		atStart := func(prev int64) bool { return prev-s.from <= int64(time.Millisecond) }
		prev, prevPos := s.from, int64(-1)
		for _, e := range evs {
			if e.ts < s.from || e.ts > s.to {
				continue
			}
			if e.ts-prev >= min {
				out = append(out, posGap{span{prev, e.ts}, prevPos, e.pos, atStart(prev)})
			}
			prev, prevPos = e.ts, e.pos
		}
		if s.to-prev >= min {
			out = append(out, posGap{span{prev, s.to}, prevPos, -1, atStart(prev)})
		}
	}
	return out
}

// intervals are the times between successive events of evs within the
// running stretches.
func intervals(run []span, evs []traceEvent) []int64 {
	var out []int64
	for _, s := range run {
		prev := int64(-1)
		for _, e := range evs {
			if e.ts < s.from || e.ts > s.to {
				continue
			}
			if prev >= 0 {
				out = append(out, e.ts-prev)
			}
			prev = e.ts
		}
	}
	return out
}

// histogram says how many of the intervals fall in each quarter
// millisecond, up to 4 ms and beyond.
func histogram(iv []int64) string {
	const bin, bins = 250_000, 16
	var n [bins + 1]int
	for _, v := range iv {
		n[min(v/bin, bins)]++
	}
	var b strings.Builder
	for i, k := range n {
		if k == 0 {
			continue
		}
		if i == bins {
			fmt.Fprintf(&b, " ≥%.2f:%d", float64(i*bin)/1e6, k)
		} else {
			fmt.Fprintf(&b, " %.2f:%d", float64(i*bin)/1e6, k)
		}
	}
	return "ms" + b.String()
}

func longest(gs []posGap) int64 {
	var l int64
	for _, g := range gs {
		l = max(l, g.len())
	}
	return l
}

// lastBefore is the last event of evs at or before ts (ok false: none).
func lastBefore(evs []traceEvent, ts int64) (traceEvent, bool) {
	i := sort.Search(len(evs), func(i int) bool { return evs[i].ts > ts })
	if i == 0 {
		return traceEvent{}, false
	}
	return evs[i-1], true
}

// readStep is the card's pointer step as the kernel read it: the least
// advance, modulo the buffer, between two successive reads that differ.
// A DMA position read anywhere (HD-Audio) has small ones; a pointer that
// moves a period at a time (ES1370 under qemu) only that.
func readStep(reads []traceEvent, bufFrames int64) int64 {
	step := bufFrames
	for i := 1; i < len(reads); i++ {
		if d := ((reads[i].pos-reads[i-1].pos)%bufFrames + bufFrames) % bufFrames; d > 0 {
			step = min(step, d)
		}
	}
	return step
}

// cardLag is how far the card's position, as the kernel read it between
// from and to, fell behind the clock at most: over successive reads less
// than a buffer apart (so that the position read modulo the buffer
// counts every frame), the time elapsed less the frames moved at the
// nominal rate, summed from the first read and taken at its largest.
// A card whose DMA stood still while the reads went on falls behind.
func cardLag(reads []traceEvent, from, to int64, bufFrames int64, nsPerFrame float64) int64 {
	var lag, worst int64
	var prev *traceEvent
	for i := range reads {
		e := &reads[i]
		if e.ts < from || e.ts > to {
			continue
		}
		if prev != nil {
			if e.ts-prev.ts >= int64(float64(bufFrames)*nsPerFrame) {
				lag = 0 // a gap of a buffer: the reads cannot count it
			} else {
				moved := ((e.pos-prev.pos)%bufFrames + bufFrames) % bufFrames
				lag = max(lag+(e.ts-prev.ts)-int64(float64(moved)*nsPerFrame), 0)
				worst = max(worst, lag)
			}
		}
		prev = e
	}
	return worst
}

// stoppedCPUs says how long every CPU's witness was held within s: the
// least, over the CPUs, of the time the witness's stops cover in s. A
// pause of the whole machine holds every CPU's witness for nearly all of
// it; a pause of the emulated card alone (qemu's audio timer, on its
// main loop, late while the vCPUs ran) holds none.
func stoppedCPUs(fs []freeze, s span, cpus int) int64 {
	least := int64(-1)
	for c := 0; c < cpus; c++ {
		var held int64
		for _, f := range fs {
			if f.cpu != c {
				continue
			}
			if lo, hi := max(f.due, s.from), min(f.woke, s.to); hi > lo {
				held += hi - lo
			}
		}
		if least < 0 || held < least {
			least = held
		}
	}
	return max(least, 0)
}

// playerRun is one traced run of a player at 2×64 on a card.
type playerRun struct {
	name     string // aplay -M, latencytest mmap, ...
	xruns    int    // what the player reported
	rec      cardRecord
	lt       *ltRun // latencytest's, nil for aplay
	from, to int64
	tid      int   // the audio thread whose system calls were traced (0: not found)
	sysFrom  int64 // since when
}

// TestVMCardPauses: what the emulated cards' anomalies at 2×64 are, by
// the kernel's own record (issue 47 items 3 and 4; docs/alsa.md, "Xruns").
// On each traced card (HD-Audio, ES1370) it plays 10 s at 2×64 with
// aplay -M, latencytest (mmap), plain aplay and latencytest --access rw,
// each traced as above beside the freeze witness, and logs per run: the
// position reads and the gaps of a buffer or more between them (whether
// the whole machine was stopped through each, by the witness), the card's
// interrupts (intervals in quarter milliseconds), the xruns the kernel
// stopped the stream for, each with where it fell: after how long an
// interrupt gap, and whether the player had run since the interrupt
// before. It asserts what is decidable: the trace lost nothing, the
// kernel's xrun stops are the xruns each player reported, and every
// pointer jump latencytest recorded is the card pausing in the kernel's
// own reads: a gap of a buffer or more in the position reads since the
// period before or since the stream's last restart or jump (the card
// read modulo the buffer after nobody read it for a buffer's time), or
// the card's read position standing ≥ 3/4 buffer behind the clock while
// it was read. A jump that is neither is latencytest's reading: on
// HD-Audio with --access rw some are, and the test fails on them (docs/
// notes/cardtrace-2026-12-06.md; the players' answer to the interrupt and
// the interrupts' 1 ms tick are logged, for ES1370's xruns). Each answer
// is also split, by the system calls of the player's audio thread traced
// in the same instance, into the wakeup, the thread's system calls (by
// call, ioctl by request), its user time and any preemption, and
// latencytest's is set against the same-access aplay's
// (cardanswer_vm_test.go; issue 47 item 4).
// scripts/vmtest -cards hda -long -run TestVMCardPauses (or -cards es1370).
//
//vmtest:long
func TestVMCardPauses(t *testing.T) {
	cards := needCards(t)
	var traced []string
	for _, name := range comparedCards() {
		if _, ok := cardTrace[name]; ok {
			traced = append(traced, name)
		}
	}
	if len(traced) == 0 {
		t.Skip("no traced card (hda, es1370) in VMTEST_CARDS: scripts/vmtest -cards hda -long -run TestVMCardPauses")
	}
	const period, periods = 64, 2
	const d = 10 * time.Second
	periodNS := int64(period) * 1e9 / 48000
	bufNS := periodNS * periods
	for _, name := range traced {
		c := cards[name]
		t.Run(name, func(t *testing.T) {
			players := []struct {
				name   string
				aplay  bool
				access string
			}{
				{"aplay -M", true, "mmap"},
				{"latencytest mmap", false, "mmap"},
				{"aplay (rw)", true, "rw"},
				{"latencytest rw", false, "rw"},
			}
			w := startFreezeWitness(t)
			// The same runs untraced first, on the same boot: what the
			// tracing itself adds.
			var plain []string
			for _, p := range players {
				if p.aplay {
					n := len(startAplayOn(t, c.hw(), period, periods, d, p.access == "mmap", -1).wait(t))
					plain = append(plain, fmt.Sprintf("%s: %d xruns", p.name, n))
					continue
				}
				lt := runLatencytest(t, period, periods, d, nil, "--device", c.hw(), "--access", p.access)
				plain = append(plain, fmt.Sprintf("%s: %d xruns, %d pointer jumps", p.name, len(lt.xruns), lt.ph.PointerJumps))
			}
			t.Logf("%s 2×64, 10 s each, untraced: %s", name, strings.Join(plain, "; "))
			tr := startCardTrace(t, cardTrace[name])
			var runs []playerRun
			for _, p := range players {
				pr := playerRun{name: p.name}
				tr.begin(t)
				pr.from = nowMono()
				follow := tr.followPlayer(t)
				if p.aplay {
					pr.xruns = len(startAplayOn(t, c.hw(), period, periods, d, p.access == "mmap", -1).wait(t))
				} else {
					lt := runLatencytest(t, period, periods, d, nil, "--device", c.hw(), "--access", p.access)
					pr.lt = &lt
					pr.xruns = len(lt.xruns)
				}
				pr.to = nowMono()
				pr.tid, pr.sysFrom = follow()
				pr.rec = tr.end(t)
				runs = append(runs, pr)
			}
			fs := w.freezes()
			var summary []string
			for _, pr := range runs {
				summary = append(summary, judgeCardRun(t, name, pr, fs, bufNS, periodNS))
			}
			t.Logf("%s 2×64, 10 s each, untraced: %s\n  traced:\n  %s", name, strings.Join(plain, "; "), strings.Join(summary, "\n  "))
			logAnswerSplits(t, name, runs)
		})
	}
}

func nowMono() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// judgeCardRun logs one run's record, checks what is decidable, and
// returns its summary line.
func judgeCardRun(t *testing.T, card string, pr playerRun, fs []freeze, bufNS, periodNS int64) string {
	t.Helper()
	r := pr.rec
	run := r.running()
	var runNS int64
	for _, s := range run {
		runNS += s.len()
	}
	readGaps := gaps(run, r.reads, bufNS)
	irqGaps := gaps(run, r.irqs, bufNS)
	stops := r.stops()
	cpus := 0
	for _, f := range fs {
		cpus = max(cpus, f.cpu+1)
	}
	cpus = max(cpus, 2)
	// Each read gap: how long, the positions at its ends, and how much of
	// it every CPU's witness was held (the machine stopped).
	whole, atStart := 0, 0
	var gl []string
	for _, g := range readGaps {
		if g.atStart {
			atStart++
		}
		held := stoppedCPUs(fs, g.span, cpus)
		if held*2 >= g.len() {
			whole++
		}
		if len(gl) == 12 {
			gl = append(gl, "…")
		}
		if len(gl) > 12 {
			continue
		}
		gl = append(gl, fmt.Sprintf("%.2f ms at %.3f s (pos %d→%d, every CPU held %.2f ms)", float64(g.len())/1e6, float64(g.from-pr.from)/1e9, g.posFrom, g.posTo, float64(held)/1e6))
	}
	t.Logf("%s on %s: %.2f s running in %d stretches; %d position reads, %d gaps ≥ a buffer (%.2f ms; %d at a start), longest %.2f ms, %d with the whole machine stopped through half or more: %s",
		pr.name, card, float64(runNS)/1e9, len(run), len(r.reads), len(readGaps), float64(bufNS)/1e6, atStart, float64(longest(readGaps))/1e6, whole, strings.Join(gl, "; "))
	t.Logf("%s on %s: %d card interrupts (%d snd_pcm_period_elapsed), %d gaps ≥ a buffer, longest %.2f ms; intervals %s",
		pr.name, card, len(r.irqs), len(r.elapsed), len(irqGaps), float64(longest(irqGaps))/1e6, histogram(intervals(run, r.irqs)))

	// The xruns: the kernel's stops against what the player reported.
	if len(stops) != pr.xruns {
		t.Errorf("%s: the kernel stopped the stream %d times for an xrun, the player reported %d", pr.name, len(stops), pr.xruns)
	}
	inGap, playerLate := 0, 0
	var beforeX, sinceIRQ []int64
	for k, x := range stops {
		irq, _ := lastBefore(r.irqs, x.ts)
		var prevIRQ traceEvent
		if i := slices.IndexFunc(r.irqs, func(e traceEvent) bool { return e.ts == irq.ts }); i > 0 {
			prevIRQ = r.irqs[i-1]
		}
		read, _ := lastBefore(r.reads, x.ts-1)
		g := false
		for _, rg := range readGaps {
			if rg.to >= x.ts-int64(time.Millisecond) && rg.to <= x.ts {
				g = true
			}
		}
		if g {
			inGap++
		}
		// Did the player run (switch out, done with its period) between
		// the interrupt before this one and the stop?
		ran := false
		woken := int64(0)
		for _, e := range r.sched {
			if e.ts > prevIRQ.ts && e.ts <= x.ts {
				if e.out != 0 {
					ran = true
				}
				if e.kind == "sched_wakeup" && e.in != 0 && woken == 0 {
					woken = e.ts
				}
			}
		}
		if !ran {
			playerLate++
		}
		beforeX = append(beforeX, irq.ts-prevIRQ.ts)
		sinceIRQ = append(sinceIRQ, x.ts-irq.ts)
		if k >= 12 {
			continue
		}
		t.Logf("  %s xrun at %.3f s (ctx %c, pid %d): interrupt %.3f ms before, the one before it %.3f ms earlier; last read %.3f ms before; after a read gap ≥ a buffer: %v; player switched out since the interrupt before: %v (woken %s)",
			pr.name, float64(x.ts-pr.from)/1e9, x.ctx, x.pid, float64(x.ts-irq.ts)/1e6, float64(irq.ts-prevIRQ.ts)/1e6, float64(x.ts-read.ts)/1e6, g, ran, wokeAfter(woken, prevIRQ.ts))
	}

	if len(stops) > 0 {
		t.Logf("%s on %s: the interrupt before each xrun came after an interval of %s; the xrun that long after it: %s", pr.name, card, histogram(beforeX), histogram(sinceIRQ))
	}

	resp := responses(r, bufNS)
	t.Logf("%s on %s: %s", pr.name, card, resp)

	// latencytest's pointer jumps: each in a read gap of a buffer or more.
	jumps, matched, stood, since, within := 0, 0, 0, 0, 0
	stepNS := int64(float64(readStep(r.reads, 128)) * float64(periodNS) / 64)
	if pr.lt != nil {
		ss := pr.lt.ss
		for i, s := range ss {
			if s.Flags&rundata.FlagPointerJump == 0 {
				continue
			}
			jumps++
			lo := s.Woke - 4*bufNS
			if i > 0 {
				lo = ss[i-1].Due - bufNS
			}
			var found *posGap
			for k := range readGaps {
				if g := &readGaps[k]; g.from >= lo && g.to <= s.Woke+int64(time.Millisecond) {
					if found == nil || g.len() > found.len() {
						found = g
					}
				}
			}
			// The widest window: since the stream's last restart (an
			// xrun) or the jump before: a buffer lost earlier shows as
			// dues dated early until the driver sees it.
			from := pr.from
			for k := i - 1; k >= 0; k-- {
				if ss[k].Xrun != 0 || ss[k].Flags&rundata.FlagPointerJump != 0 {
					from = ss[k].Woke
					break
				}
			}
			var earlier *posGap
			for k := range readGaps {
				if g := &readGaps[k]; g.from >= from && g.to <= s.Woke+int64(time.Millisecond) {
					earlier = g
				}
			}
			if found == nil && earlier != nil {
				since++
				t.Logf("  pointer jump at period %d (woke %.3f s, due %.3f ms before): no read gap since the previous period, but one of %.2f ms %.3f ms before the wakeup, since the last restart or jump (%.3f ms before)",
					s.Index, float64(s.Woke-pr.from)/1e9, float64(s.Woke-s.Due)/1e6, float64(earlier.len())/1e6, float64(s.Woke-earlier.to)/1e6, float64(s.Woke-from)/1e6)
				continue
			}
			if found != nil {
				matched++
				t.Logf("  pointer jump at period %d (woke %.3f s, due %.3f ms before): in the read gap of %.2f ms from %.3f ms before the wakeup (pos %d→%d)",
					s.Index, float64(s.Woke-pr.from)/1e9, float64(s.Woke-s.Due)/1e6, float64(found.len())/1e6, float64(s.Woke-found.from)/1e6, found.posFrom, found.posTo)
				continue
			}
			// Not in a gap: did the card, by the kernel's reads, fall
			// a buffer behind the clock (its DMA stood still while the
			// reads went on)?
			l := cardLag(r.reads, lo, s.Woke, 128, float64(periodNS)/64)
			if l >= bufNS*3/4 {
				stood++
				t.Logf("  pointer jump at period %d (woke %.3f s, due %.3f ms before): no read gap, but the card's position fell %.2f ms behind the clock in the kernel's own reads since the previous period's due",
					s.Index, float64(s.Woke-pr.from)/1e9, float64(s.Woke-s.Due)/1e6, float64(l)/1e6)
				continue
			}
			// A pointer that moves a step at a time (ES1370: a period)
			// is placed by a read only to within a step: the card may
			// have been up to a step further behind than the reads say.
			if l+stepNS >= bufNS*3/4 {
				within++
				t.Logf("  pointer jump at period %d (woke %.3f s, due %.3f ms before): the card's position %.2f ms behind the clock in the kernel's reads, within its step (%.2f ms) of 3/4 buffer: not decided",
					s.Index, float64(s.Woke-pr.from)/1e9, float64(s.Woke-s.Due)/1e6, float64(l)/1e6, float64(stepNS)/1e6)
				continue
			}
			// Neither: what the kernel read around it, and the samples.
			var near []string
			for _, e := range r.reads {
				if e.ts >= lo && e.ts <= s.Woke {
					near = append(near, fmt.Sprintf("%+.3f:%d", float64(e.ts-s.Woke)/1e6, e.pos))
				}
			}
			t.Errorf("pointer jump at period %d (woke %.3f s, due %.3f ms before, avail %d) in no read gap ≥ a buffer since the last restart or jump, the card not behind the clock; the reads since the previous period's due (ms from the wakeup:pos): %s",
				s.Index, float64(s.Woke-pr.from)/1e9, float64(s.Woke-s.Due)/1e6, s.Avail, strings.Join(near, " "))
			for _, o := range ss[max(i-4, 0):min(i+2, len(ss))] {
				t.Logf("    period %d: due %+.3f ms, woke %+.3f, grid %+.3f (from this wakeup), avail %d, flags %#x, xrun %d",
					o.Index, float64(o.Due-s.Woke)/1e6, float64(o.Woke-s.Woke)/1e6, float64(o.Grid-s.Woke)/1e6, o.Avail, o.Flags, o.Xrun)
			}
		}
	}
	line := fmt.Sprintf("%s: %s; %d xruns (kernel stops %d; %d after a read gap ≥ a buffer, %d with the player not run since the interrupt before), %d read gaps ≥ a buffer (%d at a start, %d the whole machine), %d interrupt gaps ≥ a buffer, %d reads, %d interrupts",
		pr.name, resp, pr.xruns, len(stops), inGap, playerLate, len(readGaps), atStart, whole, len(irqGaps), len(r.reads), len(r.irqs))
	if pr.lt != nil {
		line += fmt.Sprintf("; %d pointer jumps, %d in a read gap ≥ a buffer since the period before, %d in one earlier since the last restart or jump, %d where the card's read position fell ≥ 3/4 buffer behind the clock, %d within a pointer step of that (not decided), %d none of these", jumps, matched, since, stood, within, jumps-matched-since-stood-within)
	}
	return line
}

func wokeAfter(woken, irq int64) string {
	if woken == 0 {
		return "not woken since"
	}
	return fmt.Sprintf("woken %.3f ms after it", float64(woken-irq)/1e6)
}

// responses says how soon the player answered the card's interrupts: its
// audio thread is the task the card's interrupts wake most (a wakeup
// recorded in interrupt context, prio 19); each such wakeup's answer is
// the thread's next switch out (its period written, back to sleep), from
// the interrupt before the wakeup. Percentiles and how many took longer
// than a millisecond (qemu's audio timer tick: the next interrupt can
// come that soon, and finds the buffer empty if the period is not
// written) and than the buffer.
func responses(r cardRecord, bufNS int64) string {
	woken := map[int]int{}
	for _, e := range r.sched {
		if e.kind == "sched_wakeup" && e.in != 0 && e.ctx != '.' {
			woken[e.in]++
		}
	}
	pid, most := 0, 0
	for p, n := range woken {
		if n > most {
			pid, most = p, n
		}
	}
	if pid == 0 {
		return "no player thread woken by the card"
	}
	var rs []int64
	for i, e := range r.sched {
		if e.kind != "sched_wakeup" || e.in != pid || e.ctx == '.' {
			continue
		}
		irq, ok := lastBefore(r.irqs, e.ts)
		if !ok {
			continue
		}
		for _, o := range r.sched[i+1:] {
			if o.kind == "sched_switch" && o.out == pid {
				rs = append(rs, o.ts-irq.ts)
				break
			}
		}
	}
	if len(rs) == 0 {
		return fmt.Sprintf("thread %d woken %d times by the card, never switched out", pid, most)
	}
	slices.Sort(rs)
	pc := dist(rs).pc
	over := func(d int64) int {
		return len(rs) - sort.Search(len(rs), func(i int) bool { return rs[i] > d })
	}
	return fmt.Sprintf("thread %d answered %d interrupt wakeups (interrupt to its switch out) p50 %.0f p90 %.0f p99 %.0f max %.0f µs, %d over 1 ms, %d over the buffer",
		pid, len(rs), pc(0.5), pc(0.9), pc(0.99), float64(rs[len(rs)-1])/1e3, over(int64(time.Millisecond)), over(bufNS))
}
