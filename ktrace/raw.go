package ktrace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The tracer's binary records (per_cpu/cpuN/trace_pipe_raw) are read in
// preference to trace_pipe's text: the kernel formats trace_pipe's text
// inside read(2), a page at a time, and a kernel that does not preempt
// kernel code lets that hold the audio thread's CPU for up to 0.2 ms
// under hackbench (docs/spikes.md, "The tracer's own cost"). A raw page
// is handed over as it is. Its layout is the kernel's ring buffer page
// (kernel/trace/ring_buffer.c), described by events/header_page, and each
// record's by its event's format file.

// Ring buffer record types (the header's type_len), and the commit
// word's flags.
const (
	rbPadding    = 29
	rbTimeExtend = 30
	rbTimeStamp  = 31

	rbMissedEvents = 1 << 31 // events were lost before this page
	rbMissedStored = 1 << 30 // and their count follows the data
	rbFlagsMask    = rbMissedEvents | rbMissedStored
)

// rawField is where a field lies in a record.
type rawField struct {
	off, size int
	signed    bool
	dataLoc   bool // __data_loc: a u32 of the string's offset and length
}

// rawEvent is one traced event's record layout.
type rawEvent struct {
	kind   int
	name   string // the event's name, e.g. "local_timer_entry"
	fields map[string]rawField
	byIdx  []rawField // the fields the decoder reads, by fieldNames' index
}

// The fields the decoder reads, by index into rawEvent.byIdx: looked up by
// name once per event format, not once per record (under hackbench that
// was a tenth of the parent's CPU).
const (
	fPrevComm = iota
	fPrevPID
	fPrevPrio
	fPrevState
	fNextComm
	fNextPID
	fNextPrio
	fComm
	fPID
	fPrio
	fTargetCPU
	fIRQ
	fName
	fVec
	fStart
	fDuration
	fVector
	fDesc
	fOrigCPU
	fDestCPU
	fCommonPID
	nFields
)

var fieldNames = [nFields]string{
	fPrevComm: "prev_comm", fPrevPID: "prev_pid", fPrevPrio: "prev_prio", fPrevState: "prev_state",
	fNextComm: "next_comm", fNextPID: "next_pid", fNextPrio: "next_prio",
	fComm: "comm", fPID: "pid", fPrio: "prio", fTargetCPU: "target_cpu",
	fIRQ: "irq", fName: "name", fVec: "vec", fStart: "start", fDuration: "duration", fVector: "vector", fDesc: "desc",
	fOrigCPU: "orig_cpu", fDestCPU: "dest_cpu", fCommonPID: "common_pid",
}

// indexed returns e's fields by index; one the event lacks is the zero
// rawField, read as 0 or "".
func (e *rawEvent) indexed() []rawField {
	if e.byIdx == nil {
		e.byIdx = make([]rawField, nFields)
		for i, n := range fieldNames {
			e.byIdx[i] = e.fields[n]
		}
	}
	return e.byIdx
}

// rawFormat decodes an instance's pages.
type rawFormat struct {
	commitSize int // the page header's commit word: a long
	dataOff    int // where the records start in a page
	events     map[uint16]*rawEvent
	names      interned
}

// interned keeps one copy of each name the records carry (commands, IRQ
// names): they repeat in record after record, and a new string for each
// was most of what the parent allocated under hackbench, and collected.
type interned map[string]string

// maxInterned bounds the names kept: a machine that forks without end
// (hackbench names every task the same) cannot grow it for ever.
const maxInterned = 4096

func (n interned) get(b []byte) string {
	if s, ok := n[string(b)]; ok {
		return s
	}
	s := string(b)
	if n != nil && len(n) < maxInterned {
		n[s] = s
	}
	return s
}

// loadRawFormat reads the page header and the formats of events (as
// tracedEvents names them: "sys/name", or "sys" for every event of it)
// from the tracefs root's events directory.
func loadRawFormat(root string, events []string) (*rawFormat, error) {
	hp, err := os.ReadFile(filepath.Join(root, "events", "header_page"))
	if err != nil {
		return nil, fmt.Errorf("tracefs: %w", err)
	}
	f := &rawFormat{events: map[uint16]*rawEvent{}, names: interned{}}
	if err := f.parseHeaderPage(string(hp)); err != nil {
		return nil, err
	}
	for _, e := range events {
		dirs := []string{filepath.Join(root, "events", e)}
		if !strings.Contains(e, "/") {
			dirs, _ = filepath.Glob(filepath.Join(root, "events", e, "*_e*"))
		}
		for _, d := range dirs {
			b, err := os.ReadFile(filepath.Join(d, "format"))
			if err != nil {
				continue // an event this kernel lacks
			}
			id, ev, err := parseEventFormat(string(b))
			if err != nil {
				return nil, fmt.Errorf("tracefs: %s: %w", d, err)
			}
			if ev.kind = rawKind(ev.name); ev.kind != 0 {
				f.events[id] = ev
			}
		}
	}
	if len(f.events) == 0 {
		return nil, errors.New("tracefs: no traced event's format could be read")
	}
	return f, nil
}

