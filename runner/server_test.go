package runner

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"latencytest/internal/pwprofile"
	"latencytest/rundata"
)

// loadProfile reads one of pwprofile's recorded profiles.
func loadProfile(t *testing.T, name string) pwprofile.Profile {
	t.Helper()
	f, err := os.Open("../internal/pwprofile/testdata/" + name + ".log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := pwprofile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile("../internal/pwprofile/testdata/" + name + ".stdout")
	if err != nil {
		t.Fatal(err)
	}
	return pwprofile.Profile{Records: recs, Names: pwprofile.ParseNames(string(out))}
}

// TestServerBlockFromProfile feeds a recorded profile (an 8 ms stall of
// the client 'slow' in a 256/48000 graph) through a phase's path: the
// profiler child's account (ServerRecord, sent as JSON), the phase's block
// (phaseServer), run.json written and read back, and the closing block.
func TestServerBlockFromProfile(t *testing.T) {
	kind := detectServer("jack", "7f00-7f01 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/pipewire-0.3/jack/libjack.so.0.3.6500\n"+
		"7f02-7f03 r-xp 00000000 08:01 124 /usr/lib/x86_64-linux-gnu/libpipewire-0.3.so.0.365.0\n")
	if kind.name != rundata.ServerPipeWire {
		t.Fatalf("detected %+v, want pipewire", kind)
	}
	sent, err := json.Marshal(ServerRecord(loadProfile(t, "stall8ms"), kind.how))
	if err != nil {
		t.Fatal(err)
	}
	var got rundata.Server
	if err := json.Unmarshal(sent, &got); err != nil {
		t.Fatal(err)
	}
	run := &rundata.Run{Schema: rundata.SchemaVersion, Rate: 48000, PeriodFrames: 256}
	ph := rundata.Phase{Name: "idle", Periods: 1000}
	phaseServer(run, &ph, kind, &got)
	run.Phases = append(run.Phases, ph)
	dir := t.TempDir()
	if err := rundata.WriteRun(dir, run); err != nil {
		t.Fatal(err)
	}
	back, err := rundata.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := back.Phases[0].Server
	if s == nil {
		t.Fatal("run.json has no server block")
	}
	if s.Server != "pipewire" || s.Rate != 48000 || s.QuantumFrames != 256 || s.QuantumUS != 5333 || s.LateCycles != 1 || s.Cycles == 0 {
		t.Errorf("server block %+v", *s)
	}
	if !strings.Contains(s.DetectedBy, "pipewire-0.3/jack/libjack.so") {
		t.Errorf("detected_by %q", s.DetectedBy)
	}
	if len(s.ByNode) != 1 || s.ByNode[0].Node != "slow" || s.ByNode[0].N != 1 || s.ByNode[0].Why != pwprofile.RanPast {
		t.Fatalf("by node %+v", s.ByNode)
	}
	if len(s.Late) != 1 || s.Late[0].Node != "slow" || s.Late[0].OverrunUS < 2700 || s.Late[0].OverrunUS > 2800 || s.Late[0].AwakeUS < 0 {
		t.Errorf("late %+v", s.Late)
	}
	var sum bytes.Buffer
	rundata.WriteSummary(&sum, back, nil, nil)
	want := "server: pipewire: 1 late cycle of 15: 1 'slow' (ran past its deadline, finished up to 2.7 ms after it)"
	if !strings.Contains(sum.String(), want) {
		t.Errorf("closing block lacks %q:\n%s", want, sum.String())
	}
}

// TestServerBlockJackd: under jackd the block counts the xruns the client
// saw and names no client.
func TestServerBlockJackd(t *testing.T) {
	kind := detectServer("jack", "7f00-7f01 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libjack.so.0.1.0\n")
	if kind.name != rundata.ServerJackd {
		t.Fatalf("detected %+v, want jackd", kind)
	}
	run := &rundata.Run{Rate: 48000}
	ph := rundata.Phase{Name: "idle", Xruns: 3}
	phaseServer(run, &ph, kind, nil)
	if ph.Server == nil || ph.Server.LateCycles != 3 || len(ph.Server.ByNode) != 0 {
		t.Fatalf("server %+v", ph.Server)
	}
	want := "jackd: 3 late cycles (xruns the client saw); which client: not known (jackd gives no account)"
	if got := ph.Server.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if k := detectServer("alsa", "x /usr/lib/pipewire-0.3/jack/libjack.so.0\n"); k.name != "" {
		t.Errorf("alsa detected %+v", k)
	}
	// Some distributions put PipeWire's libjack in jackd's place: libpipewire
	// beside it tells.
	if k := detectServer("jack", "7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/libjack.so.0\n7f02-7f03 r-xp 00000000 08:01 2 /usr/lib/libpipewire-0.3.so.0\n"); k.name != rundata.ServerPipeWire {
		t.Errorf("libjack in jackd's place with libpipewire detected %+v", k)
	}
	if k := detectServer("jack", "x /usr/lib/libc.so.6\n"); k.name != "" {
		t.Errorf("no libjack detected %+v", k)
	}
}
