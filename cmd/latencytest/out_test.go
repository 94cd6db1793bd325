package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"latencytest/rundata"
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

func runInto(t *testing.T, out string) result {
	t.Helper()
	return latencytest(t, "run", "--driver", "timer", "--tests", "idle", "--duration", "300ms", "--out", out, "--no-report", "--quiet")
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
// samples file goes is removed and replaced by the new samples file,
// never followed; the run succeeds.
func TestOutReplacesPlantedSamplesFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	earlierRun(t, out)
	os.Mkdir(filepath.Join(out, "samples"), 0o755)
	v, unchanged := victim(t)
	link := filepath.Join(out, "samples", "01-idle.bin")
	if err := os.Symlink(v, link); err != nil {
		t.Fatal(err)
	}
	if r := runInto(t, out); r.code != 0 {
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
}

// An empty directory, and an earlier run's, are taken; a new one appears
// with its run.json already in it, and no temporary directory is left.
func TestOutEmptyAndEarlierRunAccepted(t *testing.T) {
	parent := t.TempDir()
	empty := filepath.Join(parent, "empty")
	os.Mkdir(empty, 0o755)
	earlier := filepath.Join(parent, "earlier")
	earlierRun(t, earlier)
	fresh := filepath.Join(parent, "a", "b", "fresh") + "/" // the slash names the same directory
	for _, out := range []string{empty, earlier, fresh} {
		if r := runInto(t, out); r.code != 0 {
			t.Fatalf("%s: exit %d: %s", out, r.code, r.stderr)
		}
		if run := readRun(t, out); len(run.Phases) != 1 || run.Phases[0].Periods == 0 {
			t.Errorf("%s: phases %+v", out, run.Phases)
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(parent, "a", "b", ".*")); len(tmp) > 0 {
		t.Errorf("temporary directories left: %v", tmp)
	}
}
