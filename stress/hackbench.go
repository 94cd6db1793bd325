package stress

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"latencytest/internal/badinput"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// hackbenchStressor is rt-tests hackbench: groups of senders and receivers;
// each sender writes loops messages of datasize bytes to every receiver of
// its group, over AF_UNIX stream socketpairs (or pipes), the workers being
// processes (forked, as hackbench does) or threads. A round is timed from
// the moment every worker is ready until the last one is reaped.
type hackbenchStressor struct{}

func (hackbenchStressor) Name() string { return "hackbench" }
func (hackbenchStressor) Description() string {
	return "rt-tests hackbench: groups of senders/receivers over socketpairs or pipes; rounds and their times"
}

type hackbench struct {
	groups, fds, loops, datasize int
	pipe, threads, process       bool
	flag                         flagPrefix
	// keepMemory: forked workers keep all of the parent's memory. Set
	// when a worker died before it was ready, which would mean childUnmap
	// dropped memory it needed on this system; the round is then run
	// again this way.
	keepMemory bool
	bare       bool // the number of groups was given bare (Positional)
}

// Positional takes a bare number as the number of groups, as
// `hackbench 6` does.
func (h *hackbench) Positional(arg string) error {
	n, err := strconv.Atoi(arg)
	switch {
	case h.bare:
		return fmt.Errorf("unexpected argument %q: the number of groups is given once", arg)
	case err != nil:
		return fmt.Errorf("unexpected argument %q: a bare argument is the number of groups, as in 'hackbench 6'", arg)
	}
	h.groups, h.bare = n, true
	return nil
}

// errEarlyDeath is a worker that ended before the round started.
var errEarlyDeath = errors.New("hackbench: a worker ended before the round started")

// Limits keep a typo from forking a million processes.
const (
	hbMaxTasks    = 20000
	hbMaxDatasize = 1 << 20
)

// Flags defines rt-tests hackbench's flags, its one-letter ones too when
// they are the command's own (no prefix): within run, --hackbench-g would
// be no one's word.
func (hackbenchStressor) Flags(fs *flag.FlagSet, prefix string) Load {
	h := &hackbench{flag: flagPrefix(prefix)}
	names := func(short, long string) []string {
		if prefix != "" {
			return []string{prefix + long}
		}
		return []string{short, long}
	}
	for _, n := range names("g", "groups") {
		fs.IntVar(&h.groups, n, 10, "number of groups")
	}
	for _, n := range names("f", "fds") {
		fs.IntVar(&h.fds, n, 20, "number of senders (and of receivers) per group")
	}
	for _, n := range names("l", "loops") {
		fs.IntVar(&h.loops, n, 100, "messages each sender sends to each receiver")
	}
	for _, n := range names("s", "datasize") {
		fs.IntVar(&h.datasize, n, 100, "message size in bytes")
	}
	for _, n := range names("p", "pipe") {
		fs.BoolVar(&h.pipe, n, false, "send over pipes instead of socketpairs")
	}
	for _, n := range names("T", "threads") {
		fs.BoolVar(&h.threads, n, false, "threads instead of processes")
	}
	for _, n := range names("P", "process") {
		fs.BoolVar(&h.process, n, false, "processes (the default)")
	}
	return h
}

func (h *hackbench) Check() error {
	switch {
	case h.groups < 1:
		return badinput.Errorf("%s %d: want 1 or more", h.flag.name("groups"), h.groups)
	case h.fds < 1:
		return badinput.Errorf("%s %d: want 1 or more", h.flag.name("fds"), h.fds)
	case h.loops < 1:
		return badinput.Errorf("%s %d: want 1 or more", h.flag.name("loops"), h.loops)
	case h.datasize < 1 || h.datasize > hbMaxDatasize:
		return badinput.Errorf("%s %d: want 1 to %d bytes", h.flag.name("datasize"), h.datasize, hbMaxDatasize)
	case h.threads && h.process && h.flag == "":
		return badinput.Errorf("-T (threads) and -P (processes) exclude each other")
	case h.threads && h.process:
		return badinput.Errorf("%s and %s exclude each other", h.flag.name("threads"), h.flag.name("process"))
	case 2*h.groups*h.fds > hbMaxTasks:
		return badinput.Errorf("%s %d × %s %d is %d tasks; at most %d", h.flag.name("groups"), h.groups, h.flag.name("fds"), h.fds, 2*h.groups*h.fds, hbMaxTasks)
	}
	return nil
}

