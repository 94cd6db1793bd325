// Package ktrace asks the kernel's tracer what ran instead of the audio
// thread: it records scheduler, interrupt and softirq events in a tracefs
// instance of its own (so a user's own tracing is left alone) and, for a
// late wakeup, shares out the time from the period's due instant to the
// thread's wakeup among the interrupts, softirqs and threads that held its
// CPU, the way rtla timerlat's auto-analysis does.
//
// It runs in latencytest's parent process, never in the engine: reading
// and parsing the trace allocates.
package ktrace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/internal/held"
	"latencytest/internal/mono"
	"latencytest/internal/procfile"
	"latencytest/rundata"
)

// defaultKeepNS is how much trace history each CPU keeps: more than the
// time a sample takes to reach the parent (the engine drains every 100 ms).
const defaultKeepNS = 3e9

// cpuLog is one CPU's recent events and its state before them.
type cpuLog struct {
	base cpuState
	evs  []Event
	// gaps are the stretches in which the kernel dropped this CPU's events
	// (its buffer was full): from the last event read before the loss to
	// the first after it. A window over one is explained from what is
	// left, and says so (rundata.Spike.EventsLost). lostFrom is the start
	// of a loss whose end is not read yet (losing).
	gaps     [][2]int64
	losing   bool
	lostFrom int64
	occ      occupant // to find the switches the kernel did not record
}

// lose notes that events were dropped after the last one read.
func (l *cpuLog) lose() {
	if l.losing {
		return
	}
	l.losing, l.lostFrom = true, l.base.since
	if n := len(l.evs); n > 0 {
		l.lostFrom = l.evs[n-1].TS
	}
}

// lostIn says whether events were dropped in [from, to).
func (l *cpuLog) lostIn(from, to int64) bool {
	if l.losing && l.lostFrom < to {
		return true
	}
	for _, g := range l.gaps {
		if g[0] < to && from < g[1] {
			return true
		}
	}
	return false
}

// Session is a running trace.
type Session struct {
	fs   *tracefs
	inst string // the instance directory
	fd   int    // its trace_pipe, when the binary records cannot be read
	raw  *rawReader

	debug io.Writer // Options.Debug

	mu     sync.Mutex
	cpus   map[int]*cpuLog
	latest int64 // the newest event's time
	// upTo: every event before it has been read, on every traced CPU
	// (trace_pipe merges the CPUs in time order: latest).
	upTo   int64
	lost   int64 // events the kernel dropped (its buffer was full)
	keepNS int64
	// budget: how the kernel limits real-time threads' time, so that
	// they can be throttled (none: sched_rt_runtime_us is -1).
	budget rtLimit
	// names is what /proc said about threads when each was first seen
	// running, while it was still there to be asked.
	names procNames
	// ownComm is latencytest's command name: every one of its threads,
	// in the parent, the engine and the stressors, shows it.
	ownComm string

	// noise: the osnoise tracer runs in the instance without its
	// workload (osnoise.go), its shared settings held; nil when not.
	noise     *held.Hold
	noiseNote string // why it does not, when it does not
	clk       clockMap

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	stopErr  error
	err      error // why the reader stopped early
}

// Options choose what is traced.
type Options struct {
	// Root is where tracefs is (or is to be mounted); "" looks in
	// /sys/kernel/tracing, then /sys/kernel/debug/tracing.
	Root string
	// CPUs limits the trace to the audio thread's CPUs (nil: all), which
	// keeps its cost down under loads that switch tasks often.
	CPUs []int
	// BufferKB is the per-CPU trace buffer (0: 4096).
	BufferKB int
	// KeepNS is how much history is kept to explain a spike with (0: 3 s).
	KeepNS int64
	// Debug, if not nil, gets every event of a spike's window whose two
	// accounts (sched/irq and osnoise) disagree on the top cause's time by
	// more than 5 %: the evidence to find which one is wrong. Without the
	// osnoise account, every spike's window: the evidence a test that
	// knows the culprit needs when the one account is wrong.
	Debug io.Writer

	// Virtual says the machine is virtual (sysinfo's Context.Virtual):
	// a CPU that stayed idle with the real-time audio thread runnable on
	// it, the real-time budget not spent, was stopped by its hypervisor.
	Virtual bool

	// Store records the osnoise tracer's shared settings while they are
	// changed (nil: held.OpenKernel's, /run/latencytest); without one the
	// tracer is not used.
	Store *held.Store

	// text reads trace_pipe's text even where the binary records can be
	// read (the fallback, for its tests).
	text bool
}

