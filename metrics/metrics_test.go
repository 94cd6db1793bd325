package metrics

import (
	"errors"
	"io"
	"io/fs"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"golang.org/x/sys/unix"

	"latencytest/rundata"
)

func gather(t *testing.T, s *Set) map[string]*dto.Metric {
	t.Helper()
	mfs, err := s.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.Metric{}
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			key := mf.GetName()
			for _, l := range m.Label {
				if l.GetName() == "kind" || l.GetName() == "name" {
					key += "/" + l.GetValue()
				}
			}
			out[key] = m
		}
	}
	return out
}

// The counters and the histogram count what the samples say, with the
// labels asked for.
func TestSampleCounts(t *testing.T) {
	s := New(Labels{Driver: "timer", PeriodFrames: 256, Kernel: "6.1.0", Host: "h"})
	now := int64(5e9)
	s.now = func() int64 { return now }
	lats := []int64{500, 2_000, 40_000, 3_000_000, 200_000_000}
	for i, lat := range lats {
		smp := rundata.Sample{Index: int64(i), Due: 4e9 + int64(i)*1e6, Woke: 4e9 + int64(i)*1e6 + lat}
		if i == 3 {
			smp.Xrun = 7_000_000
		}
		s.Sample(&smp)
	}
	m := gather(t, s)
	if got := m["latencytest_periods_total"].GetCounter().GetValue(); got != 5 {
		t.Errorf("periods %v, want 5", got)
	}
	if got := m["latencytest_xruns_total"].GetCounter().GetValue(); got != 1 {
		t.Errorf("xruns %v, want 1", got)
	}
	if got := m["latencytest_xrun_seconds_total"].GetCounter().GetValue(); math.Abs(got-0.007) > 1e-12 {
		t.Errorf("xrun seconds %v, want 0.007", got)
	}
	if got := m["latencytest_wakeup_latency_max_seconds"].GetGauge().GetValue(); got != 0.2 {
		t.Errorf("worst %v, want 0.2", got)
	}
	h := m["latencytest_wakeup_latency_seconds"].GetHistogram()
	if h.GetSampleCount() != 5 {
		t.Errorf("histogram count %d, want 5", h.GetSampleCount())
	}
	// 500 ns and 2 µs: at most 1 µs holds one; 100 ms holds all but the 200 ms one.
	for _, b := range h.Bucket {
		var want uint64
		switch ub := b.GetUpperBound(); {
		case math.Abs(ub-1e-6) < 1e-12:
			want = 1
		case math.Abs(ub-0.1) < 1e-9:
			want = 4
		default:
			continue
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%g holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	labels := map[string]string{}
	for _, l := range m["latencytest_periods_total"].Label {
		labels[l.GetName()] = l.GetValue()
	}
	want := map[string]string{"driver": "timer", "device": "default", "period_frames": "256", "kernel": "6.1.0", "host": "h"}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, labels[k], v)
		}
	}
}

// Periods the engine measured but could not hand over are the gaps in
// each measuring thread's indexes: counted as lost, per thread (run
// --cpus), a new phase's indexes starting again from 0.
func TestSampleCountsLost(t *testing.T) {
	s := New(Labels{Driver: "timer", PeriodFrames: 64})
	feed := func(loop int32, idx ...int64) {
		for _, i := range idx {
			s.Sample(&rundata.Sample{Index: i, Due: 1e9 + i*1e6, Woke: 1e9 + i*1e6 + 1000, Loop: loop})
		}
	}
	feed(0, 0, 1, 4, 5)  // 2 and 3 lost
	feed(1, 0, 1, 2, 3)  // another thread, none lost: its indexes are its own
	feed(0, 6, 9)        // 7 and 8
	feed(0, 1, 2)        // the next phase: its period 0 lost
	feed(1, 0, 1, 2, 10) // 3 to 9
	m := gather(t, s)
	if got := m["latencytest_lost_periods_total"].GetCounter().GetValue(); got != 2+2+1+7 {
		t.Errorf("lost %v, want 12", got)
	}
	if got := m["latencytest_periods_total"].GetCounter().GetValue(); got != 16 {
		t.Errorf("periods %v, want 16 (the ones handed over)", got)
	}
}

