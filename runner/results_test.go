package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"latencytest/internal/badinput"
	"latencytest/rundata"
)

func testRun() *rundata.Run {
	return &rundata.Run{Schema: rundata.SchemaVersion, Rate: 48000, PeriodFrames: 48, Periods: 2}
}

// A new results directory appears whole: run.json and samples/ in it,
// nothing beside it; discard removes it again.
func TestOpenResultsNew(t *testing.T) {
	parent := t.TempDir()
	path := filepath.Join(parent, "out")
	r, err := openResults(path+"/", testRun(), false)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rundata.ReadRun(path); err != nil || got.Schema != rundata.SchemaVersion {
		t.Errorf("run.json: %+v, %v", got, err)
	}
	if fi, err := os.Lstat(filepath.Join(path, "samples")); err != nil || !fi.IsDir() {
		t.Errorf("samples: %v, %v", fi, err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 1 {
		t.Errorf("beside the results directory: %v", ents)
	}
	r.discard()
	r.close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("discarded directory still there: %v", err)
	}
}

// A directory of other files is refused as bad input and left as it
// was, with --force too; an earlier run's is refused without --force.
// With it, the new directory takes the name whole (the earlier run's
// files are gone, nothing is left beside it once closed), and discard
// puts the earlier one back as it was.
func TestOpenResultsEarlierRun(t *testing.T) {
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644)
	for _, force := range []bool{false, true} {
		if _, err := openResults(foreign, testRun(), force); !badinput.Is(err) || !strings.Contains(err.Error(), "--out "+foreign) {
			t.Errorf("foreign directory, force %v: %v, want bad input naming --out", force, err)
		}
	}
	if ents, _ := os.ReadDir(foreign); len(ents) != 1 {
		t.Errorf("foreign directory now holds %v", ents)
	}

	parent := t.TempDir()
	earlier := filepath.Join(parent, "out")
	os.Mkdir(earlier, 0o755)
	old := testRun()
	old.Command = []string{"latencytest", "run", "earlier"}
	if err := rundata.WriteRun(earlier, old); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(earlier, "index.html"), []byte("old report"), 0o644)
	if _, err := openResults(earlier, testRun(), false); !badinput.Is(err) || !strings.Contains(err.Error(), "--force") {
		t.Errorf("earlier run without --force: %v, want bad input saying --force", err)
	}

	r, err := openResults(earlier, testRun(), true)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := rundata.ReadRun(earlier); len(got.Command) != 0 {
		t.Errorf("run.json not replaced: %v", got.Command)
	}
	if _, err := os.Stat(filepath.Join(earlier, "index.html")); !os.IsNotExist(err) {
		t.Errorf("the earlier run's report is in the new directory: %v", err)
	}
	r.discard()
	r.close()
	if got, err := rundata.ReadRun(earlier); err != nil || len(got.Command) != 3 || got.Command[2] != "earlier" {
		t.Errorf("after discard: %+v, %v; want the earlier run.json", got, err)
	}
	if b, _ := os.ReadFile(filepath.Join(earlier, "index.html")); string(b) != "old report" {
		t.Errorf("after discard the earlier report reads %q", b)
	}

	r, err = openResults(earlier, testRun(), true)
	if err != nil {
		t.Fatal(err)
	}
	r.close()
	if ents, _ := os.ReadDir(parent); len(ents) != 1 {
		t.Errorf("beside the replaced directory: %v", ents)
	}
	if got, _ := rundata.ReadRun(earlier); len(got.Command) != 0 {
		t.Errorf("kept run.json %v, want the new one", got.Command)
	}
}

