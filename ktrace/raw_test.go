package ktrace

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/internal/fuzzseed"
)

// The kernel's own text of a trace is the reference for the binary
// decoder: the same records, read from per_cpu/cpuN/trace (which leaves
// them in the buffer) and then from trace_pipe_raw, are the same events.
// The text shows microseconds, rounded (the kernel's ns2usecs): the
// decoded nanoseconds must round to them.
func TestRawMatchesKernelText(t *testing.T) {
	fs, err := findTracefs("")
	if err != nil {
		t.Fatalf("tracing needs tracefs and root here: %v", err)
	}
	inst, err := fs.newInstance()
	if err != nil {
		t.Fatal(err)
	}
	defer fs.removeInstance(inst)
	for _, kv := range [][2]string{{"trace_clock", "mono"}, {"buffer_size_kb", "1024"}} {
		if err := writeFile(inst, kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, ev := range tracedEvents {
		writeFile(inst, filepath.Join("events", ev, "enable"), "1")
	}
	events := tracedEvents
	_, noise := fs.osnoiseUsable() // Debian's PREEMPT_RT kernel in the VM (scripts/vmtest -rt)
	if noise {
		sv, err := fs.startOsnoise(testStore(t, fs.root), inst, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer fs.stopOsnoise(inst, sv)
		events = append(slices.Clone(events), osnoiseEvents...)
	}
	writeFile(inst, "tracing_on", "1")
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) { // switches, wakeups and timer interrupts
		time.Sleep(time.Millisecond)
		os.ReadFile("/proc/self/stat")
	}
	writeFile(inst, "tracing_on", "0")

	f, err := loadRawFormat(fs.root, events)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	kinds := map[int]int{}
	for _, cpu := range instanceCPUs(inst) {
		dir := filepath.Join(inst, "per_cpu", "cpu"+strconv.Itoa(cpu))
		text, err := os.ReadFile(filepath.Join(dir, "trace"))
		if err != nil {
			t.Fatal(err)
		}
		got := readAllRaw(t, f, filepath.Join(dir, "trace_pipe_raw"), cpu)
		sameAsText(t, "cpu"+strconv.Itoa(cpu), got, text)
		for _, ev := range got {
			kinds[ev.Kind]++
		}
		total += len(got)
	}
	if kinds[evSwitch] == 0 || kinds[evWakeup] == 0 || (noise && kinds[evNoise] == 0) {
		t.Errorf("%d events, by kind %v: want switches and wakeups at least (and noise: %v)", total, kinds, noise)
	}
	t.Logf("%d events, by kind %v", total, kinds)
}

func readAllRaw(t *testing.T, f *rawFormat, path string, cpu int) []Event {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var evs []Event
	page := make([]byte, os.Getpagesize())
	// The buffer is 1 MB a CPU and tracing is off: more pages than that
	// is a pipe that does not drain.
	for pages := 0; ; pages++ {
		if pages > 2*1024*1024/len(page) {
			t.Fatalf("%s: %d pages read and still not empty", path, pages)
		}
		n, err := unix.Read(fd, page)
		if err == unix.EAGAIN || (err == nil && n == 0) {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.decodePage(page[:n], cpu, func(ev Event) { evs = append(evs, ev) }); err != nil {
			t.Fatal(err)
		}
	}
}

// A page built by hand: a time extend, a long record, padding, and the
// count of lost events after the data.
func TestDecodePageLayout(t *testing.T) {
	f := &rawFormat{commitSize: 8, dataOff: 16, events: map[uint16]*rawEvent{
		7: {kind: evVectorEntry, name: "local_timer_entry", fields: map[string]rawField{"vector": {off: 8, size: 4, signed: true}}},
	}}
	ne := binary.NativeEndian
	page := make([]byte, 4096)
	ne.PutUint64(page, 1_000_000)
	d := page[16:]
	rec := func(b []byte, typeLen, delta uint32) []byte {
		return ne.AppendUint32(b, delta<<5|typeLen)
	}
	var data []byte
	data = rec(data, 3, 100) // a 12-byte record 100 ns in
	data = ne.AppendUint16(data, 7)
	data = append(data, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	data = rec(data, rbTimeExtend, 5)
	data = ne.AppendUint32(data, 2) // + 2<<27 + 5 ns
	data = rec(data, 0, 0)          // a long record: its length follows
	data = ne.AppendUint32(data, 4+12)
	data = ne.AppendUint16(data, 7)
	data = append(data, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	data = rec(data, rbPadding, 1) // padding: its length counts itself
	data = ne.AppendUint32(data, 4+8)
	data = append(data, 0, 0, 0, 0, 0, 0, 0, 0)
	data = rec(data, 2, 50) // an event of no traced kind
	data = ne.AppendUint16(data, 9)
	data = append(data, 0, 0, 0, 0, 0, 0)
	copy(d, data)
	ne.PutUint64(page[8:], uint64(len(data))|rbMissedEvents|rbMissedStored)
	ne.PutUint64(d[len(data):], 42)
	var got []int64
	lost, err := f.decodePage(page, 3, func(ev Event) {
		if ev.Kind != evVectorEntry || ev.Name != "local_timer" || ev.CPU != 3 {
			t.Errorf("event %+v", ev)
		}
		got = append(got, ev.TS)
	})
	want := []int64{1_000_100, 1_000_100 + 2<<27 + 5}
	if err != nil || lost != 42 || !reflect.DeepEqual(got, want) {
		t.Errorf("got %v lost %d err %v, want %v lost 42", got, lost, err, want)
	}
	// A commit past the page is refused, not read beyond.
	ne.PutUint64(page[8:], 5000)
	if _, err := f.decodePage(page, 3, func(Event) {}); err == nil {
		t.Error("a page claiming 5000 bytes was decoded")
	}
}

// rawTestdata is a capture of this machine's tracer (testdata/raw): the
// layout files of the traced events, one CPU's records as pages read
// from trace_pipe_raw, and the kernel's text of the same records.
const rawTestdata = "testdata/raw"

// The captured pages decode to the captured text, without a kernel.
func TestDecodeCapturedPages(t *testing.T) {
	f, err := loadRawFormat(rawTestdata, tracedEvents)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := os.ReadFile(filepath.Join(rawTestdata, "cpu0.pages"))
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(rawTestdata, "cpu0.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var got []Event
	for p := 0; p+4096 <= len(pages); p += 4096 {
		if _, err := f.decodePage(pages[p:p+4096], 0, func(ev Event) { got = append(got, ev) }); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) < 50 {
		t.Fatalf("%d events decoded from the capture", len(got))
	}
	sameAsText(t, "cpu0", got, text)
}

// sameAsText checks decoded events against the kernel's text of the same
// records: the same events, field by field, the nanoseconds rounding to
// the text's microseconds (the kernel's ns2usecs rounds).
func sameAsText(t *testing.T, where string, got []Event, text []byte) {
	t.Helper()
	var want []Event
	for _, line := range strings.Split(string(text), "\n") {
		if ev, ok := parseLine(line); ok {
			want = append(want, ev)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d events decoded, the kernel's text has %d", where, len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		if (g.TS+500)/1000 != w.TS/1000 {
			t.Errorf("%s event %d: %d ns, the text says %d µs", where, i, g.TS, w.TS/1000)
			return
		}
		g.TS, w.TS = 0, 0
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s event %d:\n decoded %+v\n text    %+v", where, i, g, w)
			return
		}
	}
}

// No page, however malformed, makes the decoder read past it or panic.
func FuzzDecodePage(f *testing.F) {
	rf, err := loadRawFormat(rawTestdata, tracedEvents)
	if err != nil {
		f.Fatal(err)
	}
	pages, err := os.ReadFile(filepath.Join(rawTestdata, "cpu0.pages"))
	if err != nil {
		f.Fatal(err)
	}
	for p := 0; p+4096 <= len(pages); p += 4096 {
		f.Add(pages[p : p+4096])
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		fuzzseed.Bounded(t, len(page), 8, func() int {
			rf.decodePage(page, 0, func(ev Event) {
				if ev.Kind < evSwitch || ev.Kind > evNoise {
					t.Errorf("event of kind %d", ev.Kind)
				}
			})
			return 0
		})
	})
}