func (h *hackbench) mode() string {
	if h.threads {
		return "threaded"
	}
	return "process"
}

// RunOnce is hackbench without --duration: one round, hackbench's output.
func (h *hackbench) RunOnce(ctx context.Context, stdout io.Writer) error {
	fmt.Fprintf(stdout, "Running in %s mode with %d groups using %d file descriptors each (== %d tasks)\n",
		h.mode(), h.groups, 2*h.fds, 2*h.groups*h.fds)
	fmt.Fprintf(stdout, "Each sender will pass %d messages of %d bytes\n", h.loops, h.datasize)
	d, err := h.roundOnThread(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Time: %s\n", hackbenchTime(d))
	return nil
}

// hackbenchTime formats d as hackbench does: seconds, milliseconds
// truncated.
func hackbenchTime(d time.Duration) string {
	ms := d.Milliseconds()
	return fmt.Sprintf("%d.%03d", ms/1000, ms%1000)
}

// Run runs rounds back to back, counting rounds and recording their times.
func (h *hackbench) Run(ctx context.Context, m *Meter) error {
	m.Unit("rounds", 1)
	m.Set("groups", h.groups)
	m.Set("fds", h.fds)
	m.Set("loops", h.loops)
	m.Set("datasize", h.datasize)
	m.Set("mode", h.mode())
	m.Ready()
	return h.onThread(func() error {
		for ctx.Err() == nil {
			d, err := h.round(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil // stopped mid-round: the round does not count
				}
				return err
			}
			m.Append("round_time_s", round3(d.Seconds()))
			m.Add(1)
		}
		return nil
	})
}

func (h *hackbench) roundOnThread(ctx context.Context) (d time.Duration, err error) {
	err = h.onThread(func() error {
		d, err = h.round(ctx)
		return err
	})
	return d, err
}

// onThread runs f on a goroutine locked to a thread of its own, which ends
// with it: forked workers follow that thread's death (PR_SET_PDEATHSIG), so
// it must live until they are reaped, and no other goroutine may share it.
func (h *hackbench) onThread(f func() error) error {
	// Thread mode: a P for every worker thread, so that a thread coming
	// back from a system call runs at once, as a pthread would, instead of
	// queueing for one of GOMAXPROCS Ps (that made rounds twice as long).
	if n := 2*h.groups*h.fds + 2; h.threads && runtime.GOMAXPROCS(0) < n {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- f()
	}()
	return <-errc
}

// round is one hackbench run: set up every group, wait until all workers
// are ready, start them, and time until all are done.
func (h *hackbench) round(ctx context.Context) (time.Duration, error) {
	d, err := h.round1(ctx)
	if errors.Is(err, errEarlyDeath) && !h.keepMemory && !h.threads && ctx.Err() == nil {
		h.keepMemory = true
		d, err = h.round1(ctx)
	}
	return d, err
}

func (h *hackbench) round1(ctx context.Context) (time.Duration, error) {
	var rw, ww [2]int
	if err := unix.Pipe2(rw[:], unix.O_CLOEXEC); err != nil {
		return 0, fmt.Errorf("ready pipe: %w", err)
	}
	defer unix.Close(rw[0])
	defer unix.Close(rw[1])
	if err := unix.Pipe2(ww[:], unix.O_CLOEXEC); err != nil {
		return 0, fmt.Errorf("wake pipe: %w", err)
	}
	defer unix.Close(ww[0])
	defer unix.Close(ww[1])

	w := &hbWorkers{threads: h.threads, wakeFd: ww[1]}
	defer w.cleanup()
	stop := context.AfterFunc(ctx, w.kill)
	defer stop()
	for g := 0; g < h.groups; g++ {
		if err := h.group(w, rw[1], ww[0]); err != nil {
			return 0, err
		}
	}
	if err := w.waitReady(rw[0]); err != nil {
		return 0, err
	}
	start := time.Now()
	if _, err := unix.Write(ww[1], []byte{'W'}); err != nil {
		return 0, fmt.Errorf("starting workers: %w", err)
	}
	if err := w.reap(); err != nil {
		return 0, err
	}
	return time.Since(start), ctx.Err()
}

