package stress

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Grace periods of Stop: how long a stressor may take to clean up after
// SIGTERM (a disk stressor may be inside a write of its last block), and
// how long its process group may take to vanish after SIGKILL.
const (
	stopGrace = 15 * time.Second
	killGrace = 5 * time.Second
	// startLimit bounds the time to start: Xvfb gets 10 s, a disk
	// stressor's file 5 s (and its fdatasync).
	startLimit = 60 * time.Second
)

// Process is a stressor running in a child process of its own, in a
// process group of its own.
type Process struct {
	name   string
	cmd    *exec.Cmd
	pgid   int
	exited chan struct{} // closed once the child has been waited for
	stderr *tailWriter

	mu       sync.Mutex
	files    []string
	progress map[string]any
	final    map[string]any
	finalErr string
	readDone chan struct{} // closed when the report pipe reaches EOF
	stopped  bool
}

// Start runs `exe stress NAME --duration 0 args...` as a child in its own
// process group, with PR_SET_PDEATHSIG, and returns once the load is
// running, or with the reason it cannot run here (bad flags, no X server and
// no Xvfb...), which IsUsage tells apart from a failure.
func Start(exe, name string, args []string) (*Process, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stress %s: report pipe: %w", name, err)
	}
	cmd := exec.Command(exe, append([]string{"stress", name, "--duration", "0"}, args...)...)
	cmd.Env = append(os.Environ(), envReportFD+"=3", envParent+"="+strconv.Itoa(os.Getpid()))
	cmd.ExtraFiles = []*os.File{pw}
	p := &Process{name: name, cmd: cmd, exited: make(chan struct{}), stderr: &tailWriter{max: 4096}, readDone: make(chan struct{})}
	cmd.Stderr = p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.WaitDelay = killGrace
	if err := spawn(cmd, p.exited); err != nil {
		pw.Close()
		pr.Close()
		return nil, fmt.Errorf("stress %s: %w", name, err)
	}
	pw.Close()
	p.pgid = cmd.Process.Pid

	lines := make(chan message)
	go p.read(pr, lines)
	limit := time.NewTimer(startLimit)
	defer limit.Stop()
	for {
		var m message
		var ok bool
		select {
		case m, ok = <-lines:
		case <-limit.C:
			go func() {
				for range lines {
				}
			}()
			_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
			_ = reapGroup(p.pgid, killGrace)
			p.wait()
			p.removeFiles()
			return nil, fmt.Errorf("stress %s: not running after %v; killed", name, startLimit)
		}
		if !ok {
			break
		}
		switch m.Event {
		case "ready":
			go func() { // keep draining progress and the final stats
				for range lines {
				}
			}()
			return p, nil
		case "error":
			go func() {
				for range lines {
				}
			}()
			p.wait()
			p.removeFiles()
			if m.Usage {
				return nil, &UsageError{m.Error}
			}
			return nil, errors.New(m.Error)
		}
	}
	// EOF before ready: the child died or never spoke.
	p.wait()
	p.removeFiles()
	return nil, fmt.Errorf("stress %s: exited before running: %s", name, p.stderr.lastLine())
}

// spawn starts cmd and waits for it on a goroutine locked to its OS thread
// until the child has exited. The kernel sends PR_SET_PDEATHSIG when the
// *thread* that forked the child ends, and the Go runtime ends a thread
// when a goroutine locked to it returns; so the forking thread must outlive
// the child, and it does, being this goroutine's until cmd.Wait returns.
// exited is closed after Wait.
func spawn(cmd *exec.Cmd, exited chan<- struct{}) error {
	started := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait() // the exit status is the stats' business, not ours
		close(exited)
	}()
	return <-started
}

