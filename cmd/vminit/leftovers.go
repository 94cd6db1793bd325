//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/internal/procfile"
)

// A process that a test binary left running.
type leftover struct {
	pid  int
	name string
}

// leftovers lists the user-space processes under procDir other than
// self: after a test binary exits, nothing it started should still run
// (kernel threads, which are kthreadd (pid 2) and its children, do not
// count).
func leftovers(procDir string, self int) ([]leftover, error) {
	stats, err := filepath.Glob(filepath.Join(procDir, "[0-9]*", "stat"))
	if err != nil {
		return nil, fmt.Errorf("leftovers: %w", err)
	}
	var out []leftover
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // it exited meanwhile
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		st, ok := procfile.ParseStat(b)
		if err != nil || !ok || pid == self || pid == 2 || st.PPid == 2 || st.State == "Z" {
			continue
		}
		out = append(out, leftover{pid: pid, name: st.Comm})
	}
	return out, nil
}

// cleanUp kills what the test binary left behind (so that a leaked
// engine holding a PCM device cannot fail the next binary's tests), says
// so, and reaps every exited child: pid 1 inherits orphans. It never
// blocks for long: a process stuck in the kernel is reported, not waited
// for.
func cleanUp(out io.Writer, name string) {
	left, err := leftovers("/proc", os.Getpid())
	if err != nil {
		fmt.Fprintf(out, "vminit: %v\n", err)
	}
	if len(left) > 0 {
		var desc []string
		for _, l := range left {
			desc = append(desc, fmt.Sprintf("%d (%s)", l.pid, l.name))
			unix.Kill(l.pid, unix.SIGKILL)
		}
		fmt.Fprintf(out, "vminit: warning: %s left processes running, killed: %s\n", name, strings.Join(desc, ", "))
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		reap()
		if left, _ := leftovers("/proc", os.Getpid()); len(left) == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reap collects the children that have exited.
func reap() {
	for {
		var st unix.WaitStatus
		pid, err := unix.Wait4(-1, &st, unix.WNOHANG, nil)
		if err != nil || pid <= 0 {
			return
		}
	}
}
