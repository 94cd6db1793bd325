// Package jacktest starts JACK servers of their own for the tests of the
// drivers that reach JACK (audio/portaudio, audio/jack), and runs those
// drivers' callbacks against them the same way for both.
package jacktest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/internal/jackserver"
)

var servers atomic.Int64

// CanRealtime reports whether this process may use SCHED_FIFO 90.
func CanRealtime() bool {
	var lim unix.Rlimit
	return os.Geteuid() == 0 || unix.Getrlimit(unix.RLIMIT_RTPRIO, &lim) == nil && lim.Cur >= 90
}

// Start starts a JACK server of its own for the test: the dummy backend,
// which needs no soundcard and no real-time rights, at rate and period,
// under a name no other test uses, so that test binaries can run side by
// side. Clients of this process find it through JACK_DEFAULT_SERVER, and
// JACK_NO_START_SERVER keeps libjack from starting a default one. The
// server is stopped when the test ends (or by the returned function), and
// dies with the test process. Without jackd the test skips, and fails
// under CI=true.
func Start(t *testing.T, rate, period int) *Server {
	t.Helper()
	jackd, err := exec.LookPath("jackd")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("jackd not found: apt-get install jackd2")
		}
		t.Skip("jackd not found: apt-get install jackd2 (scripts/setup test installs it)")
	}
	name := fmt.Sprintf("latencytest-%d-%d", os.Getpid(), servers.Add(1))
	log := filepath.Join(t.TempDir(), "jackd.log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The dummy backend paces its cycles with sleeps; without real-time
	// scheduling a busy machine makes it late, and a late cycle restarts
	// its schedule, so the server runs fewer cycles than its rate says.
	// Where real-time scheduling is allowed the server gets it, and the
	// client threads libjack makes for it get 5 less: above the engines
	// (SCHED_FIFO 80) of other tests that may run at the same time, whose
	// spinning DSP load would otherwise starve the server on a small
	// machine.
	sched := []string{"-r"}
	if CanRealtime() {
		sched = []string{"-R", "-P", "90"}
	}
	args := append([]string{"-n", name}, sched...)
	args = append(args, "-d", "dummy", "-r", fmt.Sprint(rate), "-p", fmt.Sprint(period))
	cmd := exec.Command(jackd, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), "JACK_NO_AUDIO_RESERVATION=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting jackd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				<-exited
			}
			// A server killed, or a client that died with it, leaves
			// its socket and semaphores behind.
			for _, pat := range []string{"/dev/shm/jack_" + name + "_*", "/dev/shm/jack_sem.*_" + name + "_*"} {
				m, _ := filepath.Glob(pat)
				for _, f := range m {
					os.Remove(f)
				}
			}
		})
	}
	t.Cleanup(stop)
	t.Setenv("JACK_DEFAULT_SERVER", name)
	t.Setenv("JACK_NO_START_SERVER", "1")
	// The server is up when it has made its socket in /dev/shm.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(jackserver.Socket(name)); err == nil {
			break
		}
		select {
		case err := <-exited:
			b, _ := os.ReadFile(log)
			t.Fatalf("jackd exited: %v\n%s", err, b)
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(log)
			t.Fatalf("jackd -n %s did not come up in 10 s:\n%s", name, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &Server{Stop: stop, Name: name, Log: log}
}

// Server is a JACK server Start started.
type Server struct {
	Stop func() // stops it (also done when the test ends)
	Name string // its name (-n)
	Log  string // the file its output goes to
}

// Restarts are the late cycles the server's log reports (the dummy
// backend's "JackTimedDriver::Process XRun = N usec", N the time from the
// late cycle's start to its end): after each, the dummy backend restarts
// its schedule without counting the time it lost.
func (s *Server) Restarts(t *testing.T) (n int, usecs int64) {
	t.Helper()
	b, err := os.ReadFile(s.Log)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var u int64
		if i := strings.Index(line, "Process XRun = "); i >= 0 {
			if _, err := fmt.Sscanf(line[i:], "Process XRun = %d usec", &u); err == nil {
				n++
				usecs += u
			}
		}
	}
	return n, usecs
}
