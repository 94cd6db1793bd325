package ktrace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// instancePrefix names latencytest's trace instances; the process id
// follows, so that one left by a killed run can be told and removed.
const instancePrefix = "latencytest-"

type tracefs struct{ root string }

// findTracefs finds tracefs, mounting it at /sys/kernel/tracing when it is
// not mounted (root only).
func findTracefs(root string) (*tracefs, error) {
	if t := lookTracefs(root); t != nil {
		return t, nil
	}
	cands := tracefsPlaces(root)
	if !isDir(cands[0]) {
		return nil, fmt.Errorf("no tracefs: %s does not exist (a kernel without CONFIG_FTRACE)", cands[0])
	}
	if err := unix.Mount("nodev", cands[0], "tracefs", 0, ""); err != nil {
		return nil, fmt.Errorf("tracefs is not mounted and mounting it at %s failed: %v (run as root)", cands[0], err)
	}
	if !isDir(filepath.Join(cands[0], "instances")) {
		return nil, fmt.Errorf("tracefs at %s has no instances directory", cands[0])
	}
	return &tracefs{root: cands[0]}, nil
}

// lookTracefs finds a mounted tracefs (root, or "" for where the kernel
// mounts it), or returns nil.
func lookTracefs(root string) *tracefs {
	for _, c := range tracefsPlaces(root) {
		if isDir(filepath.Join(c, "instances")) {
			return &tracefs{root: c}
		}
	}
	return nil
}

func tracefsPlaces(root string) []string {
	if root == "" {
		return []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}
	}
	return []string{root}
}

func isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

// newInstance creates this process's instance.
func (t *tracefs) newInstance() (string, error) {
	dir := t.instanceDir(os.Getpid())
	if err := unix.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, unix.EEXIST) {
			t.removeInstance(dir)
			err = unix.Mkdir(dir, 0o700)
		}
		if err != nil {
			return "", fmt.Errorf("tracefs: create an instance in %s: %v (run as root)", filepath.Dir(dir), err)
		}
	}
	return dir, nil
}

// removeInstance turns the instance's events off and removes it (which
// frees its buffers).
func (t *tracefs) removeInstance(dir string) error {
	writeFile(dir, "tracing_on", "0")
	writeFile(dir, "events/enable", "0")
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("tracefs: remove %s: %w", dir, err)
	}
	return nil
}

// removeStale removes the instances of latencytest processes that are
// gone (a run killed before it could clean up).
func (t *tracefs) removeStale() {
	ms, _ := filepath.Glob(filepath.Join(t.root, "instances", instancePrefix+"*"))
	for _, dir := range ms {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), instancePrefix))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if unix.Kill(pid, 0) == unix.ESRCH {
			t.resetOsnoise(dir)
			t.removeInstance(dir)
		}
	}
}

// writeFile writes a tracefs control file.
func writeFile(dir, name, value string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_TRUNC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("tracefs: %w", err)
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("tracefs: write %q to %s: %w", value, filepath.Join(dir, name), err)
	}
	return nil
}