// Start creates a trace instance and starts recording. The error says in
// one line why tracing is not possible here (no tracefs, no permission).
func Start(o Options) (*Session, error) {
	fs, err := findTracefs(o.Root)
	if err != nil {
		return nil, err
	}
	store, storeErr := o.Store, error(nil)
	if store == nil {
		store, storeErr = held.OpenKernel()
	}
	fs.removeStale(store) // what it cannot remove is no reason not to trace
	inst, err := fs.newInstance()
	if err != nil {
		return nil, err
	}
	keep := o.KeepNS
	if keep <= 0 {
		keep = defaultKeepNS
	}
	s := &Session{fs: fs, inst: inst, fd: -1, keepNS: keep, debug: o.Debug, budget: rtBudget(o.Virtual), cpus: map[int]*cpuLog{}, names: newProcNames(), ownComm: procComm("self"), stop: make(chan struct{}), done: make(chan struct{})}
	if err := s.setup(o, store, storeErr); err != nil {
		s.teardown()
		return nil, err
	}
	s.Own(os.Getpid(), "latencytest parent")
	go s.read()
	return s, nil
}

// Audio limits the wakeups recorded to those of the audio threads (one,
// or one per CPU under run --cpus), the only ones the attribution reads.
// Under a load that switches tasks often (hackbench), every other task's
// wakeup is one more event written on the audio thread's CPUs and decoded
// by the parent, as many as the switches. The kernel filters them before
// they are written. No thread, or a zero Thread, records every wakeup
// again: between phases, so that the next audio thread's first wakeups are
// kept before its id is known.
func (s *Session) Audio(threads ...Thread) error {
	filter, err := wakeupFilter(threads)
	if err != nil {
		return err
	}
	var errs []error
	for _, ev := range []string{"sched_wakeup", "sched_wakeup_new", "sched_migrate_task"} {
		errs = append(errs, writeFile(s.inst, filepath.Join("events", "sched", ev, "filter"), filter))
	}
	return errors.Join(errs...)
}

// wakeupFilter is the kernel's filter that keeps the threads' wakeups
// only; "0" clears it (no thread, or a zero Thread among them).
func wakeupFilter(threads []Thread) (string, error) {
	var terms []string
	for _, t := range threads {
		switch {
		case t.TID != 0:
			terms = append(terms, "pid == "+strconv.Itoa(t.TID))
		case t.Comm != "":
			if strings.ContainsFunc(t.Comm, func(r rune) bool { return r == '"' || r == '\\' || r < ' ' || r > '~' }) {
				return "", fmt.Errorf("tracefs: audio thread name %q: not filtered on (quotes, backslashes or non-ASCII)", t.Comm)
			}
			terms = append(terms, `comm == "`+t.Comm+`"`)
		default:
			return "0", nil
		}
	}
	if len(terms) == 0 {
		return "0", nil
	}
	return strings.Join(terms, " || "), nil
}

// Load names the current phase's stressor, whose processes run
// latencytest's own binary: its threads, in no process named by Own or
// running as comm (stress.Comm), are named after it ("" when the phase has
// no stressor).
func (s *Session) Load(name, comm string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names.others, s.names.loadComm = "", ""
	if name != "" {
		s.names.others, s.names.loadComm = "latencytest stressor "+name, comm
	}
}

// OwnGroupOf names the process thread tid belongs to, as Own does.
func (s *Session) OwnGroupOf(tid int, label string) {
	if g := procMember(tid).group; g > 0 {
		s.Own(g, label)
	}
}