// read decodes the child's report lines, keeps the latest figures and
// passes every message on until EOF.
func (p *Process) read(pr *os.File, out chan<- message) {
	defer close(p.readDone)
	defer close(out)
	defer pr.Close()
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var m message
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		p.mu.Lock()
		switch m.Event {
		case "file":
			p.files = append(p.files, m.Files...)
		case "ready":
			p.files = m.Files
		case "progress":
			p.progress = m.Stats
		case "done":
			p.final = m.Stats
			p.finalErr = m.Error
		}
		p.mu.Unlock()
		out <- m
	}
}

// wait waits for the child and its report pipe, killing its group if it
// lingers.
func (p *Process) wait() {
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		<-p.exited
	}
	<-p.readDone
}

// Pid is the stressor's process (and process group) id.
func (p *Process) Pid() int { return p.pgid }

// Progress returns the latest throughput figures the stressor reported
// (nil before the first report, one interval after Start).
func (p *Process) Progress() map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.progress
}

// Exited is closed when the stressor's process has ended, whether by Stop or
// on its own (a crash, a failing command).
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Stop ends the stressor: SIGTERM to its group, SIGKILL after a grace
// period; then it waits until no process of the group is left, makes sure
// the files the stressor reported are gone, and returns its final figures
// (the latest progress if it had to be killed).
func (p *Process) Stop() (map[string]any, error) {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return nil, fmt.Errorf("stress %s: already stopped", p.name)
	}
	p.stopped = true
	p.mu.Unlock()

	var errs []error
	early := false
	select {
	case <-p.exited:
		early = true
	default:
	}
	_ = syscall.Kill(-p.pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		errs = append(errs, fmt.Errorf("did not stop within %v of SIGTERM; killed", stopGrace))
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		<-p.exited
	}
	if err := reapGroup(p.pgid, killGrace); err != nil {
		errs = append(errs, err)
	}
	select {
	case <-p.readDone:
	case <-time.After(killGrace):
	}

	p.mu.Lock()
	st := p.final
	if st == nil {
		st = p.progress
	}
	finalErr := p.finalErr
	p.mu.Unlock()
	errs = append(errs, p.removeFiles()...)
	if early {
		msg := finalErr
		if msg == "" {
			msg = p.stderr.lastLine()
		}
		errs = append(errs, fmt.Errorf("exited before it was stopped: %s", msg))
	}
	if len(errs) > 0 {
		return st, fmt.Errorf("stress %s: %w", p.name, errors.Join(errs...))
	}
	return st, nil
}

// removeFiles removes the files the stressor reported that are still
// there (it was killed before it could), saying so.
func (p *Process) removeFiles() []error {
	p.mu.Lock()
	files := p.files
	p.mu.Unlock()
	var errs []error
	for _, f := range files {
		if _, err := os.Lstat(f); err == nil {
			rmErr := os.RemoveAll(f)
			errs = append(errs, fmt.Errorf("left %s behind (removed: %v)", f, rmErr == nil))
		}
	}
	return errs
}

// reapGroup waits until process group pgid is empty, SIGKILLing what is
// left of it.
func reapGroup(pgid int, grace time.Duration) error {
	deadline := time.Now().Add(grace)
	for {
		pids, err := GroupPIDs(pgid)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v of group %d are still there", pids, pgid)
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		time.Sleep(20 * time.Millisecond)
	}
}

// GroupPIDs lists the processes of process group pgid, from /proc.
// Zombies count: a zombie is a process nobody has reaped yet.
func GroupPIDs(pgid int) ([]int, error) {
	return procsWhere(2, pgid)
}

// procsWhere lists the processes whose stat field i (after the command
// name: 0 state, 1 ppid, 2 pgrp) is v, from /proc.
func procsWhere(i, v int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	want := strconv.Itoa(v)
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		if f := statFields(b); len(f) > i && f[i] == want {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// statFields are the fields of a /proc/PID/stat line after the command
// name (which is in parentheses and may contain anything): state, ppid,
// pgrp...
func statFields(stat []byte) []string {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
}

// tailWriter keeps the last max bytes written: the child's stderr, for
// the reason it could not start.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(b), nil
}

func (t *tailWriter) lastLine() string {
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
