package child

import (
	"sync"
	"syscall"
	"time"
)

// Set is the children alive in a process, so that a second Ctrl-C can end
// them all at once (the first one stops them in order, keeping what they
// measured). The zero Set is empty; a nil *Set holds nothing.
type Set struct {
	mu    sync.Mutex
	procs map[*Process]struct{}
}

func (s *Set) add(p *Process) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.procs == nil {
		s.procs = map[*Process]struct{}{}
	}
	s.procs[p] = struct{}{}
}

func (s *Set) remove(p *Process) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.procs, p)
}

// KillAll sends SIGKILL to every child's process group, waits up to a
// second for them to exit, and removes their temporary directories. It is
// for a process about to exit: the children are not reaped (their parent's
// exit hands them to init).
func (s *Set) KillAll() {
	s.mu.Lock()
	procs := make([]*Process, 0, len(s.procs))
	for p := range s.procs {
		procs = append(procs, p)
	}
	s.mu.Unlock()
	for _, p := range procs {
		_ = p.Signal(syscall.SIGKILL)
	}
	deadline := time.After(time.Second)
wait:
	for _, p := range procs {
		select {
		case <-p.Exited():
		case <-deadline:
			break wait
		}
	}
	for _, p := range procs {
		_ = p.temp.remove()
	}
}
