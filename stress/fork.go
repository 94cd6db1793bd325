package stress

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"latencytest/internal/badinput"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// forkStressor is a fork storm: processes that fork, exit at once and are
// reaped, as fast as --parallel forkers can make them. The children are
// real fork()s (see rawFork), not fork+exec.
type forkStressor struct{}

func (forkStressor) Name() string { return "fork" }
func (forkStressor) Description() string {
	return "fork storm: short-lived processes forked and reaped by --parallel forkers; processes/s"
}

type forkLoad struct {
	parallel int
	flag     flagPrefix
}

func (forkStressor) Flags(fs *flag.FlagSet, prefix string) Load {
	l := &forkLoad{flag: flagPrefix(prefix)}
	fs.IntVar(&l.parallel, l.flag.def("parallel"), runtime.NumCPU(), "forkers working at once")
	return l
}

func (l *forkLoad) Check() error {
	if l.parallel < 1 || l.parallel > 1024 {
		return badinput.Errorf("%s %d: want 1 to 1024", l.flag.name("parallel"), l.parallel)
	}
	return nil
}

func (l *forkLoad) Run(ctx context.Context, m *Meter) error {
	m.Unit("processes", 1)
	m.Set("parallel", l.parallel)
	m.Ready()
	var wg sync.WaitGroup
	errs := make([]error, l.parallel)
	for i := range l.parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Locked for good: the thread ends with this goroutine, after
			// its last child is reaped (the children's PR_SET_PDEATHSIG
			// follows this thread).
			runtime.LockOSThread()
			a := &forkArgs{role: childExit}
			for ctx.Err() == nil {
				pid, err := rawFork(a)
				if errors.Is(err, unix.EAGAIN) {
					runtime.Gosched() // the process limit: others must exit first
					continue
				}
				if err != nil {
					errs[i] = fmt.Errorf("fork: %w", err)
					return
				}
				var ws unix.WaitStatus
				for {
					if _, err := unix.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
						break
					}
				}
				m.Add(1)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