// The worst-wakeup gauge forgets what is older than its window.
func TestWorstWindow(t *testing.T) {
	var w worstWindow
	w.add(100e9, 9_000)
	w.add(105e9, 3_000)
	w.add(105.5e9, 4_000)
	if got := w.max(105.9e9); got != 9_000 {
		t.Errorf("at 105.9 s: %d, want 9000", got)
	}
	if got := w.max(110.5e9); got != 4_000 {
		t.Errorf("at 110.5 s (100 s out of the window): %d, want 4000", got)
	}
	if got := w.max(200e9); got != 0 {
		t.Errorf("at 200 s: %d, want 0", got)
	}
	w.add(110e9, 1_000) // the slot of 100 s, reused
	if got := w.max(110e9); got != 4_000 {
		t.Errorf("after reuse: %d, want 4000", got)
	}
}

func TestSpikes(t *testing.T) {
	s := New(Labels{})
	s.Spike(rundata.Spike{Causes: []rundata.Cause{{Kind: "irq", Name: "IRQ 24 ahci", NS: 3e6}, {Kind: "thread", Name: "kworker/1:2", NS: 1e6}}})
	s.Spike(rundata.Spike{DueNS: 10e6, Causes: []rundata.Cause{{Kind: "irq", Name: "IRQ 24 ahci", NS: 2e6}}})
	s.Spike(rundata.Spike{DueNS: 20e6})
	// A spike inside the last one's window counts, its time does not
	// again (rundata.Fresh).
	s.Spike(rundata.Spike{DueNS: 11e6, Causes: []rundata.Cause{{Kind: "irq", Name: "IRQ 24 ahci", NS: 1e6}}})
	m := gather(t, s)
	for key, want := range map[string]float64{
		"latencytest_spikes_total/irq/IRQ 24 ahci":                 3,
		"latencytest_spikes_total/unexplained/":                    1,
		"latencytest_spike_cause_seconds_total/irq/IRQ 24 ahci":    0.005,
		"latencytest_spike_cause_seconds_total/thread/kworker/1:2": 0.001,
	} {
		if got := m[key].GetCounter().GetValue(); math.Abs(got-want) > 1e-12 {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
}

func TestListenAddr(t *testing.T) {
	for in, want := range map[string]string{
		"9101": "127.0.0.1:9101", ":9101": "127.0.0.1:9101", "0.0.0.0:9101": "0.0.0.0:9101",
		"[::]:9101": "[::]:9101", "localhost:0": "localhost:0",
	} {
		if got, err := ListenAddr(in); err != nil || got != want {
			t.Errorf("ListenAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "host", "host:port", ":70000", ":-1", "a:b:c"} {
		if got, err := ListenAddr(bad); err == nil {
			t.Errorf("ListenAddr(%q) = %q, want an error", bad, got)
		}
	}
}

// The file is replaced whole, never written through a symlink planted at
// its name, and no temporary file is left.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "lt.prom")
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	s := New(Labels{Driver: "timer"})
	s.Sample(&rundata.Sample{Due: 1, Woke: 1001})
	if err := s.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o644 {
		t.Fatalf("%s: %v %v, want a regular file, mode 0644 (node_exporter reads it)", path, st.Mode(), err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `latencytest_periods_total{device="default",driver="timer"`) {
		t.Errorf("metrics file lacks the periods:\n%s", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("files left in the directory: %v, want lt.prom and victim", entries)
	}
	// A write that cannot succeed (a directory in the way) leaves nothing.
	if err := os.Mkdir(filepath.Join(dir, "d.prom"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteFile(filepath.Join(dir, "d.prom")); err == nil {
		t.Error("writing over a directory: no error")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("files left after a failed write: %v", entries)
	}
}

// A metrics file that is a FIFO is written through, as every output path
// is (internal/atomicfile), and stays a FIFO: prometheus.WriteToTextfile
// renamed a regular file over it, as it would over /dev/null.
func TestWriteFileFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "lt.prom")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(fifo, os.O_RDONLY|unix.O_NONBLOCK, 0) // so that the write's open finds a reader
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := New(Labels{Driver: "timer"})
	s.Sample(&rundata.Sample{Due: 1, Woke: 1001})
	if err := s.WriteFile(fifo); err != nil {
		t.Fatal(err)
	}
	r.SetReadDeadline(time.Now().Add(10 * time.Second)) // not to hang when nothing came
	b, _ := io.ReadAll(r)
	if !strings.Contains(string(b), "latencytest_periods_total") {
		t.Errorf("the FIFO's reader read:\n%s", b)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode().Type() != fs.ModeNamedPipe {
		t.Errorf("%s is now %v, %v; want a FIFO", fifo, st.Mode().Type(), err)
	}
}

// Serve answers /metrics and stops.
func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(Labels{})
	stop := s.Serve(ln)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("GET /metrics HTTP/1.0\r\n\r\n"))
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	c.Close()
	if !strings.Contains(sb.String(), "latencytest_periods_total") {
		t.Errorf("/metrics: %.300s", sb.String())
	}
	stop()
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("still listening after stop")
	}
}

// closedWithin says whether the server closes c (a read returns EOF or
// an error) within d, reading whatever it sends meanwhile.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 64<<10)
	for {
		if _, err := c.Read(buf); err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout())
		}
	}
}