// Own names the thread group tgid, one of latencytest's own processes, so
// that its threads are told apart from the others with its command name
// when they hold the audio thread's CPU (docs/spikes.md).
func (s *Session) Own(tgid int, label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names.owners[tgid] = label
}

// setup configures the instance and opens its pipe; the osnoise tracer's
// settings are held in store (nil: not, for storeErr).
func (s *Session) setup(o Options, store *held.Store, storeErr error) error {
	if err := writeFile(s.inst, "trace_clock", "mono"); err != nil {
		return fmt.Errorf("tracefs: the mono trace clock: %w", err)
	}
	kb := o.BufferKB
	if kb <= 0 {
		kb = 4096
	}
	if err := writeFile(s.inst, "buffer_size_kb", fmt.Sprint(kb)); err != nil {
		return err
	}
	if len(o.CPUs) > 0 {
		if err := writeFile(s.inst, "tracing_cpumask", cpuMask(o.CPUs)); err != nil {
			return err
		}
	}
	n := 0
	for _, ev := range tracedEvents {
		if writeFile(s.inst, filepath.Join("events", ev, "enable"), "1") == nil {
			n++
		}
	}
	if n == 0 {
		return errors.New("tracefs: no scheduler or interrupt event can be enabled")
	}
	if why, ok := s.fs.osnoiseUsable(); !ok {
		s.noiseNote = why
	} else if store == nil {
		s.noiseNote = "the osnoise tracer's settings cannot be recorded: " + storeErr.Error()
	} else if h, err := s.fs.startOsnoise(store, s.inst, o.CPUs); err != nil {
		s.noiseNote = "the osnoise tracer could not be started: " + err.Error()
	} else {
		s.noise = h
	}
	if !o.text {
		events := tracedEvents
		if s.noise != nil {
			events = append(slices.Clone(events), osnoiseEvents...)
		}
		s.raw = openRaw(s.fs.root, s.inst, o.CPUs, events)
	}
	if s.raw == nil {
		fd, err := unix.Open(filepath.Join(s.inst, "trace_pipe"), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return fmt.Errorf("tracefs: open trace_pipe: %w", err)
		}
		s.fd = fd
	}
	return writeFile(s.inst, "tracing_on", "1")
}

// tracedEvents are the events the attribution reads; a kernel without some
// (irq_vectors is x86's) records the others.
var tracedEvents = []string{
	"sched/sched_switch", "sched/sched_wakeup", "sched/sched_wakeup_new", "sched/sched_migrate_task",
	"irq/irq_handler_entry", "irq/irq_handler_exit", "irq/softirq_entry", "irq/softirq_exit",
	"irq_vectors",
}

// cpuMask renders CPUs as tracing_cpumask's hex mask (comma-separated
// 32-bit words, most significant first).
func cpuMask(cpus []int) string {
	top := 0
	for _, c := range cpus {
		top = max(top, c)
	}
	words := make([]uint32, top/32+1)
	for _, c := range cpus {
		words[c/32] |= 1 << (c % 32)
	}
	var b bytes.Buffer
	for i := len(words) - 1; i >= 0; i-- {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%08x", words[i])
	}
	return b.String()
}

// read parses the pipe until Stop.
func (s *Session) read() {
	defer close(s.done)
	if s.raw != nil {
		s.readRaw()
		return
	}
	buf := make([]byte, 256<<10)
	var partial []byte
	pfd := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		n, err := readNow(s.fd, buf)
		if err == unix.EAGAIN || (err == nil && n == 0) {
			unix.Poll(pfd, 100)
			continue
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			s.fail(fmt.Errorf("tracefs: read trace_pipe: %w", err))
			return
		}
		data := append(partial, buf[:n]...)
		i := bytes.LastIndexByte(data, '\n')
		if i < 0 {
			partial = data
			continue
		}
		s.add(data[:i+1])
		partial = append(partial[:0:0], data[i+1:]...)
	}
}