// group makes one group: fds receivers, each with its own socketpair (or
// pipe), and fds senders writing to all of them.
func (h *hackbench) group(w *hbWorkers, readyFd, wakeFd int) error {
	buf := make([]byte, h.datasize)
	out := make([]int32, 0, h.fds)
	if !h.threads {
		// The forked workers have their copies; the threads share ours,
		// which cleanup closes after the round.
		defer func() {
			for _, fd := range out {
				unix.Close(int(fd))
			}
		}()
	}
	for i := 0; i < h.fds; i++ {
		var p [2]int
		var err error
		if h.pipe {
			err = unix.Pipe2(p[:], unix.O_CLOEXEC)
		} else {
			p, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		}
		if err != nil {
			return fmt.Errorf("hackbench: socketpair/pipe: %w", err)
		}
		out = append(out, int32(p[1]))
		if h.threads {
			w.own(p[0], p[1])
		}
		a := &forkArgs{role: childReceiver, readyFd: uintptr(readyFd), wakeFd: uintptr(wakeFd), closeFd: uintptr(p[1]),
			fds: []int32{int32(p[0])}, loops: uintptr(h.fds * h.loops), datasize: uintptr(h.datasize), buf: buf, one: [1]byte{'R'}}
		if !h.threads && !h.keepMemory {
			a.setDrop()
		}
		err = w.start(a)
		if !h.threads {
			unix.Close(p[0]) // the receiver has its own copy
		}
		if err != nil {
			return err
		}
	}
	a := &forkArgs{role: childSender, readyFd: uintptr(readyFd), wakeFd: uintptr(wakeFd), closeFd: ^uintptr(0),
		fds: out, loops: uintptr(h.loops), datasize: uintptr(h.datasize), buf: buf, one: [1]byte{'R'}}
	if !h.threads && !h.keepMemory {
		a.setDrop()
	}
	for i := 0; i < h.fds; i++ {
		if err := w.start(a); err != nil {
			return err
		}
	}
	return nil
}

// hbWorkers are one round's workers: forked processes or threads.
type hbWorkers struct {
	threads bool
	wakeFd  int // thread mode: the start signal, for kill

	mu       sync.Mutex
	pids     []int // process mode
	nthreads int   // thread mode
	fds      []int // thread mode: the round's descriptors, closed by cleanup
	wg       sync.WaitGroup
	errs     []error
	killed   bool
	reaped   bool // thread mode: the round ran to its end
}

func (w *hbWorkers) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pids) + w.nthreads
}

func (w *hbWorkers) own(fds ...int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fds = append(w.fds, fds...)
}

// errStopped ends a round the load was told to stop.
var errStopped = errors.New("hackbench: stopped")

// waitReady reads one byte per worker from the ready pipe. It gives up
// when the round is killed, or when a worker died before it was ready
// (the byte would never come).
func (w *hbWorkers) waitReady(readyFd int) error {
	buf := make([]byte, 512)
	pfd := []unix.PollFd{{Fd: int32(readyFd), Events: unix.POLLIN}}
	for got, want := 0, w.count(); got < want; {
		n, err := unix.Poll(pfd, 100)
		if err != nil && err != unix.EINTR {
			return fmt.Errorf("hackbench: waiting for workers: %w", err)
		}
		if n > 0 {
			k, err := unix.Read(readyFd, buf[:min(len(buf), want-got)])
			if err != nil {
				return fmt.Errorf("hackbench: waiting for workers: %w", err)
			}
			got += k
			continue
		}
		if err := w.failedEarly(); err != nil {
			return err
		}
	}
	return nil
}

// failedEarly says why a round cannot start: it was killed, or a worker
// ended (without being reaped: WNOWAIT) before it was ready.
func (w *hbWorkers) failedEarly() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.killed {
		return errStopped
	}
	if len(w.errs) > 0 {
		return errors.Join(w.errs...)
	}
	for _, pid := range w.pids {
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err == nil && info.Signo != 0 {
			return fmt.Errorf("%w (pid %d)", errEarlyDeath, pid)
		}
	}
	return nil
}

