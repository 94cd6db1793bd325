package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"latencytest/internal/child"
	"latencytest/internal/pwprofile"
	"latencytest/rundata"
)

// The profiler child's messages after its first ("ready").
const eventProfile = "profile"

// serverKind is the sound server a run through --driver jack goes through,
// and how it was told.
type serverKind struct {
	name string // rundata.ServerPipeWire, rundata.ServerJackd; "" none
	how  string
}

// detectServer says which server a --driver jack run goes through, from
// the libraries this process loaded (maps is /proc/self/maps): the engine
// is this binary with this environment, so it loads the same libjack.
// PipeWire's libjack (pipewire-jack, through pw-jack's LD_LIBRARY_PATH, the
// system's alternative, or in libjack's own place as some distributions
// install it) is a client of libpipewire-0.3, which it brings in with it;
// jackd2's libjack is not. So libpipewire mapped beside libjack is
// PipeWire, and libjack without it is jackd.
func detectServer(driver, maps string) serverKind {
	if driver != "jack" {
		return serverKind{}
	}
	lib := mapped(maps, "libjack.so")
	switch {
	case lib == "":
		return serverKind{}
	case mapped(maps, "libpipewire-0.3.so") != "":
		return serverKind{rundata.ServerPipeWire, "this process's libjack is PipeWire's (libpipewire-0.3 loaded with it): " + lib}
	}
	return serverKind{rundata.ServerJackd, "this process's libjack is jackd's (no libpipewire loaded with it): " + lib}
}

// mapped is the path of the library mapped in maps whose name begins with
// prefix, "" if none.
func mapped(maps, prefix string) string {
	sc := bufio.NewScanner(strings.NewReader(maps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 {
			continue
		}
		p := strings.Join(f[5:], " ")
		if strings.HasPrefix(filepath.Base(p), prefix) {
			return p
		}
	}
	return ""
}

// ServerRecord is the one builder of a phase's server block from PipeWire's
// profile, accounted (pwprofile.Account): what run.json keeps, the closing
// block and the report say. how says how the server was told. The quantum
// is the one most of the profile's cycles ran at; the rate is the run's,
// set by phaseServer.
func ServerRecord(prof pwprofile.Profile, how string) *rundata.Server {
	rep := prof.Account()
	s := &rundata.Server{Server: rundata.ServerPipeWire, DetectedBy: how, Cycles: rep.Cycles, LateCycles: len(rep.Late)}
	us := func(d time.Duration) float64 {
		if d < 0 {
			return -1
		}
		return math.Round(float64(d)/10) / 100
	}
	quanta := map[time.Duration]int{}
	var q time.Duration
	for _, r := range prof.Records {
		if r.Quantum > 0 {
			quanta[r.Quantum]++
			if quanta[r.Quantum] > quanta[q] {
				q = r.Quantum
			}
		}
	}
	if q > 0 {
		s.QuantumUS = us(q)
	}
	for _, n := range rep.ByNode() {
		s.ByNode = append(s.ByNode, rundata.ServerNode{Node: n.Node.String(), ID: n.Node.ID, Driver: n.Driver,
			Why: n.Why, N: n.N, MaxOverrunUS: us(n.MaxOverrun)})
	}
	for i, c := range rep.Late {
		if i == rundata.MaxServerLate {
			break
		}
		l := rundata.ServerLate{Line: c.Line, Node: c.Node.String(), ID: c.Node.ID, Driver: c.Driver, Why: c.Why,
			SignalUS: us(c.Signal), AwakeUS: us(c.Awake), FinishUS: us(c.Finish), OverrunUS: us(c.Overrun)}
		for _, o := range c.Others {
			l.Others = append(l.Others, o.String())
		}
		s.Late = append(s.Late, l)
	}
	return s
}

// jackdRecord is a phase's server block under jackd: the xruns the client
// saw, and no word on which client.
func jackdRecord(ph *rundata.Phase, how string) *rundata.Server {
	return &rundata.Server{Server: rundata.ServerJackd, DetectedBy: how, LateCycles: ph.Xruns, Which: rundata.JackdWhich}
}

// phaseServer puts the server's account into the phase: got from the
// profiler (PipeWire), or the xruns (jackd). It sets the rate, the run's
// (the server's, for a JACK client), and the quantum in frames.
func phaseServer(run *rundata.Run, ph *rundata.Phase, kind serverKind, got *rundata.Server) {
	switch kind.name {
	case rundata.ServerJackd:
		got = jackdRecord(ph, kind.how)
	case "":
		return
	}
	if got == nil {
		return
	}
	got.Rate = run.Rate
	if got.Rate > 0 && got.QuantumUS > 0 {
		got.QuantumFrames = int(math.Round(got.QuantumUS * float64(got.Rate) / 1e6))
	}
	ph.Server = got
}

// profiler is the child recording PipeWire's profiler during a phase.
type profiler struct {
	p    *child.Process
	mu   sync.Mutex
	got  *rundata.Server
	fail string
}

// startProfiler starts the profiler child for a phase through PipeWire:
// like the stressors, a copy of this binary in a process group of its
// own, in Config.Children (a second Ctrl-C kills it), ended by its
// parent's death; pw-profiler runs under it (internal/child.Held), never
// in the engine. It returns once pw-profiler has logged its first cycles.
// A profiler that cannot start leaves a note, and the phase runs.
func (s *session) startProfiler(ctx context.Context, name string) (*profiler, *rundata.Server) {
	pr := &profiler{}
	p, _, err := child.Start(ctx, child.Spec{
		Name: "profiler", Exe: s.cfg.Exe, Args: []string{PWProfileCommand, s.server.how},
		Pdeathsig: syscall.SIGTERM, StartLimit: 15 * time.Second, TempIn: os.TempDir(), Set: s.cfg.Children,
		OnMessage: func(m child.Message) {
			pr.mu.Lock()
			defer pr.mu.Unlock()
			switch m.Event {
			case eventProfile:
				var sv rundata.Server
				if err := json.Unmarshal(m.Data, &sv); err != nil {
					pr.fail = "bad profile: " + err.Error()
					return
				}
				pr.got = &sv
			case child.EventError:
				pr.fail = m.Error
			}
		},
	})
	if err != nil {
		s.pr.linef("[%s] server: PipeWire's profiler not recorded: %v", name, err)
		return nil, &rundata.Server{Server: rundata.ServerPipeWire, DetectedBy: s.server.how, Note: err.Error()}
	}
	pr.p = p
	return pr, nil
}

// stop ends the profiler (SIGTERM: it stops pw-profiler and sends its
// account) and returns the phase's server block.
func (pr *profiler) stop() *rundata.Server {
	_, err := pr.p.Stop(10 * time.Second)
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.got != nil {
		return pr.got
	}
	note := pr.fail
	if note == "" {
		note = fmt.Sprint(errors.Join(err, errors.New("the profiler sent no account: "+pr.p.LastStderr())))
	}
	return &rundata.Server{Server: rundata.ServerPipeWire, Note: note}
}

// SendProfile is the profiler child's last word: the account of the profile
// it recorded (ServerRecord).
func SendProfile(conn *child.Conn, prof pwprofile.Profile, how string) error {
	return conn.Send(eventProfile, ServerRecord(prof, how))
}
