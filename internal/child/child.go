// Package child supervises the processes latencytest runs as copies of
// itself — the engine, the stressors — and is the one place that knows how:
//
//   - the child runs in a process group of its own (the terminal's Ctrl-C
//     goes to the parent, which stops the child and keeps what it measured;
//     and one signal reaches everything the child started);
//   - PR_SET_PDEATHSIG ends it when the parent dies. The kernel sends it
//     when the *thread* that forked the child ends, not the process, and
//     the Go runtime ends a thread when a goroutine locked to it returns: so
//     every child is forked from a goroutine of its own, locked to its
//     thread, that lives until the child has been reaped;
//   - the child reports on descriptor 3 (ReportFD) in JSON lines (Message);
//     its first line says it is ready, or why it cannot run — and when that
//     is the user's to fix, the parent gets the one bad-input error kind
//     (internal/badinput) back;
//   - the process group is signalled only while its leader is unreaped: a
//     group id is the leader's pid, and once the leader is reaped and the
//     group empty, the id may belong to a new process. The leader's exit is
//     awaited with WNOWAIT, the rest of its group is killed, and only then
//     is the leader reaped. Held is that, and the locked thread, alone: a
//     child uses it for the commands it starts itself (Xvfb, --exec-cmd);
//   - a child that may write files gets a private temporary directory,
//     created by the parent; the parent removes that directory, and nothing
//     else, whatever the child says.
package child

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/internal/badinput"
)

// The descriptors a child finds open, and the environment that tells it
// about them.
const (
	// ReportFD carries the child's JSON lines to the parent.
	ReportFD = 3
	// DataFD is the second pipe of a Spec with DataPipe (the engine's
	// samples).
	DataFD = 4

	envParent = "LATENCYTEST_PARENT_PID"
	envReport = "LATENCYTEST_REPORT_FD"
	envData   = "LATENCYTEST_DATA_FD"
	envTemp   = "LATENCYTEST_TMPDIR"
)

// reapGrace bounds how long the rest of a group may take to vanish after
// SIGKILL, and how long the report pipe may stay open after the child ended
// (a process forked without exec holds it until it is killed).
const reapGrace = 5 * time.Second

// EventError is the event of a Message that says why the child cannot run
// or failed.
const EventError = "error"

// Message is one line on the report pipe.
type Message struct {
	Event    string          `json:"event"`
	Error    string          `json:"error,omitempty"`
	BadInput bool            `json:"bad_input,omitempty"` // Error is the user's to fix
	Data     json.RawMessage `json:"data,omitempty"`
}

// Err is the error an EventError message carries, bad input if the child
// said so.
func (m Message) Err() error {
	if m.BadInput {
		return badinput.New(m.Error)
	}
	return errors.New(m.Error)
}

// Spec describes a child.
type Spec struct {
	Name string   // for messages: "engine", "stress disk-write"
	Exe  string   // this binary
	Args []string // the hidden subcommand and its arguments
	Env  []string // added to this process's environment

	Stdin  io.Reader // nil: /dev/null
	Stdout io.Writer // nil: /dev/null (the child's stderr is kept for LastStderr)

	Pdeathsig syscall.Signal // what the child gets when the parent dies
	// CPUs, if not empty, is where the child may run (its affinity),
	// whatever the parent's threads are restricted to.
	CPUs     []int
	DataPipe bool // a second pipe on DataFD, read with Process.Data
	// TempIn is where to create the child's private temporary directory
	// ("" : none). The child finds it as TMPDIR; it is removed after the
	// child is reaped.
	TempIn string
	// StartLimit bounds the wait for the first message (0: no bound).
	StartLimit time.Duration
	// OnMessage gets every message after the first, on the reading
	// goroutine, until the pipe closes; Wait returns after the last call.
	OnMessage func(Message)
	// Set, if not nil, holds the child while it lives, for Set.KillAll.
	Set *Set
}

// Process is a running child.
type Process struct {
	*Held  // the leader of the child's process group
	name   string
	cmd    *exec.Cmd
	stderr *Tail
	data   *os.File
	temp   *tempDir
	set    *Set
	read   chan struct{} // the report pipe reached EOF

	once  sync.Once
	state *os.ProcessState
	err   error
}

