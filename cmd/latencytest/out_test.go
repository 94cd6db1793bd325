package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"latencytest/rundata"
	"latencytest/runner"
)

// listing is every path under dir with its kind, to tell that nothing
// was written.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out = append(out, p+" "+fi.Mode().String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// victim is a file a planted symlink points at; it must never change.
func victim(t *testing.T) (path string, check func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "victim")
	const content = "precious\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, func() {
		t.Helper()
		b, err := os.ReadFile(path)
		fi, serr := os.Lstat(path)
		if err != nil || serr != nil || string(b) != content || !fi.Mode().IsRegular() {
			t.Errorf("the victim changed: %q %v %v", b, err, serr)
		}
	}
}

// earlierRun makes dir an earlier run's results directory.
func earlierRun(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := rundata.WriteRun(dir, &rundata.Run{Schema: rundata.SchemaVersion, Phases: []rundata.Phase{}}); err != nil {
		t.Fatal(err)
	}
}

func runInto(t *testing.T, out string, flags ...string) result {
	t.Helper()
	return latencytest(t, append([]string{"run", "--driver", "timer", "--tests", "idle", "--duration", "300ms", "--out", out, "--no-report", "--quiet"}, flags...)...)
}

// A directory that is not empty and not a results directory is refused
// with one line and exit 2, and nothing is written in it; a symlink
// planted at run.json or samples is never followed: the run refuses the
// directory, and the symlink's target is unchanged.
func TestOutRefusesForeignAndPlanted(t *testing.T) {
	cases := map[string]func(t *testing.T, out, victim string){
		"foreign file": func(t *testing.T, out, _ string) {
			os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine\n"), 0o644)
		},
		"run.json symlink": func(t *testing.T, out, victim string) {
			os.Symlink(victim, filepath.Join(out, "run.json"))
		},
		"samples symlink in a results directory": func(t *testing.T, out, victim string) {
			earlierRun(t, out)
			os.Symlink(filepath.Dir(victim), filepath.Join(out, "samples"))
		},
		"samples symlink to a file": func(t *testing.T, out, victim string) {
			earlierRun(t, out)
			os.Symlink(victim, filepath.Join(out, "samples"))
		},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			os.Mkdir(out, 0o755)
			v, unchanged := victim(t)
			plant(t, out, v)
			before := listing(t, out)
			vdir := listing(t, filepath.Dir(v))
			r := runInto(t, out)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != 2 || len(lines) != 1 || !strings.Contains(lines[0], "--out "+out) {
				t.Errorf("exit %d, stderr %q; want 2 and one line naming --out", r.code, r.stderr)
			}
			if after := listing(t, out); !slices.Equal(before, after) {
				t.Errorf("the directory changed:\n%v\n%v", before, after)
			}
			if after := listing(t, filepath.Dir(v)); !slices.Equal(vdir, after) {
				t.Errorf("the symlink's target directory changed:\n%v\n%v", vdir, after)
			}
			unchanged()
		})
	}
}

// In an earlier run's results directory, a symlink planted where a
// samples file goes is never followed: without --force the directory is
// refused; with it, the directory is replaced whole (the symlink is gone
// with the earlier run) and the run succeeds.
func TestOutReplacesPlantedSamplesFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	earlierRun(t, out)
	os.Mkdir(filepath.Join(out, "samples"), 0o755)
	v, unchanged := victim(t)
	link := filepath.Join(out, "samples", "01-idle.bin")
	if err := os.Symlink(v, link); err != nil {
		t.Fatal(err)
	}
	oneLine(t, runInto(t, out), "earlier run without --force")
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("refused, yet the directory changed: %v, %v", fi, err)
	}
	if r := runInto(t, out, "--force"); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	unchanged()
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("%s: %v, %v; want the new samples file", link, fi, err)
	}
	run := readRun(t, out)
	if len(run.Phases) != 1 || int64(len(readSamples(t, out, run.Phases[0]))) != run.Phases[0].Periods || run.Incomplete {
		t.Errorf("run.json %+v", run)
	}
	if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 1 {
		t.Errorf("left beside the results directory: %v", ents)
	}
}