// add parses whole lines into the per-CPU logs and prunes old history.
func (s *Session) add(chunk []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(chunk) > 0 {
		line := chunk
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			line, chunk = chunk[:i], chunk[i+1:]
		} else {
			chunk = nil
		}
		if n, cpu, ok := lostEvents(line); ok {
			s.lost += n
			s.log(cpu).lose()
			continue
		}
		if ev, ok := parseLine(string(line)); ok {
			s.record(ev)
		}
	}
	s.upTo = s.latest
	s.prune()
}

// log is cpu's log, made on first use; s.mu is held.
func (s *Session) log(cpu int) *cpuLog {
	l := s.cpus[cpu]
	if l == nil {
		l = &cpuLog{}
		s.cpus[cpu] = l
	}
	return l
}

// record adds an event to its CPU's log; s.mu is held.
func (s *Session) record(ev Event) {
	l := s.log(ev.CPU)
	if l.losing {
		l.gaps = append(l.gaps, [2]int64{l.lostFrom, ev.TS})
		l.losing = false
	}
	if ev.Kind == evNoise {
		// Into the instance's clock (clockMap).
		ev.NoiseStart += s.clk.note(ev.TS, ev.TS-ev.NoiseStart-ev.NoiseNS)
	}
	if ev.Kind == evSwitch {
		for _, m := range l.occ.switched(&ev) {
			l.insert(m)
		}
	} else {
		l.occ.see(&ev)
	}
	l.evs = append(l.evs, ev)
	s.latest = max(s.latest, ev.TS)
	if ev.Kind == evSwitch {
		s.names.note(ev.PID, ev.Prio, ev.Comm == s.ownComm)
	}
}

// prune drops the history older than keepNS; s.mu is held.
func (s *Session) prune() {
	for _, l := range s.cpus {
		l.prune(s.latest - s.keepNS)
	}
}

// lostEvents reads trace_pipe's "CPU:1 [LOST 123 EVENTS]" lines.
func lostEvents(line []byte) (n int64, cpu int, ok bool) {
	i := bytes.Index(line, []byte("[LOST "))
	if i < 0 {
		return 0, 0, false
	}
	_, err := fmt.Sscanf(string(line[i:]), "[LOST %d EVENTS]", &n)
	if j := bytes.Index(line, []byte("CPU:")); j >= 0 && j < i {
		fmt.Sscanf(string(line[j:]), "CPU:%d", &cpu)
	}
	return n, cpu, err == nil
}

// prune folds the events before t into the base state, keeping at least
// the newest one.
func (l *cpuLog) prune(t int64) {
	k := 0
	for k < len(l.evs)-1 && l.evs[k].TS < t {
		l.base.apply(&l.evs[k])
		k++
	}
	for len(l.gaps) > 0 && l.gaps[0][1] < t {
		l.gaps = l.gaps[1:]
	}
	if k > len(l.evs)/2 && k > 0 {
		l.evs = append(l.evs[:0], l.evs[k:]...)
	} else if k > 0 {
		l.evs = l.evs[k:]
	}
}

