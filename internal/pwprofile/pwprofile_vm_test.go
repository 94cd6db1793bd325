//go:build vm

package pwprofile

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// vmConf is the server's whole configuration in the VM: PipeWire's
// minimal.conf (the headless server of JACK-like setups) cut to what the
// test needs, with one ALSA sink, snd-aloop's playback device 0, as the
// graph's only driver (no Dummy-Driver, no Freewheel-Driver), at 256
// frames of 48 kHz, 1024 frames of headroom (21.3 ms: without it the
// server keeps one quantum in the card, and the VM's own late wakeups
// underran it 35 times in 10 s; WirePlumber gives a VM's cards more) (minimal.conf's vm.overrides, which would raise the
// quantum to 1024 in a VM, left out), no D-Bus, no session manager.
// module-access is needed: without it a client is never given the
// permission to read the core, and waits for ever (0.3.65's update_busy).
const vmConf = `
context.properties = {
    core.daemon = true
    core.name = pipewire-0
    support.dbus = false
    link.max-buffers = 16
    default.clock.rate = 48000
    default.clock.allowed-rates = [ 48000 ]
    default.clock.quantum = 256
    default.clock.min-quantum = 256
    default.clock.max-quantum = 256
    settings.check-quantum = true
    settings.check-rate = true
}
context.spa-libs = {
    audio.convert.* = audioconvert/libspa-audioconvert
    api.alsa.*      = alsa/libspa-alsa
    support.*       = support/libspa-support
}
context.modules = [
    { name = libpipewire-module-rt args = { nice.level = -11 } flags = [ ifexists nofail ] }
    { name = libpipewire-module-protocol-native }
    { name = libpipewire-module-profiler }
    { name = libpipewire-module-metadata }
    { name = libpipewire-module-spa-node-factory }
    { name = libpipewire-module-client-node }
    { name = libpipewire-module-access args = { } }
    { name = libpipewire-module-adapter }
    { name = libpipewire-module-link-factory }
]
context.objects = [
    { factory = metadata args = { metadata.name = default } }
    { factory = adapter
        args = {
            factory.name           = api.alsa.pcm.sink
            node.name              = "aloop-sink"
            node.description       = "snd-aloop playback, device 0"
            media.class            = "Audio/Sink"
            api.alsa.path          = "hw:Loopback,0"
            api.alsa.headroom      = 1024
            audio.rate             = 48000
            audio.channels         = 2
            priority.driver        = 2000
            resample.disable       = true
            channelmix.disable     = true
            adapter.auto-port-config = {
                mode = dsp
                monitor = false
                control = false
                position = unknown
            }
        }
    }
]
`

