package stress

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"latencytest/internal/badinput"
	"latencytest/internal/child"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// execStressor runs any command as the load (a build, a game, a
// benchmark), through /bin/sh, restarting it whenever it exits.
//
// When the stressor leads its process group (it was started by Start), the
// command joins that group, so that the group signal of Stop reaches
// everything the command started; run by hand from a shell, the command
// gets a group of its own, which the stressor signals when stopped.
type execStressor struct{}

func (execStressor) Name() string { return "exec" }
func (execStressor) Description() string {
	return "any command as the load (--cmd 'make -j4'), restarted whenever it exits; runs completed"
}

type execLoad struct {
	cmd  string
	flag flagPrefix
}

// execRestartMin is the least time between two starts of the command, so
// a command failing at once does not become a fork storm of its own.
const execRestartMin = time.Second

func (execStressor) Flags(fs *flag.FlagSet, prefix string) Load {
	l := &execLoad{flag: flagPrefix(prefix)}
	fs.StringVar(&l.cmd, l.flag.def("cmd"), "", "the command, run with /bin/sh -c (required)")
	return l
}

func (l *execLoad) Check() error {
	if l.cmd == "" {
		return badinput.Errorf("%[1]s is required, e.g. %[1]s 'make -j4'", l.flag.name("cmd"))
	}
	return nil
}

func (l *execLoad) Run(ctx context.Context, m *Meter) error {
	m.Unit("runs", 1)
	m.Set("cmd", l.cmd)
	leader := syscall.Getpgrp() == os.Getpid()
	// Whatever the command leaves behind, even outside its group, comes
	// to us when its parent ends, for reapChildren to end.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_CHILD_SUBREAPER: %w", err)
	}
	starts, failures := 0, 0
	for ctx.Err() == nil {
		began := time.Now()
		cmd := exec.Command("/bin/sh", "-c", l.cmd)
		cmd.Stdin = nil
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !leader, Pdeathsig: syscall.SIGTERM}
		h, err := child.StartHeld(cmd)
		if err != nil {
			return fmt.Errorf("start %q: %w", l.cmd, err)
		}
		starts++
		m.Set("starts", starts)
		m.Ready()
		select {
		case <-h.Exited():
			if h.Signaled() && stoppedSoon(ctx) {
				// The group's stop signal reached the command first.
				stopCommand(h, leader)
				return reapChildren(5 * time.Second)
			}
			if st := h.Reap(); st != nil && st.Success() {
				m.Add(1)
			} else {
				failures++
				m.Set("failures", failures)
			}
		case <-ctx.Done():
			stopCommand(h, leader)
			return reapChildren(5 * time.Second)
		}
		// Reap the orphans of this run (nothing else of ours is running).
		for {
			if pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
		if wait := execRestartMin - time.Since(began); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
	}
	return reapChildren(5 * time.Second)
}

// stopCommand ends the command and whatever it started: SIGTERM, then
// SIGKILL after a grace period; then it reaps the command. Its own group
// is signalled only until then (see child.Held).
func stopCommand(h *child.Held, leader bool) {
	signal := func(sig syscall.Signal) {
		if !leader {
			_ = h.SignalGroup(sig)
			return
		}
		pids, _ := child.GroupPIDs(syscall.Getpgrp())
		for _, pid := range pids {
			if pid != os.Getpid() {
				_ = syscall.Kill(pid, sig)
			}
		}
	}
	signal(syscall.SIGTERM)
	select {
	case <-h.Exited():
	case <-time.After(5 * time.Second):
		signal(syscall.SIGKILL)
		<-h.Exited()
	}
	// What the command left running in its group goes too.
	signal(syscall.SIGKILL)
	h.Reap()
}

// reapChildren kills and reaps every child we have left: the orphans of
// the command that were reparented to us (we are their subreaper).
func reapChildren(grace time.Duration) error {
	deadline := time.Now().Add(grace)
	for {
		for {
			pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
			if errors.Is(err, unix.ECHILD) {
				return nil
			}
			if pid <= 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			return errors.New("processes left by the command would not end")
		}
		pids, _ := child.ChildPIDs(os.Getpid())
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