// An empty directory is taken, and an earlier run's with --force; a new
// one appears with its run.json already in it, and no temporary
// directory is left.
func TestOutEmptyAndEarlierRunAccepted(t *testing.T) {
	parent := t.TempDir()
	empty := filepath.Join(parent, "empty")
	os.Mkdir(empty, 0o755)
	earlier := filepath.Join(parent, "earlier")
	earlierRun(t, earlier)
	fresh := filepath.Join(parent, "a", "b", "fresh") + "/" // the slash names the same directory
	for _, c := range []struct {
		out   string
		flags []string
	}{{empty, nil}, {earlier, []string{"--force"}}, {fresh, nil}} {
		if r := runInto(t, c.out, c.flags...); r.code != 0 {
			t.Fatalf("%s: exit %d: %s", c.out, r.code, r.stderr)
		}
		if run := readRun(t, c.out); len(run.Phases) != 1 || run.Phases[0].Periods == 0 {
			t.Errorf("%s: phases %+v", c.out, run.Phases)
		}
	}
	for _, glob := range []string{filepath.Join(parent, ".*"), filepath.Join(parent, "a", "b", ".*")} {
		if tmp, _ := filepath.Glob(glob); len(tmp) > 0 {
			t.Errorf("temporary directories left: %v", tmp)
		}
	}
}

// Two runs with the same --out at once: the second exits 2 with one line
// saying the directory is in use (with --force too) and writes nothing,
// and the first's results are whole. Monitors share a base directory no
// more than runs share a results directory.
func TestOutOneRunAtATime(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	first, se := started(t, nil, streamLine, "run", "--driver", "timer", "--tests", "idle", "--duration", "3s",
		"--out", out, "--no-report")
	for _, flags := range [][]string{nil, {"--force"}} {
		r := runInto(t, out, flags...)
		oneLine(t, r, fmt.Sprintf("second run %v", flags))
		if !strings.Contains(r.stderr, "--out "+out+": in use by another latencytest run") {
			t.Errorf("second run %v: %q; want it to say the directory is in use", flags, r.stderr)
		}
	}
	if code, _ := exitCode(t, first, time.Now()); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, se.String())
	}
	run := readRun(t, out)
	if len(run.Phases) != 1 || run.Incomplete || int64(len(readSamples(t, out, run.Phases[0]))) != run.Phases[0].Periods {
		t.Errorf("the first run's results: %+v", run)
	}

	base := filepath.Join(t.TempDir(), "mon")
	mon, mse := started(t, nil, "metrics: http://", "monitor", "--rotate", "1s", "--out", base, "--listen", "127.0.0.1:0")
	r := latencytest(t, "monitor", "--rotate", "1s", "--out", base)
	oneLine(t, r, "second monitor")
	if !strings.Contains(r.stderr, "in use by another latencytest run") {
		t.Errorf("second monitor: %q", r.stderr)
	}
	mon.Process.Signal(syscall.SIGTERM)
	if code, _ := exitCode(t, mon, time.Now()); code != 130 {
		t.Errorf("monitor: exit %d: %s", code, mse.String())
	}
	if dirs, err := runner.Rotations(base); err != nil || len(dirs) == 0 {
		t.Errorf("the first monitor's rotations: %v, %v", dirs, err)
	}
}

// A symlink as --out is refused with one line, whatever it points at,
// for run (with --force too) and monitor; nothing is written through it.
func TestOutSymlinkRefused(t *testing.T) {
	target := t.TempDir()
	earlierRun(t, filepath.Join(target, "earlier"))
	before := listing(t, target)
	dir := t.TempDir()
	for _, to := range []string{target, filepath.Join(target, "earlier"), filepath.Join(target, "none")} {
		link := filepath.Join(dir, "link-"+filepath.Base(to))
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"run", "--driver", "timer", "--tests", "idle", "--duration", "300ms", "--no-report", "--out", link},
			{"run", "--driver", "timer", "--tests", "idle", "--duration", "300ms", "--no-report", "--force", "--out", link},
			{"monitor", "--rotate", "1s", "--out", link},
		} {
			r := latencytest(t, args...)
			oneLine(t, r, strings.Join(args, " "))
			if !strings.Contains(r.stderr, "--out "+link+": a symbolic link") {
				t.Errorf("%v: %q; want it to name the symlink", args, r.stderr)
			}
		}
	}
	if after := listing(t, target); !slices.Equal(before, after) {
		t.Errorf("written through the symlink:\n%v\n%v", before, after)
	}
}
