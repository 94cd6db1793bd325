package pwprofile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"latencytest/internal/child"
)

// Profile is a recorded profile: its records and its nodes' names.
type Profile struct {
	Records []Record
	Names   Names
}

// Account charges the profile's late cycles (Account).
func (p Profile) Account() Report { return Account(p.Records, p.Names) }

// Recorder is a pw-profiler running as a child, writing into a directory
// of its own (it writes profiler.log there and, when it stops, its gnuplot
// scripts, Timing3.plot among them).
type Recorder struct {
	dir    string
	cmd    *exec.Cmd
	held   *child.Held
	out    *bytes.Buffer
	exited chan struct{}
	err    error
	once   sync.Once
}

// lockedBuffer lets the child's output be read while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Start runs pw-profiler in dir (made if missing) with env added to this
// process's environment (XDG_RUNTIME_DIR or PIPEWIRE_REMOTE say which
// server). It runs in a process group of its own (a terminal's Ctrl-C
// is this process's to pass on) and dies with this process: it is forked
// from a thread that lives until it is reaped (internal/child.Held), so
// PR_SET_PDEATHSIG follows this process.
func Start(dir string, env ...string) (*Recorder, error) {
	bin, err := exec.LookPath("pw-profiler")
	if err != nil {
		return nil, fmt.Errorf("pw-profiler not found (Debian: pipewire-bin): %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r := &Recorder{dir: dir, exited: make(chan struct{}), out: &bytes.Buffer{}}
	lb := &lockedBuffer{}
	r.cmd = exec.Command(bin, "-o", "profiler.log")
	r.cmd.Dir = dir
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.Stdout, r.cmd.Stderr = lb, lb
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if r.held, err = child.StartHeld(r.cmd); err != nil {
		return nil, fmt.Errorf("starting pw-profiler: %w", err)
	}
	go func() {
		<-r.held.Exited()
		_ = r.held.SignalGroup(syscall.SIGKILL) // anything it left in its group
		if st := r.held.Reap(); st != nil && !st.Success() {
			r.err = &exec.ExitError{ProcessState: st}
		}
		lb.mu.Lock()
		r.out.Write(lb.b.Bytes())
		lb.mu.Unlock()
		close(r.exited)
	}()
	return r, nil
}

// WaitAttached waits until pw-profiler has written its first records (it
// buffers them, so the first few hundred cycles), or says why not.
func (r *Recorder) WaitAttached(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if st, err := os.Stat(filepath.Join(r.dir, "profiler.log")); err == nil && st.Size() > 0 {
			return nil
		}
		select {
		case <-r.exited:
			return fmt.Errorf("pw-profiler exited (%v) before it logged a cycle: %s", r.err, strings.TrimSpace(r.out.String()))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pw-profiler logged no cycle in %v (is module-profiler loaded, does a driver run?)", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitStarted waits until pw-profiler has logged cycles, or has run for
// settle without exiting: a graph with no active node runs no driver, and
// logs nothing until a client (the run's own) joins it. It says why not
// if pw-profiler exited, and returns ctx's error if ctx ends first.
func (r *Recorder) WaitStarted(ctx context.Context, settle time.Duration) error {
	t := time.NewTimer(settle)
	defer t.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if st, err := os.Stat(filepath.Join(r.dir, "profiler.log")); err == nil && st.Size() > 0 {
			return nil
		}
		select {
		case <-r.exited:
			return fmt.Errorf("pw-profiler exited (%v) as it started: %s", r.err, strings.TrimSpace(r.out.String()))
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		case <-tick.C:
		}
	}
}

// Stop interrupts pw-profiler, as its user would, waits for it to write
// its scripts and exit (killing it after 5 s), and reads what it wrote.
func (r *Recorder) Stop() (Profile, error) {
	r.once.Do(func() {
		_ = r.held.SignalGroup(syscall.SIGINT)
		select {
		case <-r.exited:
		case <-time.After(5 * time.Second):
			_ = r.held.SignalGroup(syscall.SIGKILL)
			<-r.exited
		}
	})
	var ee *exec.ExitError
	if r.err != nil && !errors.As(r.err, &ee) {
		return Profile{}, r.err
	}
	f, err := os.Open(filepath.Join(r.dir, "profiler.log"))
	if err != nil {
		return Profile{}, err
	}
	defer f.Close()
	recs, err := Parse(f)
	if err != nil {
		return Profile{}, err
	}
	plot, _ := os.ReadFile(filepath.Join(r.dir, "Timing3.plot"))
	return Profile{Records: recs, Names: ParseNames(r.out.String(), string(plot))}, nil
}

// Output is what pw-profiler printed (after it has stopped).
func (r *Recorder) Output() string {
	select {
	case <-r.exited:
		return r.out.String()
	default:
		return ""
	}
}