// Start starts the child and returns once it sent its first message (what
// it says when ready), returned with it. If instead it reports an error,
// exits, does not speak within StartLimit or ctx ends, the child and its
// group are ended and reaped and the error says why: bad input if the child
// said it was, ctx.Err() wrapped if ctx ended.
func Start(ctx context.Context, s Spec) (*Process, Message, error) {
	p, first, err := spawn(s)
	if err != nil {
		return nil, Message{}, fmt.Errorf("%s: %w", s.Name, err)
	}
	var limit <-chan time.Time
	if s.StartLimit > 0 {
		t := time.NewTimer(s.StartLimit)
		defer t.Stop()
		limit = t.C
	}
	select {
	case m, ok := <-first:
		switch {
		case !ok: // it closed the pipe: it is exiting, with its reason on stderr
			p.settle(abortGrace)
			return nil, Message{}, fmt.Errorf("%s: exited before it was ready: %s", s.Name, p.LastStderr())
		case m.Event == EventError:
			p.Stop(abortGrace)
			return nil, Message{}, m.Err()
		}
		return p, m, nil
	case <-ctx.Done():
		p.Stop(abortGrace)
		return nil, Message{}, fmt.Errorf("%s: stopped while starting: %w", s.Name, ctx.Err())
	case <-limit:
		p.Stop(abortGrace)
		return nil, Message{}, fmt.Errorf("%s: not ready after %v; killed", s.Name, s.StartLimit)
	}
}

// settle waits up to grace for a child that is ending anyway, then stops
// it.
func (p *Process) settle(grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.Exited():
	case <-t.C:
	}
	p.Stop(grace)
}

// abortGrace is how long a child that is being started may take to end
// on SIGTERM when its start is called off (Ctrl-C must stop a run within a
// second, even while Xvfb starts).
const abortGrace = 250 * time.Millisecond

// spawn forks and execs the child from a locked thread of its own and
// starts reading its report pipe; first gets the first message, or is
// closed at EOF.
func spawn(s Spec) (*Process, <-chan Message, error) {
	p := &Process{name: s.Name, stderr: NewTail(4096), set: s.Set, read: make(chan struct{})}
	report, err := p.prepare(s)
	if err != nil {
		return nil, nil, err
	}
	p.Held, err = StartHeldOn(p.cmd, s.CPUs)
	closeFiles(p.cmd.ExtraFiles) // the child's ends
	if err != nil {
		report.Close()
		p.closeData()
		p.temp.remove()
		return nil, nil, err
	}
	s.Set.add(p)
	first := make(chan Message, 1)
	go p.readReport(report, first, s.OnMessage)
	return p, first, nil
}

// prepare makes p.cmd: the pipes (it returns the reading end of the report
// pipe), the environment that names them, the temporary directory.
func (p *Process) prepare(s Spec) (report *os.File, err error) {
	cmd := exec.Command(s.Exe, s.Args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.Stdin, s.Stdout, p.stderr
	cmd.WaitDelay = reapGrace
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: s.Pdeathsig}
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Env = append(cmd.Env, envParent+"="+strconv.Itoa(os.Getpid()), envReport+"="+strconv.Itoa(ReportFD))
	p.cmd = cmd
	defer func() {
		if err != nil {
			closeFiles(cmd.ExtraFiles)
			if report != nil {
				report.Close()
			}
			p.closeData()
		}
	}()
	report, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("report pipe: %w", err)
	}
	cmd.ExtraFiles = []*os.File{w}
	if s.DataPipe {
		r, w, err := os.Pipe()
		if err != nil {
			return report, fmt.Errorf("data pipe: %w", err)
		}
		p.data = r
		cmd.ExtraFiles = append(cmd.ExtraFiles, w)
		cmd.Env = append(cmd.Env, envData+"="+strconv.Itoa(DataFD))
	}
	if s.TempIn != "" {
		if p.temp, err = newTempDir(s.TempIn); err != nil {
			return report, err
		}
		cmd.Env = append(cmd.Env, "TMPDIR="+p.temp.path, envTemp+"="+p.temp.path)
	}
	return report, nil
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// readReport decodes the report pipe until EOF: the first message goes to
// first, the others to on. Lines that are not messages are skipped; the
// pipe is drained to the end so the child never blocks on it.
func (p *Process) readReport(r *os.File, first chan<- Message, on func(Message)) {
	defer close(p.read)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	sent := false
	for sc.Scan() {
		var m Message
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Event == "" {
			continue
		}
		switch {
		case !sent:
			first <- m
			sent = true
		case on != nil:
			on(m)
		}
	}
	if !sent {
		close(first)
	}
	_, _ = io.Copy(io.Discard, r) // a line over 1 MB ends the scanner
}

