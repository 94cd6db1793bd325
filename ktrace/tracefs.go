package ktrace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"latencytest/internal/held"
	"latencytest/internal/procfile"
)

// instancePrefix names latencytest's trace instances. Their owner
// follows (InstanceName): tracefs is the kernel's, one for every PID
// namespace, so a pid alone would name two containers' runs alike.
const instancePrefix = "latencytest-"

// InstanceName is the name of the trace instance of process p's session:
// its PID namespace, pid and start time, which name one process of one
// boot, so that two runs never share an instance and one left by a killed
// run can be told (staleInstances).
func InstanceName(p procfile.Proc) string {
	return fmt.Sprintf("%s%d-%d-%d", instancePrefix, p.NS, p.PID, p.Start)
}

// instanceOwner is the process an instance name says owns it; ok is
// false for a name not of InstanceName's form (another tool's, or of a
// latencytest before it, named by pid alone: whose namespace is unknown).
func instanceOwner(name string) (p procfile.Proc, ok bool) {
	f := strings.Split(strings.TrimPrefix(name, instancePrefix), "-")
	if !strings.HasPrefix(name, instancePrefix) || len(f) != 3 {
		return procfile.Proc{}, false
	}
	ns, err1 := strconv.ParseUint(f[0], 10, 64)
	pid, err2 := strconv.Atoi(f[1])
	start, err3 := strconv.ParseUint(f[2], 10, 64)
	p = procfile.Proc{NS: ns, PID: pid, Start: start}
	return p, err1 == nil && err2 == nil && err3 == nil && InstanceName(p) == name
}

// staleInstances chooses, of the instance names, those whose owner is
// known to be gone (alive: procfile.Proc.Alive): never this process's,
// one of another PID namespace (a container's run, which this one cannot
// see), nor one whose name does not say its owner.
func staleInstances(names []string, self procfile.Proc, alive func(procfile.Proc) (alive, known bool)) []string {
	var stale []string
	for _, n := range names {
		p, ok := instanceOwner(n)
		if !ok || p == self {
			continue
		}
		if live, known := alive(p); known && !live {
			stale = append(stale, n)
		}
	}
	return stale
}

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
	self, err := procfile.Self()
	if err != nil {
		return "", fmt.Errorf("tracefs: this process: %w", err)
	}
	dir := t.instanceDir(self)
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
// gone (a run killed before it or its guard could clean up), and returns
// their names. What such a run held of the shared settings (the osnoise
// tracer's) is put back from its record in store (nil: no store, nothing
// put back) before the instances go.
func (t *tracefs) removeStale(store *held.Store) ([]string, error) {
	self, err := procfile.Self()
	if err != nil {
		return nil, fmt.Errorf("tracefs: this process: %w", err)
	}
	ms, _ := filepath.Glob(filepath.Join(t.root, "instances", instancePrefix+"*"))
	for i, m := range ms {
		ms[i] = filepath.Base(m)
	}
	stale := staleInstances(ms, self, procfile.Proc.Alive)
	if len(stale) == 0 {
		return nil, nil
	}
	var errs []error
	for _, n := range stale {
		writeFile(filepath.Join(t.root, "instances", n), "current_tracer", "nop")
	}
	if store != nil {
		_, err := store.Recover()
		errs = append(errs, err)
	}
	for _, n := range stale {
		errs = append(errs, t.removeInstance(filepath.Join(t.root, "instances", n)))
	}
	return stale, errors.Join(errs...)
}

// RemoveStale removes the trace instances of latencytest processes that
// are gone, as the next session would (latencytest check --restore), and
// returns their names; with tracefs not mounted there are none.
func RemoveStale(store *held.Store) ([]string, error) {
	fs := lookTracefs("")
	if fs == nil {
		return nil, nil
	}
	return fs.removeStale(store)
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
