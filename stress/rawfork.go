package stress

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Go has no fork without exec, yet hackbench's process mode and a fork
// storm are about exactly that: fork(), a little work, exit. rawFork forks
// with a bare clone(SIGCHLD) and runs the child on the copy of the calling
// goroutine's stack without ever returning to the Go runtime: the child
// code is nosplit (no stack growth), norace, touches only integers and
// memory the parent prepared (no allocation, no write barrier) and makes
// raw system calls only, ending with exit_group. Signals are blocked
// across the clone so no Go signal handler ever runs in the child.

// Child roles.
const (
	childExit     = iota // exit at once: the fork storm
	childSender          // hackbench sender
	childReceiver        // hackbench receiver
)

// forkArgs is all a raw-forked child reads. The parent fills it before the
// fork and may change it for the next child afterwards: each child has its
// own copy-on-write snapshot.
type forkArgs struct {
	role     uintptr
	ppid     uintptr
	readyFd  uintptr // write one byte here when ready...
	wakeFd   uintptr // ...then wait until this is readable
	closeFd  uintptr // receiver: the sender's end, to close (-1: none)
	fds      []int32 // sender: the receivers' fds; receiver: fds[0] is its own
	loops    uintptr // sender: messages per receiver; receiver: messages in total
	datasize uintptr
	buf      []byte // datasize bytes
	poll     unix.PollFd
	one      [1]byte

	// Memory the child gives back before it says it is ready: the Go
	// heap and runtime mappings it does not use, so that its exit (which
	// hackbench times) tears down a small process, as a forked C worker
	// is. drop are anonymous mappings of the parent; keep are the ranges
	// the child reads (this struct, fds, buf); the child adds its stack.
	drop  [maxDrop][2]uintptr
	ndrop uintptr
	keep  [3][2]uintptr
}

// maxDrop bounds the mappings a child unmaps (a Go process has a few
// dozen anonymous ones).
const maxDrop = 128

// childStackKeep is how much of the goroutine stack around the fork the
// child keeps: its own frames below, its callers' above.
const childStackKeep = 256 << 10

// setDrop fills a.drop with the anonymous mappings of this process (from
// /proc/self/maps) and a.keep with the memory the child reads.
func (a *forkArgs) setDrop() {
	a.ndrop = 0
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return // the child keeps everything: slower to exit, that is all
	}
	page := uintptr(os.Getpagesize())
	span := func(p unsafe.Pointer, n uintptr) [2]uintptr {
		lo := uintptr(p) &^ (page - 1)
		return [2]uintptr{lo, (uintptr(p) + n + page - 1) &^ (page - 1)}
	}
	a.keep[0] = span(unsafe.Pointer(a), unsafe.Sizeof(*a))
	a.keep[1], a.keep[2] = a.keep[0], a.keep[0]
	if len(a.fds) > 0 {
		a.keep[1] = span(unsafe.Pointer(&a.fds[0]), uintptr(len(a.fds))*4)
	}
	if len(a.buf) > 0 {
		a.keep[2] = span(unsafe.Pointer(&a.buf[0]), uintptr(len(a.buf)))
	}
	var prevEnd uint64
	prevNamed := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		l, err1 := strconv.ParseUint(lo, 16, 64)
		h, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil {
			continue
		}
		// Anonymous mappings only (no path, not [stack], [vdso], [heap]...),
		// and not the one right after a file's mapping: that is the
		// binary's (or a library's) .bss, with globals such as coverage
		// counters that the child may write.
		if len(f) == 5 && !(prevNamed && l == prevEnd) && a.ndrop < maxDrop {
			a.drop[a.ndrop] = [2]uintptr{uintptr(l), uintptr(h)}
			a.ndrop++
		}
		prevEnd, prevNamed = h, len(f) > 5
	}
}

// rawFork forks a child running a's role and returns its pid. The caller
// must be locked to its OS thread (LockOSThread) and keep that thread
// alive until the child is reaped: the child's PR_SET_PDEATHSIG fires when
// the forking thread ends.
func rawFork(a *forkArgs) (int, error) {
	a.ppid = uintptr(unix.Getpid())
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^all.Val[i] // all ones whatever the word size (uint32 on 32-bit)
	}
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &all, &old); err != nil {
		return 0, err
	}
	pid, errno := forkChild(a)
	_ = unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	runtime.KeepAlive(a)
	if errno != 0 {
		return 0, errno
	}
	return int(pid), nil
}

//go:nosplit
//go:norace
func forkChild(a *forkArgs) (uintptr, syscall.Errno) {
	pid, _, errno := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if errno != 0 || pid != 0 {
		return pid, errno
	}
	childMain(a)
	return 0, 0 // not reached
}

