package child

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"latencytest/internal/threads"
)

// Held is a process started under two of the package's rules, without the
// report protocol (the supervisor's children use it, and so can a child for
// a command of its own): it is forked from a goroutine locked to its OS
// thread, which lives until the process is reaped, so PR_SET_PDEATHSIG
// follows this process and not a thread; and its exit is awaited without
// reaping it, so that its process group (if it leads one) can be signalled
// until Reap — the group id cannot be another's while the leader is an
// unreaped zombie.
type Held struct {
	cmd     *exec.Cmd
	pid     int
	exited  chan struct{} // it has exited (a zombie until reaped)
	reapNow chan struct{} // closed by Reap: the thread may reap
	reaped  chan struct{}
	code    int32 // how it ended (CLD_*), set before exited is closed

	mu      sync.Mutex
	reaping bool // set before the reap: no group signal after
}

// StartHeld starts cmd (see Held).
func StartHeld(cmd *exec.Cmd) (*Held, error) { return StartHeldOn(cmd, nil) }

// StartHeldOn is StartHeld with the child's CPU affinity set to cpus
// (none: inherited): the forking thread, which is its own, takes it first,
// and the child inherits it from its first instruction.
func StartHeldOn(cmd *exec.Cmd, cpus []int) (*Held, error) {
	h := &Held{cmd: cmd, exited: make(chan struct{}), reapNow: make(chan struct{}), reaped: make(chan struct{})}
	started := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine, after the reap
		if err := startOn(cmd, cpus); err != nil {
			started <- err
			return
		}
		h.pid = cmd.Process.Pid
		started <- nil
		h.code = awaitExit(h.pid)
		close(h.exited)
		<-h.reapNow
		_ = cmd.Wait() // the exit status is in ProcessState
		close(h.reaped)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return h, nil
}

// startOn starts cmd from the calling (locked) thread with the child's
// CPU affinity cpus (none: this thread's), then puts the thread back on
// the CPUs it had: it waits for the child as long as the child lives, as
// part of the parent's own work.
func startOn(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	var was unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		return fmt.Errorf("CPU affinity: %w", err)
	}
	set := threads.Set(cpus)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("CPU affinity %v: %w", cpus, err)
	}
	defer unix.SchedSetaffinity(0, &was)
	return cmd.Start()
}

// How a process ended, in waitid's si_code (<signal.h>, CLD_*).
const (
	cldKilled = 2
	cldDumped = 3
)

// awaitExit blocks until process pid has exited, leaving it unreaped, and
// returns how it ended (waitid's si_code).
func awaitExit(pid int) int32 {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return info.Code
		}
	}
}

// Signaled reports whether the process, once Exited, was ended by a
// signal.
func (h *Held) Signaled() bool {
	<-h.exited
	return h.code == cldKilled || h.code == cldDumped
}

// Pid is the process id (its group id, if it leads a group).
func (h *Held) Pid() int { return h.pid }

// Exited is closed when the process has exited; it stays unreaped until
// Reap.
func (h *Held) Exited() <-chan struct{} { return h.exited }

// SignalGroup sends sig to the process group the process leads, which it
// refuses to do once Reap has begun.
func (h *Held) SignalGroup(sig syscall.Signal) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.reaping {
		return ErrReaped
	}
	return unix.Kill(-h.pid, sig)
}

// Reap waits for the process to exit, reaps it and returns its exit
// status (nil if there is none). It may be called more than once.
func (h *Held) Reap() *os.ProcessState {
	<-h.exited
	h.mu.Lock()
	if !h.reaping {
		h.reaping = true
		close(h.reapNow)
	}
	h.mu.Unlock()
	<-h.reaped
	return h.cmd.ProcessState
}