// rawKind is the Event kind of a traced event, by name.
func rawKind(name string) int {
	switch name {
	case "sched_switch":
		return evSwitch
	case "sched_wakeup", "sched_wakeup_new":
		return evWakeup
	case "sched_migrate_task":
		return evMigrate
	case "irq_handler_entry":
		return evIRQEntry
	case "irq_handler_exit":
		return evIRQExit
	case "softirq_entry":
		return evSoftEntry
	case "softirq_exit":
		return evSoftExit
	}
	if _, ok := noiseKinds[name]; ok {
		return evNoise
	}
	switch {
	case strings.HasSuffix(name, "_entry"):
		return evVectorEntry
	case strings.HasSuffix(name, "_exit"):
		return evVectorExit
	}
	return 0
}

// parseHeaderPage reads events/header_page: the commit word's size and
// where the data starts.
func (f *rawFormat) parseHeaderPage(s string) error {
	_, fs := parseFields(s)
	c, ok1 := fs["commit"]
	d, ok2 := fs["data"]
	if !ok1 || !ok2 || (c.size != 4 && c.size != 8) || d.off < 12 {
		return fmt.Errorf("tracefs: events/header_page is not laid out as expected: %q", s)
	}
	f.commitSize, f.dataOff = c.size, d.off
	return nil
}

// parseEventFormat reads an event's format file.
func parseEventFormat(s string) (uint16, *rawEvent, error) {
	ev := &rawEvent{}
	var id uint64
	var err error = errors.New("no ID")
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(line, "name: "); ok {
			ev.name = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "ID: "); ok {
			id, err = strconv.ParseUint(strings.TrimSpace(v), 10, 16)
		}
	}
	if err != nil {
		return 0, nil, fmt.Errorf("format: ID: %w", err)
	}
	_, ev.fields = parseFields(s)
	return uint16(id), ev, nil
}

// parseFields reads the "field:TYPE NAME; offset:N; size:N; signed:N;"
// lines of a format file.
func parseFields(s string) ([]string, map[string]rawField) {
	var names []string
	fs := map[string]rawField{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		decl, ok := strings.CutPrefix(line, "field:")
		if !ok {
			continue
		}
		parts := strings.Split(decl, ";")
		if len(parts) < 3 {
			continue
		}
		var fd rawField
		typ := strings.TrimSpace(parts[0])
		fd.dataLoc = strings.HasPrefix(typ, "__data_loc")
		words := strings.Fields(typ)
		name := words[len(words)-1]
		if i := strings.IndexByte(name, '['); i >= 0 {
			name = name[:i]
		}
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), ":")
			n, _ := strconv.Atoi(v)
			switch k {
			case "offset":
				fd.off = n
			case "size":
				fd.size = n
			case "signed":
				fd.signed = n == 1
			}
		}
		names = append(names, name)
		fs[name] = fd
	}
	return names, fs
}

// decodePage decodes one page of a CPU's records into events, in time
// order, and returns how many events the kernel lost before it (−1 when
// some were lost but the count was not kept).
func (f *rawFormat) decodePage(page []byte, cpu int, emit func(Event)) (lost int64, err error) {
	if len(page) < f.dataOff {
		return 0, fmt.Errorf("trace_pipe_raw: a page of %d bytes", len(page))
	}
	ne := binary.NativeEndian
	ts := int64(ne.Uint64(page))
	var commit uint64
	if f.commitSize == 8 {
		commit = ne.Uint64(page[8:])
	} else {
		commit = uint64(ne.Uint32(page[8:]))
	}
	flags := commit & rbFlagsMask
	data := page[f.dataOff:]
	if commit&^rbFlagsMask > uint64(len(data)) {
		return 0, fmt.Errorf("trace_pipe_raw: a page claims %d bytes of data, has %d", commit&^rbFlagsMask, len(data))
	}
	size := int(commit &^ rbFlagsMask)
	if flags&rbMissedEvents != 0 {
		lost = -1
		if flags&rbMissedStored != 0 && size+f.commitSize <= len(data) {
			if f.commitSize == 8 {
				lost = int64(ne.Uint64(data[size:]))
			} else {
				lost = int64(ne.Uint32(data[size:]))
			}
		}
	}
	data = data[:size]
	for len(data) >= 4 {
		h := ne.Uint32(data)
		typ, delta := h&0x1f, int64(h>>5)
		var n int // the record's whole length
		switch {
		case typ == rbPadding:
			if delta == 0 || len(data) < 8 {
				return lost, nil // the rest of the page is empty
			}
			n = 4 + int(ne.Uint32(data[4:]))
		case typ == rbTimeExtend:
			if len(data) < 8 {
				return lost, errShortRecord
			}
			ts += int64(ne.Uint32(data[4:]))<<27 | delta
			n = 8
		case typ == rbTimeStamp:
			if len(data) < 8 {
				return lost, errShortRecord
			}
			ts = int64(ne.Uint32(data[4:]))<<27 | delta
			n = 8
		case typ == 0: // a long record: its length follows the header
			if len(data) < 8 {
				return lost, errShortRecord
			}
			ts += delta
			n = 4 + int(ne.Uint32(data[4:]))
			if n < 8 || n > len(data) {
				return lost, errShortRecord
			}
			f.decodeRecord(data[8:n], ts, cpu, emit)
		default:
			ts += delta
			n = 4 + int(typ)*4
			if n > len(data) {
				return lost, errShortRecord
			}
			f.decodeRecord(data[4:n], ts, cpu, emit)
		}
		if n <= 0 || n > len(data) {
			return lost, errShortRecord
		}
		data = data[n:]
	}
	return lost, nil
}

