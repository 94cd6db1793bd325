//go:build portaudio

package portaudio

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
)

var jackServers atomic.Int64

// canRealtime reports whether this process may use SCHED_FIFO.
func canRealtime() bool {
	var lim unix.Rlimit
	return os.Geteuid() == 0 || unix.Getrlimit(unix.RLIMIT_RTPRIO, &lim) == nil && lim.Cur >= 90
}

// startJack starts a JACK server of its own for the test: the dummy
// backend, which needs no soundcard and no real-time rights, under a name
// no other test uses, so that test binaries can run side by side. Clients
// of this process find it through JACK_DEFAULT_SERVER, and
// JACK_NO_START_SERVER keeps libjack from starting a default one. The
// server is stopped when the test ends (or by the returned function), and
// dies with the test process.
func startJack(t *testing.T, rate, period int) (stop func()) {
	t.Helper()
	jackd, err := exec.LookPath("jackd")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("jackd not found: apt-get install jackd2")
		}
		t.Skip("jackd not found: apt-get install jackd2 (scripts/setup test installs it)")
	}
	name := fmt.Sprintf("latencytest-%d-%d", os.Getpid(), jackServers.Add(1))
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
	if canRealtime() {
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
	stop = func() {
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
		if m, _ := filepath.Glob(fmt.Sprintf("/dev/shm/jack_%s_%d_0", name, os.Getuid())); len(m) > 0 {
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
	return stop
}

// serverThreads describes the threads of the jackd serving name: each
// one's name, state, CPU ticks, scheduling policy and priority (from
// /proc/PID/task/TID/stat) and where it sleeps (wchan).
func serverThreads(name string) string {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var b strings.Builder
	for _, c := range procs {
		cmd, err := os.ReadFile(c)
		if err != nil || !strings.Contains(string(cmd), "\x00-n\x00"+name+"\x00") {
			continue
		}
		dir := filepath.Dir(c)
		tasks, _ := filepath.Glob(dir + "/task/[0-9]*")
		for _, task := range tasks {
			stat, _ := os.ReadFile(task + "/stat")
			wchan, _ := os.ReadFile(task + "/wchan")
			fmt.Fprintf(&b, "%s: %s wchan %s\n", task, threadStat(string(stat)), wchan)
		}
	}
	if b.Len() == 0 {
		return "no jackd -n " + name + " found\n"
	}
	return b.String()
}

// threadStat picks a task's comm, state, utime, stime, priority and
// policy out of its stat line (proc(5): fields 2, 3, 14, 15, 18, 41).
func threadStat(stat string) string {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return stat
	}
	f := strings.Fields(stat[i+1:]) // from field 3 on
	if len(f) < 39 {
		return stat
	}
	return fmt.Sprintf("%s %s utime %s stime %s prio %s policy %s", stat[:i+1], f[0], f[11], f[12], f[15], f[38])
}
