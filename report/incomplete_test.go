package report

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"latencytest/report/synth"
	"latencytest/rundata"
)

// The phase a killed run was in (incomplete in run.json, zero figures) is
// rendered with the figures of its samples file, cut mid-record, and the
// page says the run never finished and which phase was recovered.
func TestRenderIncompletePhase(t *testing.T) {
	c := synth.Default()
	c.PhaseLength = time.Second
	dir, r := writeRun(t, c)
	done := r.Phases[1]
	p := filepath.Join(dir, done.SamplesFile)
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, b[:len(b)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	r.Incomplete, r.End = true, time.Time{}
	r.Phases[1] = rundata.Phase{Name: done.Name, Stressor: done.Stressor, Incomplete: true, SamplesFile: done.SamplesFile,
		StartWall: done.StartWall, CPULoop: rundata.CPULoop{NominalUS: done.CPULoop.NominalUS}}
	if err := rundata.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	out, _ := renderDoc(t, dir)
	if !strings.Contains(out, "never finished") {
		t.Error("no banner says the run never finished")
	}
	// The cut removed the last record (8 bytes, 3 of them cut).
	want := done.Periods - 1
	if !strings.Contains(out, "Phase &#34;"+done.Name+"&#34; is incomplete") || !strings.Contains(out, "("+itoa(want)+" periods)") {
		t.Errorf("no banner says phase %s was recovered with %d periods", done.Name, want)
	}
	csv, _ := os.ReadFile(filepath.Join(dir, StatsFile))
	line := strings.Split(string(csv), "\n")[2]
	if f := strings.Split(line, ","); f[0] != done.Name || f[3] != itoa(want) {
		t.Errorf("stats.csv row %q; want %s with %d periods", line, done.Name, want)
	}
	rd, err := load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := rd.phases[1].Phase
	if got.Latency.Max == 0 || got.Latency.Max > done.Latency.Max || got.Xruns > done.Xruns || got.EndMonoNS == 0 {
		t.Errorf("recovered %+v; the whole phase had %+v", got, done)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