//go:nosplit
//go:norace
func childMain(a *forkArgs) {
	syscall.RawSyscall6(syscall.SYS_PRCTL, unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0, 0)
	if ppid, _, _ := syscall.RawSyscall6(syscall.SYS_GETPPID, 0, 0, 0, 0, 0, 0); ppid != a.ppid {
		rawExit(1) // the parent died before we could ask to follow it
	}
	childUnmap(a)
	switch a.role {
	case childSender:
		if !childReady(a) {
			rawExit(1)
		}
		for i := uintptr(0); i < a.loops; i++ {
			for j := 0; j < len(a.fds); j++ {
				if !rawWriteFull(uintptr(a.fds[j]), a.buf, a.datasize) {
					rawExit(1)
				}
			}
		}
	case childReceiver:
		if a.closeFd != ^uintptr(0) {
			syscall.RawSyscall6(syscall.SYS_CLOSE, a.closeFd, 0, 0, 0, 0, 0)
		}
		if !childReady(a) || len(a.fds) == 0 {
			rawExit(1)
		}
		for i := uintptr(0); i < a.loops; i++ {
			if !rawReadFull(uintptr(a.fds[0]), a.buf, a.datasize) {
				rawExit(1)
			}
		}
	}
	rawExit(0)
}

// childUnmap unmaps a.drop except a.keep, the stack around us and the
// thread's TLS (with glibc's rseq area, which the kernel writes). A thread
// pointer of 0 is no TLS at all (Go without cgo on ARM never sets the
// register), so no rseq area either; one that cannot be read keeps
// everything.
//
//go:nosplit
//go:norace
func childUnmap(a *forkArgs) {
	tp, ok := threadPointer()
	if !ok {
		return
	}
	var here byte
	sp := uintptr(unsafe.Pointer(&here))
	stack := [2]uintptr{(sp - childStackKeep) &^ 4095, (sp + childStackKeep) &^ 4095}
	var tls [2]uintptr // empty: keeps nothing
	if tp != 0 {
		tls = [2]uintptr{(tp - childStackKeep) &^ 4095, (tp + childStackKeep) &^ 4095}
	}
	for i := uintptr(0); i < a.ndrop && i < maxDrop; i++ {
		cur, hi := a.drop[i][0], a.drop[i][1]
		for cur < hi {
			next := hi // the start of the next kept range, or the end
			skip := false
			for k := 0; k < 5; k++ {
				var r [2]uintptr
				switch {
				case k < 3:
					r = a.keep[k]
				case k == 3:
					r = stack
				default:
					r = tls
				}
				if r[0] <= cur && cur < r[1] {
					cur, skip = r[1], true // inside a kept range: jump over it
					break
				}
				if r[0] > cur && r[0] < next {
					next = r[0]
				}
			}
			if skip {
				continue
			}
			syscall.RawSyscall6(syscall.SYS_MUNMAP, cur, next-cur, 0, 0, 0, 0)
			cur = next
		}
	}
}

// childReady tells the parent we are ready and waits for the start signal,
// as hackbench's ready() does.
//
//go:nosplit
//go:norace
func childReady(a *forkArgs) bool {
	if n, _, errno := syscall.RawSyscall6(syscall.SYS_WRITE, a.readyFd, uintptr(unsafe.Pointer(&a.one[0])), 1, 0, 0, 0); errno != 0 || n != 1 {
		return false
	}
	a.poll.Fd = int32(a.wakeFd)
	a.poll.Events = unix.POLLIN
	for {
		n, _, errno := syscall.RawSyscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&a.poll)), 1, 0, 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		return errno == 0 && n == 1
	}
}

//go:nosplit
//go:norace
func rawWriteFull(fd uintptr, buf []byte, n uintptr) bool {
	if n == 0 || uintptr(len(buf)) < n {
		return n == 0
	}
	for done := uintptr(0); done < n; {
		w, _, errno := syscall.RawSyscall6(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&buf[done])), n-done, 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return false
		}
		done += w
	}
	return true
}

//go:nosplit
//go:norace
func rawReadFull(fd uintptr, buf []byte, n uintptr) bool {
	if n == 0 || uintptr(len(buf)) < n {
		return n == 0
	}
	for done := uintptr(0); done < n; {
		r, _, errno := syscall.RawSyscall6(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[done])), n-done, 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 || r == 0 {
			return false
		}
		done += r
	}
	return true
}

//go:nosplit
//go:norace
func rawExit(code uintptr) {
	for {
		syscall.RawSyscall6(syscall.SYS_EXIT_GROUP, code, 0, 0, 0, 0, 0)
	}
}