// While a run holds its results directory (new, empty when taken, or
// replaced with --force), a second one with the same path is refused as
// bad input saying so, with or without --force, and the first's files are
// untouched; once the first has closed it, the path is free again.
func TestOpenResultsLocked(t *testing.T) {
	parent := t.TempDir()
	empty := filepath.Join(parent, "empty")
	os.Mkdir(empty, 0o755)
	earlier := filepath.Join(parent, "earlier")
	os.Mkdir(earlier, 0o755)
	if err := rundata.WriteRun(earlier, testRun()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path  string
		force bool
	}{{filepath.Join(parent, "new"), false}, {empty, false}, {earlier, true}} {
		first, err := openResults(c.path, testRun(), c.force)
		if err != nil {
			t.Fatal(err)
		}
		for _, force := range []bool{false, true} {
			_, err := openResults(c.path, testRun(), force)
			if !badinput.Is(err) || !strings.Contains(err.Error(), "in use by another latencytest run") {
				t.Errorf("%s, second with force %v: %v; want bad input, in use", c.path, force, err)
			}
		}
		if fi, err := os.Stat(filepath.Join(c.path, "samples")); err != nil || !fi.IsDir() {
			t.Errorf("%s: the first run's samples: %v", c.path, err)
		}
		first.close()
		again, err := openResults(c.path, testRun(), true)
		if err != nil {
			t.Errorf("%s after the first closed: %v", c.path, err)
			continue
		}
		again.close()
	}
}

// A symlink at --out is refused with one line saying so, its target
// untouched, with --force too.
func TestOpenResultsSymlink(t *testing.T) {
	target := t.TempDir()
	link := filepath.Join(t.TempDir(), "out")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, force := range []bool{false, true} {
		_, err := openResults(link, testRun(), force)
		if !badinput.Is(err) || !strings.Contains(err.Error(), "--out "+link+": a symbolic link") || strings.Contains(err.Error(), "\n") {
			t.Errorf("force %v: %v; want one line of bad input naming the symlink", force, err)
		}
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("written through the symlink: %v", ents)
	}
}

// A phase listed before its engine starts, killed after some periods:
// run.json names it, incomplete, with its samples file, and the samples
// flushed so far give its figures back through the accumulator, as the
// report recovers them.
func TestPhaseKilledIsRecoverable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	run := testRun()
	r, err := openResults(path, run, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	ph := rundata.Phase{Name: "idle"}
	f, err := r.phaseStarting(run, &ph, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	shape := rundata.NewSampleHeader(48000, 48, 2)
	acc := newAccumulator(rundata.NewSampleWriter(f, shape), shape, 0, nil)
	stop, err := r.phaseOpened(run, &ph, 1e9, 0, acc, f)
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(100) {
		due := 1e9 + (i+1)*1e6
		acc.sample(&rundata.Sample{Index: i, Due: due, Woke: due + 20_000 + i*100, Avail: 48})
	}
	acc.flush()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// Killed here: neither finish nor the final run.json.
	got, err := rundata.ReadRun(path)
	if err != nil || len(got.Phases) != 1 {
		t.Fatalf("run.json: %+v, %v", got, err)
	}
	listed := got.Phases[0]
	if !listed.Incomplete || listed.SamplesFile != "samples/01-idle.bin" || listed.StartMonoNS != 1e9 {
		t.Errorf("phase in run.json: %+v", listed)
	}
	ss, err := rundata.ReadSamples(filepath.Join(path, listed.SamplesFile))
	if err != nil || len(ss) != 100 {
		t.Fatalf("samples file: %d periods, %v", len(ss), err)
	}
	rec := rundata.NewAccumulator(shape, 0)
	for i := range ss {
		rec.Add(&ss[i])
	}
	rec.Fill(&listed)
	var live rundata.Phase
	live.StartMonoNS = 1e9
	acc.fill(&live)
	if listed.Periods != 100 || listed.Latency != live.Latency || listed.EndMonoNS != live.EndMonoNS {
		t.Errorf("recovered %d periods %+v end %d; live %+v end %d", listed.Periods, listed.Latency, listed.EndMonoNS, live.Latency, live.EndMonoNS)
	}
}