// start starts one worker running a (a forked process gets a snapshot of
// it; a thread gets a copy with a buffer of its own).
func (w *hbWorkers) start(a *forkArgs) error {
	// Under the lock, so that kill cannot miss a worker started meanwhile
	// and no worker starts after kill.
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.killed {
		return errStopped
	}
	if w.threads {
		c := *a
		c.buf = make([]byte, len(a.buf))
		w.nthreads++
		w.wg.Add(1)
		go w.thread(&c)
		return nil
	}
	pid, err := rawFork(a)
	if err != nil {
		return fmt.Errorf("hackbench: fork: %w", err)
	}
	w.pids = append(w.pids, pid)
	return nil
}

// thread is a worker in thread mode: the same protocol with ordinary
// blocking system calls, on a thread of its own.
func (w *hbWorkers) thread(a *forkArgs) {
	defer w.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := a.threadWork(); err != nil {
		w.mu.Lock()
		w.errs = append(w.errs, err)
		w.mu.Unlock()
	}
}

func (a *forkArgs) threadWork() error {
	if _, err := unix.Write(int(a.readyFd), a.one[:]); err != nil {
		return err
	}
	pfd := []unix.PollFd{{Fd: int32(a.wakeFd), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(pfd, -1); err != syscall.EINTR {
			break
		}
	}
	n := a.datasize
	switch a.role {
	case childSender:
		for i := uintptr(0); i < a.loops; i++ {
			for _, fd := range a.fds {
				for done := uintptr(0); done < n; {
					k, err := unix.Write(int(fd), a.buf[done:n])
					if err != nil {
						return fmt.Errorf("sender: write: %w", err)
					}
					done += uintptr(k)
				}
			}
		}
	case childReceiver:
		for i := uintptr(0); i < a.loops; i++ {
			for done := uintptr(0); done < n; {
				k, err := unix.Read(int(a.fds[0]), a.buf[done:n])
				if err != nil || k == 0 {
					return fmt.Errorf("receiver: read: %v (%d bytes)", err, k)
				}
				done += uintptr(k)
			}
		}
	}
	return nil
}

// reap waits for every worker.
func (w *hbWorkers) reap() error {
	if w.threads {
		w.wg.Wait()
		w.mu.Lock()
		defer w.mu.Unlock()
		w.reaped = true
		if w.killed {
			return errStopped
		}
		return errors.Join(w.errs...)
	}
	w.mu.Lock()
	pids := append([]int(nil), w.pids...)
	w.mu.Unlock()
	var bad int
	for _, pid := range pids {
		var ws unix.WaitStatus
		for {
			_, err := unix.Wait4(pid, &ws, 0, nil)
			if err != syscall.EINTR {
				break
			}
		}
		if !ws.Exited() || ws.ExitStatus() != 0 {
			bad++
		}
	}
	w.mu.Lock()
	w.pids = nil
	w.mu.Unlock()
	if bad > 0 {
		return fmt.Errorf("hackbench: %d of %d workers failed", bad, len(pids))
	}
	return nil
}

// kill ends the round early (the load is being stopped, or the round
// failed): forked workers are killed; threads still waiting are started,
// and the round's sockets are shut down and its pipes replaced by /dev/null,
// which wakes every blocked thread without closing a descriptor another
// thread is using.
func (w *hbWorkers) kill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.killed = true
	for _, pid := range w.pids {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	if !w.threads || len(w.fds) == 0 {
		return
	}
	_, _ = unix.Write(w.wakeFd, []byte{'!'})
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	for _, fd := range w.fds {
		if unix.Shutdown(fd, unix.SHUT_RDWR) != nil && err == nil {
			_ = unix.Dup3(null, fd, unix.O_CLOEXEC)
		}
	}
	if err == nil {
		unix.Close(null)
	}
}

// cleanup kills and reaps what is left of a failed round, waits for the
// threads, and closes the thread mode's descriptors.
func (w *hbWorkers) cleanup() {
	w.mu.Lock()
	left := len(w.pids) > 0
	w.mu.Unlock()
	if left {
		w.kill()
		_ = w.reap()
	}
	if w.threads {
		w.mu.Lock()
		failed := len(w.errs) > 0 || !w.reaped
		w.mu.Unlock()
		if failed {
			w.kill() // a missing thread's peers would wait for it forever
		}
		w.wg.Wait()
		for _, fd := range w.fds {
			unix.Close(fd)
		}
		w.fds = nil
	}
}