// writeTone writes a WAV file of d of a 440 Hz tone, 48 kHz, 16-bit
// stereo: what the client plays.
func writeTone(t *testing.T, path string, d time.Duration) {
	t.Helper()
	const rate, ch = 48000, 2
	n := int(d.Seconds() * rate)
	data := make([]byte, 44+n*ch*2)
	copy(data, "RIFF")
	binary.LittleEndian.PutUint32(data[4:], uint32(36+n*ch*2))
	copy(data[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(data[16:], 16)
	binary.LittleEndian.PutUint16(data[20:], 1)
	binary.LittleEndian.PutUint16(data[22:], ch)
	binary.LittleEndian.PutUint32(data[24:], rate)
	binary.LittleEndian.PutUint32(data[28:], rate*ch*2)
	binary.LittleEndian.PutUint16(data[32:], ch*2)
	binary.LittleEndian.PutUint16(data[34:], 16)
	copy(data[36:], "data")
	binary.LittleEndian.PutUint32(data[40:], uint32(n*ch*2))
	for i := 0; i < n; i++ {
		v := int16(3000 * math.Sin(2*math.Pi*440*float64(i)/rate))
		for c := 0; c < ch; c++ {
			binary.LittleEndian.PutUint16(data[44+(i*ch+c)*2:], uint16(v))
		}
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// cardWatch polls the ALSA status of snd-aloop's playback device 0 (the
// kernel's view of the stream PipeWire plays) every 2 ms. The stream's
// trigger_time is the kernel's stamp of its last start or stop: while the
// stream is in XRUN it is when the kernel stopped it, empty; the next
// start (PipeWire's recovery: prepare, fill, start) stamps it again. So
// each XRUN the polls see has its length from the kernel's own stamps,
// whenever the poll came; an XRUN shorter than a poll's interval (PipeWire
// recovers at its next wakeup, at most a quantum late when all is well)
// may go unseen, one as long as a stop of the server cannot.
type cardWatch struct {
	mu      sync.Mutex
	trigger string
	starts  int             // new trigger stamps seen in RUNNING: the starts
	xruns   []time.Duration // the XRUNs seen, each from the kernel's stop to its restart
	inXrun  time.Duration   // the trigger stamp of the XRUN being watched, 0 if none
	polls   int
	stop    chan struct{}
	done    chan struct{}
}

const aloopStatus = "/proc/asound/Loopback/pcm0p/sub0/status"

// stamp parses a trigger_time ("13.672176000", seconds).
func stamp(s string) time.Duration {
	sec, frac, _ := strings.Cut(s, ".")
	a, _ := strconv.ParseInt(sec, 10, 64)
	frac = (frac + "000000000")[:9]
	b, _ := strconv.ParseInt(frac, 10, 64)
	return time.Duration(a)*time.Second + time.Duration(b)
}

func watchCard() *cardWatch {
	w := &cardWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
			b, err := os.ReadFile(aloopStatus)
			if err != nil {
				continue
			}
			var state, trig string
			for _, l := range strings.Split(string(b), "\n") {
				k, v, ok := strings.Cut(l, ":")
				if !ok {
					continue
				}
				switch strings.TrimSpace(k) {
				case "state":
					state = strings.TrimSpace(v)
				case "trigger_time":
					trig = strings.TrimSpace(v)
				}
			}
			w.mu.Lock()
			w.polls++
			if trig != "" && trig != w.trigger {
				switch state {
				case "XRUN":
					w.inXrun = stamp(trig)
				case "RUNNING", "PREPARED":
					w.starts++
					if w.inXrun != 0 {
						w.xruns = append(w.xruns, stamp(trig)-w.inXrun)
						w.inXrun = 0
					}
				}
				w.trigger = trig
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// counts are the starts and the XRUNs seen so far.
func (w *cardWatch) counts() (starts int, xruns []time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.starts, append([]time.Duration(nil), w.xruns...)
}

func (w *cardWatch) close() { close(w.stop); <-w.done }

// longer are the durations in ds of at least min.
func longer(ds []time.Duration, min time.Duration) []time.Duration {
	var out []time.Duration
	for _, d := range ds {
		if d >= min {
			out = append(out, d)
		}
	}
	return out
}

// xrunLine is PipeWire's (impl-node.c) line for a node's xrun, at log
// level 3: "(aloop-sink-31) XRun! rate:256/48000 count:3 time:... delay:...
// max:...", its count the node's xruns so far. Lines are rate-limited (one
// each 2 s a node), the count is not.
var xrunLine = regexp.MustCompile(`\(([^()]*)-(\d+)\) XRun! rate:\S+ count:(\d+) time:\d+ delay:(\d+)`)

// mono is CLOCK_MONOTONIC, PipeWire's log's clock (its "[I][00013.048053]").
func mono() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}

// xrunLines are PipeWire's XRun lines and its lines of suppressed events.
func xrunLines(out string) []string {
	var l []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "XRun!") || strings.Contains(line, "events suppressed") {
			l = append(l, strings.TrimSpace(line))
		}
	}
	return l
}

// serverXruns is the highest xrun count PipeWire's log has said for the
// node named name, and the number of such lines.
func serverXruns(out, name string) (count, lines int) {
	for _, m := range xrunLine.FindAllStringSubmatch(out, -1) {
		if m[1] != name {
			continue
		}
		lines++
		if c, _ := strconv.Atoi(m[3]); c > count {
			count = c
		}
	}
	return count, lines
}

// nodeID finds the id of the node named name with pw-dump.
func nodeID(t *testing.T, env []string, name string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "pw-dump")
	cmd.Env = testEnv(env)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pw-dump: %v\n%s", err, out)
	}
	var objs []struct {
		ID   int    `json:"id"`
		Type string `json:"type"`
		Info struct {
			Props map[string]any `json:"props"`
		} `json:"info"`
	}
	if err := json.Unmarshal(out, &objs); err != nil {
		t.Fatalf("pw-dump: %v\n%s", err, out)
	}
	var nodes []string
	for _, o := range objs {
		if o.Type != "PipeWire:Interface:Node" {
			continue
		}
		n, _ := o.Info.Props["node.name"].(string)
		nodes = append(nodes, fmt.Sprintf("%d %s", o.ID, n))
		if n == name {
			return o.ID
		}
	}
	t.Fatalf("pw-dump lists no node %q; nodes: %v", name, nodes)
	return 0
}

// TestVMPipeWireOnALoop runs Debian's PipeWire in the VM with a real ALSA
// device as its driver: snd-aloop's playback device 0 (hw:Loopback,0),
// opened by the server's ALSA sink at 256 frames of 48 kHz, with pw-cat
// playing a tone, unlinked, as no session manager runs: with
// node.always-process (as PipeWire's libjack sets for its clients) the
// stream joins the only driver's graph, and the sink runs (a stream that
// only wants a driver is left idle while it has no link: 0.3.65's
// pw_context_recalc_graph), and reads the profiler as
// latencytest does (Start, Stop, Account). A clean stretch first, then the
// server stopped (SIGSTOP, all its threads) for 100 ms a few times, 2.5 s
// apart: the card runs on, empties its buffer and underruns, PipeWire's
// ALSA sink finds the xrun when it resumes, and the profile's driver has a
// cycle over 1.3 quanta.
//
//vmtest:long
func TestVMPipeWireOnALoop(t *testing.T) {
	if os.Getenv("VMTEST_PIPEWIRE") == "" {
		why := os.Getenv("VMTEST_NO_PIPEWIRE")
		if os.Getenv("VMTEST_ARCH") != "amd64" {
			t.Skipf("not run: %s (docs/vmtest.md)", why)
		}
		t.Fatalf("no PipeWire in the VM: %s", why)
	}
	const (
		sink     = "aloop-sink"
		stalls   = 5
		stopFor  = 100 * time.Millisecond
		apart    = 2500 * time.Millisecond
		cleanFor = 10 * time.Second
		quantum  = 5333 * time.Microsecond
	)
	dir := t.TempDir()
	rt := filepath.Join(dir, "rt")
	if err := os.Mkdir(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "pipewire.conf")
	if err := os.WriteFile(conf, []byte(vmConf), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"XDG_RUNTIME_DIR=" + rt}
	server := start(t, "pipewire", append(env, "PIPEWIRE_DEBUG=3"), dir, "pipewire", "-c", conf)
	t.Cleanup(func() { server.cmd.Process.Signal(syscall.SIGCONT) })
	defer func() {
		if t.Failed() {
			t.Logf("pipewire's output:\n%s", server.output())
		}
	}()
	waitSocket(t, server, rt, 20*time.Second)
	t.Logf("pipewire is up")
	writeTone(t, filepath.Join(dir, "tone.wav"), 2*cleanFor+time.Duration(stalls+3)*apart+30*time.Second)
	player := start(t, "pw-cat", env, dir, "pw-cat", "--playback", "--latency", "256", "-P", "node.always-process=true", "tone.wav")
	defer func() {
		if t.Failed() {
			t.Logf("pw-cat's output:\n%s", player.output())
		}
	}()
	time.Sleep(time.Second)
	t.Logf("pw-cat started; pipewire so far:\n%s", server.output())
	id := nodeID(t, env, sink)
	t.Logf("%s is node %d", sink, id)
	card := watchCard()
	defer card.close()

	// stretch is what one profiled stretch saw.
	type stretch struct {
		name    string
		prof    Profile
		rep     Report
		starts  int             // the card's starts
		xruns   []time.Duration // the XRUNs the card was seen in, their lengths
		counted int             // PipeWire's xrun count of the sink, its rise
	}
	// profile records one stretch of the graph's cycles while do runs.
	profile := func(name string, do func()) stretch {
		rec, err := Start(filepath.Join(dir, name), testEnv(env)...)
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Stop()
		if err := rec.WaitAttached(20 * time.Second); err != nil {
			b, _ := os.ReadFile(aloopStatus)
			t.Fatalf("%s: %v\n%s:\n%s", name, err, aloopStatus, b)
		}
		t.Logf("%s: pw-profiler attached", name)
		s0, x0 := card.counts()
		c0, _ := serverXruns(server.output(), sink)
		m0 := mono()
		do()
		m1 := mono()
		s1, x1 := card.counts()
		t.Logf("%s: from %.6f to %.6f s (CLOCK_MONOTONIC, the clock of PipeWire's log)", name, m0.Seconds(), m1.Seconds())
		prof, err := rec.Stop()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, rec.Output())
		}
		// PipeWire says a count only when it logs an xrun (one line in
		// 2 s at most): the count at the next line after the stretch.
		time.Sleep(2500 * time.Millisecond)
		c1, _ := serverXruns(server.output(), sink)
		st := stretch{name: name, prof: prof, rep: prof.Account(), starts: s1 - s0, xruns: x1[len(x0):], counted: c1 - c0}
		t.Logf("%s: %d records; %s; the card started %d times, was seen in XRUN %d times for %v; PipeWire's xrun count rose by %d (said by the next XRun line, if any)",
			name, len(prof.Records), st.rep, st.starts, len(st.xruns), st.xruns, st.counted)
		return st
	}

	clean := profile("clean", func() { time.Sleep(cleanFor) })
	var stopped []time.Duration
	stalled := profile("stalls", func() {
		for i := 0; i < stalls; i++ {
			time.Sleep(apart)
			t0 := time.Now()
			if err := server.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(stopFor)
			if err := server.cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			stopped = append(stopped, time.Since(t0))
		}
		time.Sleep(apart)
	})
	total, lines := serverXruns(server.output(), sink)
	t.Logf("stops of the server: %v", stopped)
	t.Logf("PipeWire's XRun lines:\n%s", strings.Join(xrunLines(server.output()), "\n"))
	t.Logf("PipeWire's xrun count of %s (node %d) at the end: %d (%d XRun lines)", sink, id, total, lines)

	driverLate := func(rep Report) int {
		n := 0
		for _, c := range rep.Late {
			if c.Driver {
				n++
			}
		}
		return n
	}
	for _, st := range []stretch{clean, stalled} {
		if st.prof.Names.Driver.ID != id {
			t.Errorf("%s: the profile's driver is node %d, not %s (node %d)", st.name, st.prof.Names.Driver.ID, sink, id)
		}
		off, lo, hi := 0, time.Duration(math.MaxInt64), time.Duration(0)
		for _, r := range st.prof.Records {
			lo, hi = min(lo, r.Quantum), max(hi, r.Quantum)
			// The quantum as time is the driver's duration at its
			// clock's measured rate (the card's, through the DLL).
			if r.Quantum < quantum-quantum/100 || r.Quantum > quantum+quantum/100 {
				off++
			}
		}
		t.Logf("%s: the records' quantum %v to %v", st.name, lo, hi)
		if len(st.prof.Records) == 0 || off > len(st.prof.Records)/100 {
			t.Errorf("%s: %d of %d records not within 1 %% of the quantum %v", st.name, off, len(st.prof.Records), quantum)
		}
		t.Logf("%s: %d late cycles of the driver, %d of %d late in all; the card started %d times, seen in XRUN %d times, %d of them %v or longer; PipeWire's count +%d",
			st.name, driverLate(st.rep), len(st.rep.Late), st.rep.Cycles, st.starts, len(st.xruns), len(longer(st.xruns, stopFor/2)), stopFor/2, st.counted)
	}
	// Each stop of the server is one XRUN of the card longer than half
	// the stop (it underruns once what the server had written, the
	// 1024 frames of headroom and a quantum, 26.7 ms, are played, and
	// stays stopped until the server's recovery: about 73 ms of the
	// 100), one late cycle of the driver at least, one xrun at least in
	// PipeWire's count.
	if n := len(longer(stalled.xruns, stopFor/2)); n != stalls {
		t.Errorf("stalls: the card was in XRUN %v or longer %d times (%v), not once for each of the %d stops", stopFor/2, n, stalled.xruns, stalls)
	}
	if n := driverLate(stalled.rep); n < stalls {
		t.Errorf("stalls: %d late cycles charged to the driver, fewer than the %d stops", n, stalls)
	}
	if stalled.counted < stalls {
		t.Errorf("stalls: PipeWire's xrun count of %s rose by %d, less than the %d stops", sink, stalled.counted, stalls)
	}
	// Nothing invented: no XRUN of a stop's kind without a stop.
	if long := longer(clean.xruns, stopFor/2); len(long) > 0 {
		t.Errorf("clean: the card was in XRUN %v or longer %d times (%v) with the server running", stopFor/2, len(long), long)
	}
}