var errShortRecord = errors.New("trace_pipe_raw: a record runs past its page")

// decodeRecord turns one record into an Event when it is a traced one.
func (f *rawFormat) decodeRecord(rec []byte, ts int64, cpu int, emit func(Event)) {
	if len(rec) < 2 {
		return
	}
	e := f.events[binary.NativeEndian.Uint16(rec)]
	if e == nil {
		return
	}
	r := rawRecord{rec, e.indexed(), f.names}
	ev := Event{TS: ts, CPU: cpu, Kind: e.kind}
	if r.fs[fCommonPID].size > 0 {
		ev.Current, ev.CurrentKnown = r.int(fCommonPID), true
	}
	switch e.kind {
	case evSwitch:
		ev.PrevComm, ev.PrevPID, ev.PrevPrio = r.str(fPrevComm), r.int(fPrevPID), r.int(fPrevPrio)
		// Runnable: no task state below TASK_REPORT_MAX (0x100 since
		// Linux 4.14), the way the kernel's own text prints "R".
		ev.PrevRunnable = r.int(fPrevState)&0xff == 0
		ev.Comm, ev.PID, ev.Prio = r.str(fNextComm), r.int(fNextPID), r.int(fNextPrio)
	case evWakeup:
		ev.Comm, ev.PID, ev.Prio, ev.TargetCPU = r.str(fComm), r.int(fPID), r.int(fPrio), r.int(fTargetCPU)
	case evMigrate:
		ev.Comm, ev.PID, ev.Prio = r.str(fComm), r.int(fPID), r.int(fPrio)
		ev.OrigCPU, ev.TargetCPU = r.int(fOrigCPU), r.int(fDestCPU)
	case evIRQEntry:
		ev.IRQ, ev.Name = r.int(fIRQ), r.str(fName)
	case evIRQExit:
		ev.IRQ = r.int(fIRQ)
	case evSoftEntry, evSoftExit:
		ev.IRQ = r.int(fVec)
		ev.Name = softirqName(ev.IRQ)
	case evNoise:
		ev.NoiseKind = noiseKinds[e.name]
		ev.NoiseStart, ev.NoiseNS = int64(r.int(fStart)), int64(r.int(fDuration))
		switch ev.NoiseKind {
		case noiseThread:
			ev.PID, ev.Comm = r.int(fPID), r.str(fComm)
		case noiseSoftIRQ:
			ev.IRQ = r.int(fVector)
			ev.Name = softirqName(ev.IRQ)
		case noiseIRQ:
			ev.IRQ, ev.Name = r.int(fVector), r.str(fDesc)
		}
	case evVectorEntry:
		ev.Name = strings.TrimSuffix(e.name, "_entry")
	case evVectorExit:
		ev.Name = strings.TrimSuffix(e.name, "_exit")
	}
	emit(ev)
}

// softirqNames are the softirq vectors' actions as the kernel's text
// prints them (include/linux/interrupt.h, unchanged since Linux 3.x).
var softirqNames = [...]string{"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"}

func softirqName(vec int) string {
	if vec >= 0 && vec < len(softirqNames) {
		return softirqNames[vec]
	}
	return strconv.Itoa(vec)
}

// rawRecord reads fields of one record.
type rawRecord struct {
	b     []byte
	fs    []rawField // by index (rawEvent.indexed)
	names interned
}

func (r rawRecord) int(i int) int {
	f := r.fs[i]
	if f.size == 0 || f.off+f.size > len(r.b) {
		return 0
	}
	ne := binary.NativeEndian
	b := r.b[f.off:]
	switch f.size {
	case 1:
		if f.signed {
			return int(int8(b[0]))
		}
		return int(b[0])
	case 2:
		if f.signed {
			return int(int16(ne.Uint16(b)))
		}
		return int(ne.Uint16(b))
	case 4:
		if f.signed {
			return int(int32(ne.Uint32(b)))
		}
		return int(ne.Uint32(b))
	case 8:
		return int(ne.Uint64(b))
	}
	return 0
}

// str reads a fixed char array or a __data_loc string, up to its NUL.
func (r rawRecord) str(i int) string {
	f := r.fs[i]
	if f.size == 0 || f.off+f.size > len(r.b) {
		return ""
	}
	b := r.b[f.off : f.off+f.size]
	if f.dataLoc {
		if f.size != 4 {
			return ""
		}
		loc := binary.NativeEndian.Uint32(b)
		off, n := int(loc&0xffff), int(loc>>16)
		if off+n > len(r.b) {
			return ""
		}
		b = r.b[off : off+n]
	}
	if i := indexNUL(b); i >= 0 {
		b = b[:i]
	}
	return r.names.get(b)
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}