// Data is the reading end of the data pipe (Spec.DataPipe). The caller
// reads it to EOF and closes it.
func (p *Process) Data() *os.File { return p.data }

// LastStderr is the last line the child wrote on its stderr.
func (p *Process) LastStderr() string { return p.stderr.LastLine() }

// ErrReaped is what a group signal returns once the leader has been
// reaped: its group id may then be another process's.
var ErrReaped = errors.New("the process has been reaped; its group id may be reused")

// Signal sends sig to the child's process group, which it refuses to do
// once the leader is reaped.
func (p *Process) Signal(sig syscall.Signal) error { return p.SignalGroup(sig) }

// Terminate sends SIGTERM to the child's group and, if the child has not
// exited within grace, SIGKILL. It reports whether it had to kill. It does
// not reap: Wait does.
func (p *Process) Terminate(grace time.Duration) (killed bool) {
	_ = p.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.Exited():
		return false
	case <-t.C:
	}
	_ = p.Signal(syscall.SIGKILL)
	return true
}

// Stop is Terminate then Wait; the error also says if the child had to be
// killed.
func (p *Process) Stop(grace time.Duration) (*os.ProcessState, error) {
	killed := p.Terminate(grace)
	st, err := p.Wait()
	if killed {
		err = errors.Join(fmt.Errorf("did not stop within %v of SIGTERM; killed", grace), err)
	}
	return st, err
}

// Wait waits for the child to exit, then ends what is left of its process
// group, waits for its report pipe to close, reaps it and removes its
// temporary directory. It returns the exit status (nil if there is none)
// and what was left behind (processes that would not end, files), and may
// be called more than once.
func (p *Process) Wait() (*os.ProcessState, error) {
	<-p.Exited()
	p.once.Do(p.finish)
	return p.state, p.err
}

func (p *Process) finish() {
	var errs []error
	if err := p.clearGroup(reapGrace); err != nil {
		errs = append(errs, err)
	}
	t := time.NewTimer(reapGrace)
	select {
	case <-p.read:
	case <-t.C:
	}
	t.Stop()
	p.state = p.Reap()
	if p.state == nil { // someone else reaped it: never by design
		errs = append(errs, errors.New("no exit status"))
	}
	if err := p.temp.remove(); err != nil {
		errs = append(errs, err)
	}
	p.set.remove(p)
	p.err = errors.Join(errs...)
}

// clearGroup kills what is left of the group of the exited (unreaped)
// leader and waits until the leader is alone in it, but for zombies that
// are another process's to reap. Processes of the group
// that were reparented to us — we are PID 1 of a namespace, or a subreaper
// — are reaped here, as nobody else will.
func (p *Process) clearGroup(grace time.Duration) error {
	deadline := time.Now().Add(grace)
	me := os.Getpid()
	for {
		procs, err := Processes()
		if err != nil {
			return err
		}
		var left []int
		for _, pr := range procs {
			if pr.Pgrp != p.Pid() || pr.Pid == p.Pid() {
				continue
			}
			if pr.PPid == me {
				_, _ = unix.Wait4(pr.Pid, nil, unix.WNOHANG, nil)
			} else if pr.State == "Z" {
				continue // dead, another's to reap
			}
			left = append(left, pr.Pid)
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v of its group would not end", left)
		}
		_ = p.Signal(syscall.SIGKILL)
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *Process) closeData() {
	if p.data != nil {
		p.data.Close()
	}
}

// Tail keeps the last bytes written to it: a child's stderr, for the
// reason it failed.
type Tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// NewTail keeps the last max bytes.
func NewTail(max int) *Tail { return &Tail{max: max} }

func (t *Tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(b), nil
}

// LastLine is the last non-empty line, or "no message".
func (t *Tail) LastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "no message"
	}
	return s
}