// The server's limits hold: a keep-alive connection left idle after a
// scrape is closed after the idle timeout (it stayed open for ever
// before), one that never finishes its request after the read timeout,
// and beyond the connection cap a new connection is not served until
// another closes.
func TestServeLimits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := serveLimits{read: 300 * time.Millisecond, write: time.Second, idle: 300 * time.Millisecond, conns: 2}
	stop := New(Labels{}).serve(ln, l)
	defer stop()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	idle := dial()
	idle.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"))
	if !closedWithin(idle, 3*time.Second) {
		t.Error("an idle keep-alive connection stayed open 3 s (idle timeout 300 ms)")
	}
	slow := dial()
	slow.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n")) // never ends its headers
	if !closedWithin(slow, 3*time.Second) {
		t.Error("a connection that never finished its request stayed open 3 s (read timeout 300 ms)")
	}

	// The cap on a server whose timeouts do not end the test first.
	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop2 := New(Labels{}).serve(ln, serveLimits{read: time.Minute, write: time.Minute, idle: time.Minute, conns: 2})
	defer stop2()
	held := []net.Conn{dial(), dial()} // the cap, held by connections that say nothing
	time.Sleep(50 * time.Millisecond)
	extra := dial()
	extra.Write([]byte("GET /metrics HTTP/1.0\r\n\r\n"))
	extra.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, _ := extra.Read(make([]byte, 1)); n > 0 {
		t.Error("a connection beyond the cap was served while the cap was held")
	}
	held[0].Close()
	extra.SetReadDeadline(time.Now().Add(3 * time.Second))
	b, err := io.ReadAll(extra)
	if !strings.Contains(string(b), "latencytest_periods_total") {
		t.Errorf("once a connection closed, the one waiting got %q, %v", b, err)
	}
}

// With Loopback, the round trip is the last one set, in seconds, and the
// glitches are counted by kind, each kind there from the start.
func TestLoopback(t *testing.T) {
	s := New(Labels{Driver: "alsa", PeriodFrames: 256})
	if _, ok := gather(t, s)["latencytest_round_trip_seconds"]; ok {
		t.Error("the round trip without Loopback")
	}
	s.Loopback()
	m := gather(t, s)
	for _, k := range GlitchKinds {
		if m["latencytest_glitches_total/"+k] == nil {
			t.Errorf("no glitches of kind %s before any", k)
		}
	}
	s.RoundTrip(0.0275)
	s.RoundTrip(0.02756)
	for _, k := range []string{"alone", "xrun", "alone", "pointer_jump", "alone"} {
		s.Glitch(k)
	}
	m = gather(t, s)
	if got := m["latencytest_round_trip_seconds"].GetGauge().GetValue(); got != 0.02756 {
		t.Errorf("round trip %v s, want the last, 0.02756", got)
	}
	for k, want := range map[string]float64{"alone": 3, "xrun": 1, "pointer_jump": 1} {
		if got := m["latencytest_glitches_total/"+k].GetCounter().GetValue(); got != want {
			t.Errorf("glitches of kind %s: %v, want %v", k, got, want)
		}
	}
}
