package held

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"latencytest/internal/procfile"
	"latencytest/internal/procfile/proctest"
)

// TestMain is also the holder process of TestKilledHolder: it holds the
// setting its environment names, says "held" and waits to be killed.
func TestMain(m *testing.M) {
	if spec := os.Getenv("HELD_TEST_HOLD"); spec != "" {
		dir, file, _ := strings.Cut(spec, ",")
		s, err := Open(dir, []string{filepath.Dir(file) + "/"})
		if err == nil {
			_, err = s.Acquire(budget(file))
		}
		proctest.Hold(err)
	}
	os.Exit(m.Run())
}

// budget is a setting like the real-time budget's, in file.
func budget(file string) Setting {
	return Setting{
		Name: "rt-budget",
		Found: func() ([]Write, error) {
			b, err := os.ReadFile(file)
			return []Write{{Path: file, Value: strings.TrimSpace(string(b))}}, err
		},
		Set: []Write{{Path: file, Value: "-1"}},
	}
}

// fake is a store in a directory of the test's and a setting file beside
// it holding 950000.
func fake(t *testing.T) (s *Store, dir, file string) {
	t.Helper()
	tmp := t.TempDir()
	dir, file = filepath.Join(tmp, "run"), filepath.Join(tmp, "sched_rt_runtime_us")
	if err := os.WriteFile(file, []byte("950000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, []string{tmp + "/"})
	if err != nil {
		t.Fatal(err)
	}
	return s, dir, file
}

func value(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func records(t *testing.T, dir string) []string {
	t.Helper()
	ms, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	return ms
}

// Two holders overlapping, the first or the second letting go first: the
// setting stays changed while either holds it, the second finds the
// original (not the first's -1), and the last puts the original back.
func TestOverlap(t *testing.T) {
	for _, firstOut := range []bool{true, false} {
		s, dir, file := fake(t)
		a, err := s.Acquire(budget(file))
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.Acquire(budget(file))
		if err != nil {
			t.Fatal(err)
		}
		if got := value(t, file); got != "-1" {
			t.Fatalf("held twice: %s, want -1", got)
		}
		if a.Found[0].Value != "950000" || b.Found[0].Value != "950000" {
			t.Errorf("found %v and %v, want 950000 both", a.Found, b.Found)
		}
		out, last := a, b
		if !firstOut {
			out, last = b, a
		}
		if err := out.Release(); err != nil {
			t.Fatal(err)
		}
		if got := value(t, file); got != "-1" {
			t.Errorf("one holder left (first out %v): %s, want still -1", firstOut, got)
		}
		if err := last.Release(); err != nil {
			t.Fatal(err)
		}
		if got := value(t, file); got != "950000" {
			t.Errorf("both gone (first out %v): %s, want 950000 back", firstOut, got)
		}
		if r := records(t, dir); len(r) != 0 {
			t.Errorf("records left: %v", r)
		}
		if err := last.Release(); err != nil || value(t, file) != "950000" {
			t.Errorf("a second Release: %v, %s", err, value(t, file))
		}
	}
}

// A holder killed with SIGKILL leaves the setting changed and its record;
// the next Acquire puts the original back before it holds (it does not
// take the -1 for the original), and so does check --restore's Recover.
func TestKilledHolder(t *testing.T) {
	for _, next := range []string{"acquire", "recover"} {
		s, dir, file := fake(t)
		proctest.KillHolder(t, "HELD_TEST_HOLD="+dir+","+file)
		if got := value(t, file); got != "-1" || len(records(t, dir)) != 1 {
			t.Fatalf("after the SIGKILL: %s and records %v, want -1 and one record", got, records(t, dir))
		}
		switch next {
		case "acquire":
			h, err := s.Acquire(budget(file))
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Recovered) != 1 || h.Recovered[0].Value != "950000" || h.Found[0].Value != "950000" {
				t.Errorf("recovered %v, found %v; want 950000 both", h.Recovered, h.Found)
			}
			if got := value(t, file); got != "-1" {
				t.Errorf("held: %s", got)
			}
			h.Release()
		case "recover":
			rs, err := s.Recover()
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 || rs[0].Name != "rt-budget" || len(rs[0].Put) != 1 || rs[0].Put[0].Value != "950000" {
				t.Errorf("Recover() = %+v", rs)
			}
		}
		if got := value(t, file); got != "950000" || len(records(t, dir)) != 0 {
			t.Errorf("after the %s: %s and records %v, want 950000 and none", next, got, records(t, dir))
		}
	}
}

// A record whose holder's pid is dead, or now another process's (the
// same pid, another start time), is recovered; one whose holder lives,
// or lives in another PID namespace, is left as it is.
func TestRecoverRecords(t *testing.T) {
	self, err := procfile.Self()
	if err != nil {
		t.Fatal(err)
	}
	dead := proctest.Gone(t)
	reused := self
	reused.Start--
	foreign := self
	foreign.NS++
	for _, c := range []struct {
		name    string
		holder  procfile.Proc
		restore bool
	}{{"dead pid", dead, true}, {"reused pid", reused, true}, {"live", self, false}, {"other namespace", foreign, false}} {
		s, dir, file := fake(t)
		os.WriteFile(file, []byte("-1"), 0o644)
		r := record{Found: []Write{{file, "950000"}}, Set: []Write{{file, "-1"}}, Holders: []holder{{Proc: c.holder, Boot: s.boot, ID: "x"}}}
		b, _ := json.Marshal(r)
		os.WriteFile(filepath.Join(dir, "rt-budget.json"), b, 0o600)
		rs, err := s.Recover()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want, by := "-1", c.holder.PID
		if c.restore {
			want, by = "950000", 0
		}
		if got := value(t, file); got != want || len(rs) != 1 || rs[0].By != by {
			t.Errorf("%s: %s, %+v; want %s", c.name, got, rs, want)
		}
		if left := len(records(t, dir)) == 1; left == c.restore {
			t.Errorf("%s: record left %v", c.name, left)
		}
	}
	// A holder of an earlier boot is gone, whatever its pid.
	s, dir, file := fake(t)
	r := record{Found: []Write{{file, "950000"}}, Holders: []holder{{Proc: self, Boot: "another boot", ID: "x"}}}
	b, _ := json.Marshal(r)
	os.WriteFile(filepath.Join(dir, "rt-budget.json"), b, 0o600)
	if _, err := s.Recover(); err != nil || value(t, file) != "950000" {
		t.Errorf("earlier boot's record: %v, %s", err, value(t, file))
	}
}

// An exclusive setting has one holder; a shared one refuses a holder that
// would set it otherwise. Neither refusal changes the setting or the
// record.
func TestExclusive(t *testing.T) {
	s, _, file := fake(t)
	ex := budget(file)
	ex.Exclusive = true
	h, err := s.Acquire(ex)
	if err != nil {
		t.Fatal(err)
	}
	var he *HeldError
	if _, err := s.Acquire(ex); !errors.As(err, &he) || he.By != os.Getpid() {
		t.Errorf("second exclusive hold: %v", err)
	}
	h.Release()
	a, err := s.Acquire(budget(file))
	if err != nil {
		t.Fatal(err)
	}
	other := budget(file)
	other.Set[0].Value = "500000"
	if _, err := s.Acquire(other); !errors.As(err, &he) {
		t.Errorf("hold setting it otherwise: %v", err)
	}
	if got := value(t, file); got != "-1" {
		t.Errorf("after the refusals: %s", got)
	}
	a.Release()
	if got := value(t, file); got != "950000" {
		t.Errorf("after all: %s", got)
	}
}

// The store's directory must be its user's own, mode 0700, not a
// symlink; a record never writes outside the allowed prefixes, and a
// setting file is never followed through a symlink.
func TestRefused(t *testing.T) {
	tmp := t.TempDir()
	real := filepath.Join(tmp, "real")
	os.Mkdir(real, 0o700)
	link := filepath.Join(tmp, "link")
	os.Symlink(real, link)
	if _, err := Open(link, nil); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("symlinked directory: %v", err)
	}
	open := filepath.Join(tmp, "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o755)
	if _, err := Open(open, nil); err == nil || !strings.Contains(err.Error(), "0700") {
		t.Errorf("mode 0755: %v", err)
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(tmp, "other")
		os.Mkdir(other, 0o700)
		os.Chown(other, 65534, 65534)
		if _, err := Open(other, nil); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("another user's directory: %v", err)
		}
	}

	s, dir, file := fake(t)
	outside := filepath.Join(t.TempDir(), "outside")
	os.WriteFile(outside, []byte("1"), 0o644)
	st := budget(outside)
	if _, err := s.Acquire(st); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a setting outside the allowed: %v", err)
	}
	r := record{Found: []Write{{outside, "planted"}}}
	b, _ := json.Marshal(r)
	os.WriteFile(filepath.Join(dir, "rt-budget.json"), b, 0o600)
	if _, err := s.Recover(); err == nil || value(t, outside) != "1" {
		t.Errorf("a record writing outside: %v, %s", err, value(t, outside))
	}
	os.Remove(filepath.Join(dir, "rt-budget.json"))
	sym := file + "-link"
	os.Symlink(file, sym)
	st = budget(file)
	st.Set[0].Path = sym
	if _, err := s.Acquire(st); err == nil || value(t, file) != "950000" {
		t.Errorf("a setting through a symlink: %v, %s", err, value(t, file))
	}
	if r := records(t, dir); len(r) != 0 {
		t.Errorf("a refused hold left %v", r)
	}
}
