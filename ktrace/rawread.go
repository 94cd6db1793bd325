package ktrace

import (
	"fmt"
	"latencytest/internal/mono"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawReader reads each traced CPU's binary records (raw.go says why).
type rawReader struct {
	format *rawFormat
	cpus   []rawCPU
}

// rawCPU is one CPU's trace_pipe_raw.
type rawCPU struct {
	cpu  int
	fd   int
	upTo int64 // every record of this CPU before it has been read
}

// openRaw opens the instance's per-CPU binary pipes of cpus (nil: every
// CPU) for events, or returns nil when the kernel's layout cannot be read:
// the session then reads trace_pipe's text.
func openRaw(root, inst string, cpus []int, events []string) *rawReader {
	f, err := loadRawFormat(root, events)
	if err != nil {
		return nil
	}
	if len(cpus) == 0 {
		cpus = instanceCPUs(inst)
	}
	r := &rawReader{format: f}
	for _, c := range cpus {
		p := filepath.Join(inst, "per_cpu", "cpu"+strconv.Itoa(c), "trace_pipe_raw")
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			r.close()
			return nil
		}
		r.cpus = append(r.cpus, rawCPU{cpu: c, fd: fd})
	}
	if len(r.cpus) == 0 {
		return nil
	}
	return r
}

// instanceCPUs lists the CPUs an instance has buffers for.
func instanceCPUs(inst string) []int {
	ms, _ := filepath.Glob(filepath.Join(inst, "per_cpu", "cpu*"))
	var cpus []int
	for _, m := range ms {
		if c, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(m), "cpu")); err == nil {
			cpus = append(cpus, c)
		}
	}
	sort.Ints(cpus)
	return cpus
}

func (r *rawReader) close() {
	if r == nil {
		return
	}
	for i := range r.cpus {
		if r.cpus[i].fd >= 0 {
			unix.Close(r.cpus[i].fd)
			r.cpus[i].fd = -1
		}
	}
}

// readRaw drains every CPU's pipe in turn until Stop, and sleeps 100 ms
// when all were empty.
//
// It sleeps on a Go timer rather than in poll(2). A poll of the pipes was
// a timeout in practice (the kernel wakes a poller of trace_pipe_raw only
// when its buffer is half full: 2 MB of the 4 MB per CPU), and a system
// call that blocks for 100 ms is one the Go runtime hands the P off for:
// its sysmon thread takes the P back after 10 ms, and the call's return
// then wakes sysmon with its tick reset to 20 µs, some 50 wakeups each
// time. A timer parks the goroutine instead: the parent's context switches
// under hackbench fell by 28–35 %, its CPU time not measurably
// (docs/benchmarks.md). Only a CPU that fills half its buffer within
// 100 ms of being found empty (20 MB/s) waits longer than it did.
func (s *Session) readRaw() {
	r := s.raw
	page := make([]byte, os.Getpagesize())
	sleep := time.NewTimer(time.Hour)
	defer sleep.Stop()
	var evs []Event
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		busy := false
		for i := range r.cpus {
			c := &r.cpus[i]
			before := mono.Now()
			n, err := readNow(c.fd, page)
			switch {
			case err == unix.EAGAIN:
				s.addRaw(c, nil, 0, before) // drained: nothing before it is left
				continue
			case err == unix.EINTR || (err == nil && n == 0):
				// 0 is not "drained": the kernel returns it when its
				// buffer holds records it could not hand over this time
				// (tracing_buffers_read, when reading the page fails on
				// a buffer not empty); they are read at the next turn.
				continue
			case err != nil:
				s.fail(fmt.Errorf("tracefs: read cpu%d's trace_pipe_raw: %w", c.cpu, err))
				return
			}
			busy = true
			evs = evs[:0]
			lost, err := r.format.decodePage(page[:n], c.cpu, func(ev Event) { evs = append(evs, ev) })
			if err != nil {
				s.fail(err)
				return
			}
			s.addRaw(c, evs, lost, 0)
		}
		if !busy {
			sleep.Reset(100 * time.Millisecond)
			select {
			case <-s.stop:
				return
			case <-sleep.C:
			}
		}
	}
}

// addRaw records a page's events of CPU c, and moves c's reading
// position to its last event or to drained (0: not drained).
func (s *Session) addRaw(c *rawCPU, evs []Event, lost, drained int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case lost < 0:
		s.lost++ // lost, how many the kernel did not keep
	case lost > 0:
		s.lost += lost
	}
	if lost != 0 {
		s.log(c.cpu).lose() // before this page: after the last event read
	}
	for _, ev := range evs {
		s.record(ev)
		c.upTo = max(c.upTo, ev.TS)
	}
	c.upTo = max(c.upTo, drained)
	up := c.upTo
	for i := range s.raw.cpus {
		up = min(up, s.raw.cpus[i].upTo)
	}
	s.upTo = up
	if len(evs) > 0 {
		s.prune()
	}
}

// fail stops the reader with err, kept for Err.
func (s *Session) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// readNow reads from fd, opened O_NONBLOCK, without telling the Go
// scheduler a system call began: it never blocks, and a read the runtime
// knows of lets its sysmon thread take the goroutine's P away whenever the
// read outlasts one of its ticks (20 µs; a trace page copied while the
// host or a load preempts the reader does). Every P taken back keeps
// sysmon waking every 20 µs: under hackbench that was a fifth of the
// parent's CPU (perf, docs/spikes.md).
func readNow(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