// Explain shares out the time from due to woke (CLOCK_MONOTONIC ns) on
// the CPU the audio thread ran on. It waits for the trace to reach woke,
// until a second after woke at most: a CPU that falls quiet (idle, no
// tick) writes no event past woke, and a backlog of spikes explained
// after the phase must not wait a second each.
func (s *Session) Explain(audio Thread, due, woke int64) rundata.Spike {
	for {
		s.mu.Lock()
		if s.upTo >= woke || mono.Now() > woke+traceWait || s.err != nil {
			break
		}
		s.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	defer s.mu.Unlock()
	sp := explain(s.cpus, audio, due, woke, s.budget, &s.names)
	if sp.CPU >= 0 {
		sp.EventsLost = s.cpus[sp.CPU].lostIn(due, woke)
	}
	if sp.CPU < 0 && s.debug != nil {
		s.dumpNoAudio(due, woke)
	}
	if s.noise != nil && sp.CPU >= 0 {
		sp.KernelNoise, sp.KernelNoiseUnexplainedNS = explainNoise(s.cpus[sp.CPU].evs, due, woke, audio)
		namePolicies(sp.KernelNoise, sp.Causes)
		if s.debug != nil && disagree(sp) {
			dumpWindow(s.debug, "the two accounts disagree", s.cpus[sp.CPU], due, woke)
		}
	} else if s.debug != nil && sp.CPU >= 0 {
		dumpWindow(s.debug, "a spike", s.cpus[sp.CPU], due, woke)
	}
	return sp
}

// dumpNoAudio writes, for Options.Debug, what the trace held when it had
// no switch of the audio thread up to a spike's end: how far it had been
// read and what each CPU's history spans. s.mu is held.
func (s *Session) dumpNoAudio(due, woke int64) {
	fmt.Fprintf(s.debug, "ktrace: no switch of the audio thread up to the window %d–%d; read up to %d, newest event %d, %d lost, now %d\n",
		due, woke, s.upTo, s.latest, s.lost, mono.Now())
	for cpu, l := range s.cpus {
		if n := len(l.evs); n > 0 {
			fmt.Fprintf(s.debug, "  cpu %d: %d events %d–%d, base %+v\n", cpu, n, l.evs[0].TS, l.evs[n-1].TS, l.base.cur)
		}
	}
}

// namePolicies gives the threads of the osnoise account the policy the
// sched account saw them run at (the osnoise events do not carry it), and
// the name it gave them (latencytest's own threads are named by the part
// of the tool they belong to).
func namePolicies(noise, sched []rundata.Cause) {
	for i := range noise {
		for _, c := range sched {
			if noise[i].PID != 0 && c.PID == noise[i].PID && c.Policy != "" {
				noise[i].Policy, noise[i].Name = c.Policy, c.Name
				break
			}
		}
	}
}

// Osnoise says whether the osnoise tracer's events are recorded, and if
// not, why.
func (s *Session) Osnoise() (bool, string) { return s.noise != nil, s.noiseNote }

// Lost is how many events the kernel dropped.
func (s *Session) Lost() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost
}

// Stop ends the trace and removes the instance, leaving the tracer as it
// was found.
func (s *Session) Stop() error {
	s.stopOnce.Do(func() {
		close(s.stop)
		<-s.done
		s.stopErr = s.teardown()
	})
	return s.stopErr
}

func (s *Session) teardown() error {
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
	s.raw.close()
	if s.fs == nil {
		return nil
	}
	var errs []error
	if s.noise != nil {
		writeFile(s.inst, "tracing_on", "0")
		errs = append(errs, s.fs.stopOsnoise(s.inst, s.noise))
	}
	return errors.Join(append(errs, s.fs.removeInstance(s.inst))...)
}

// Err says why the reader stopped before Stop, if it did.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// procPolicy names a real-time thread's policy (SCHED_FIFO or SCHED_RR)
// from /proc, "" when it has gone.
func procPolicy(tid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", tid))
	if err != nil {
		return ""
	}
	st, ok := procfile.ParseStat(b)
	if !ok || !st.Sched || (st.Policy != unix.SCHED_FIFO && st.Policy != unix.SCHED_RR) {
		return ""
	}
	return rundata.PolicyName(st.Policy)
}

// traceWait is how long after a wakeup its trace may still arrive, ns.
const traceWait = int64(time.Second)

// rtBudget is the kernel's limit on real-time threads' time
// (sched_rt_runtime_us of every sched_rt_period_us; the default, 950000
// of 1000000 µs, where they cannot be read).
func rtBudget(virtual bool) rtLimit {
	read := func(name string, def int64) int64 {
		b, err := os.ReadFile("/proc/sys/kernel/" + name)
		if err != nil {
			return def
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return def
		}
		return v
	}
	rt := read("sched_rt_runtime_us", 950000)
	if rt < 0 {
		return rtLimit{virtual: virtual}
	}
	return rtLimit{runtimeNS: rt * 1000, periodNS: read("sched_rt_period_us", 1000000) * 1000, virtual: virtual}
}
