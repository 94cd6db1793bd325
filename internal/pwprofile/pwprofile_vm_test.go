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
)

// vmConf is the server's whole configuration in the VM: PipeWire's
// minimal.conf (the headless server of JACK-like setups) cut to what the
// test needs, with one ALSA sink, snd-aloop's playback device 0, as the
// graph's only driver (no Dummy-Driver, no Freewheel-Driver), at 256
// frames of 48 kHz (minimal.conf's vm.overrides, which would raise the
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
// kernel's view of the stream PipeWire plays) and counts the stream's
// starts: each new trigger_time is one (PipeWire's recovery from an xrun
// prepares and starts the stream again), and the polls that found it in
// XRUN.
type cardWatch struct {
	mu       sync.Mutex
	trigger  string
	starts   int
	xrunSeen int
	polls    int
	stop     chan struct{}
	done     chan struct{}
}

const aloopStatus = "/proc/asound/Loopback/pcm0p/sub0/status"

func watchCard() *cardWatch {
	w := &cardWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		lastXrun := false
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
				if w.trigger != "" {
					w.starts++
				}
				w.trigger = trig
			}
			x := state == "XRUN"
			if x && !lastXrun {
				w.xrunSeen++
			}
			lastXrun = x
			w.mu.Unlock()
		}
	}()
	return w
}

// counts are the restarts and XRUN states seen so far.
func (w *cardWatch) counts() (starts, xruns, polls int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.starts, w.xrunSeen, w.polls
}

func (w *cardWatch) close() { close(w.stop); <-w.done }

// xrunLine is PipeWire's (impl-node.c) line for a node's xrun, at log
// level 3: "(aloop-sink-31) XRun! rate:256/48000 count:3 time:... delay:...
// max:...", its count the node's xruns so far. Lines are rate-limited (one
// each 2 s a node), the count is not.
var xrunLine = regexp.MustCompile(`\(([^()]*)-(\d+)\) XRun! rate:\S+ count:(\d+) time:\d+ delay:(\d+)`)

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
// server stopped (SIGSTOP, all its threads) for 50 ms a few times, 2.5 s
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
		sink    = "aloop-sink"
		stalls  = 5
		stopFor = 50 * time.Millisecond
		apart   = 2500 * time.Millisecond
		clean   = 10 * time.Second
		quantum = 5333 * time.Microsecond
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
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(rt, "pipewire-0")); err == nil {
			break
		}
		select {
		case <-server.done:
			t.Fatalf("pipewire exited:\n%s", server.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pipewire made no socket in %s in 20 s:\n%s", rt, server.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("pipewire is up")
	writeTone(t, filepath.Join(dir, "tone.wav"), 2*clean+time.Duration(stalls+3)*apart+30*time.Second)
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

	// profile records one stretch of the graph's cycles while do runs.
	profile := func(name string, do func()) (Profile, Report, int, int) {
		rec, err := Start(filepath.Join(dir, name), testEnv(env)...)
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Stop()
		if err := rec.WaitAttached(20 * time.Second); err != nil {
			b, _ := os.ReadFile(aloopStatus)
			t.Fatalf("%s: %v\n%s:\n%s", name, err, aloopStatus, b)
		}
		s0, x0, _ := card.counts()
		t.Logf("%s: pw-profiler attached", name)
		do()
		s1, x1, _ := card.counts()
		prof, err := rec.Stop()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, rec.Output())
		}
		rep := prof.Account()
		t.Logf("%s: pw-profiler: %s", name, strings.Join(strings.Fields(rec.Output()), " "))
		t.Logf("%s: %d records; %s; the card restarted %d times, seen in XRUN %d times", name, len(prof.Records), rep, s1-s0, x1-x0)
		return prof, rep, s1 - s0, x1 - x0
	}

	x0, _ := serverXruns(server.output(), sink)
	cleanProf, cleanRep, cleanStarts, _ := profile("clean", func() { time.Sleep(clean) })
	x1, _ := serverXruns(server.output(), sink)
	var stopped []time.Duration
	stallProf, stallRep, stallStarts, _ := profile("stalls", func() {
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
	x2, lines := serverXruns(server.output(), sink)
	t.Logf("stops: %v", stopped)
	t.Logf("PipeWire's xrun count of %s (node %d): %d before the clean stretch, %d after it, %d after the stalls (%d XRun lines in all)", sink, id, x0, x1, x2, lines)

	for _, p := range []struct {
		name string
		prof Profile
	}{{"clean", cleanProf}, {"stalls", stallProf}} {
		if p.prof.Names.Driver.ID != id {
			t.Errorf("%s: the profile's driver is node %d, not %s (node %d)", p.name, p.prof.Names.Driver.ID, sink, id)
		}
		off := 0
		for _, r := range p.prof.Records {
			if r.Quantum != quantum {
				off++
			}
		}
		if len(p.prof.Records) == 0 || off > len(p.prof.Records)/100 {
			t.Errorf("%s: %d of %d records not at the quantum %v", p.name, off, len(p.prof.Records), quantum)
		}
	}
	driverLate := func(rep Report) int {
		n := 0
		for _, c := range rep.Late {
			if c.Driver {
				n++
			}
		}
		return n
	}
	t.Logf("clean: %d late cycles of the driver, %d of %d late in all, the card restarted %d times, PipeWire counted %d xruns",
		driverLate(cleanRep), len(cleanRep.Late), cleanRep.Cycles, cleanStarts, x1-x0)
	t.Logf("stalls: %d late cycles of the driver, %d of %d late in all, the card restarted %d times, PipeWire counted %d xruns",
		driverLate(stallRep), len(stallRep.Late), stallRep.Cycles, stallStarts, x2-x1)
	if driverLate(stallRep) < stalls {
		t.Errorf("%d late cycles charged to the driver in the stalls' profile, fewer than the %d stops", driverLate(stallRep), stalls)
	}
	if stallStarts < stalls {
		t.Errorf("the card restarted %d times in the stalls' stretch, fewer than the %d stops", stallStarts, stalls)
	}
	if x2-x1 < stalls {
		t.Errorf("PipeWire counted %d xruns of %s in the stalls' stretch, fewer than the %d stops", x2-x1, sink, stalls)
	}
}
