package report

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"latencytest/internal/badinput"
	"latencytest/rundata"
)

// hostileDir writes a results directory made to cost the most a reader
// allows: rundata.MaxPhases phases, each with a samples file of two
// periods at −99.9 ms and +99.9 ms, so that both sides of every histogram
// reach their full 100 ms range. It returns the directory and the bytes
// written.
func hostileDir(t testing.TB) (string, int64) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "samples"), 0o755)
	run := &rundata.Run{Schema: 1, Rate: 48000, PeriodFrames: 64, Periods: 2, PeriodUS: 1333.3, BufferUS: 2666.7}
	var size int64
	for i := range rundata.MaxPhases {
		rel := fmt.Sprintf("samples/%03d.bin", i)
		f, err := os.Create(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		w := rundata.NewSampleWriter(f, rundata.NewSampleHeader(48000, 64, 2))
		w.Write(&rundata.Sample{Index: 0, Due: 1e9, Woke: 1e9 - 99_900_000})
		w.Write(&rundata.Sample{Index: 1, Due: 1e9 + 1_333_333, Woke: 1e9 + 1_333_333 + 99_900_000})
		w.Flush()
		fi, _ := f.Stat()
		size += fi.Size()
		f.Close()
		run.Phases = append(run.Phases, rundata.Phase{Name: fmt.Sprintf("p%d", i), SamplesFile: rel})
	}
	if err := rundata.WriteRun(dir, run); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(dir, rundata.RunFile))
	return dir, size + fi.Size()
}

// The memory a results directory costs follows its content, not its
// histograms' range: a phase holds its time envelope (maxBuckets buckets),
// its page table and one 8 KB page of bins per distinct ms of latency its
// samples hold. Two periods 200 ms apart cost two pages, not 1.6 MB.
func TestHostileDirectoryMemoryBound(t *testing.T) {
	dir, size := hostileDir(t)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rd, err := load(dir)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	pageTable := int64((2*rundata.DefaultHistUS+1023)/1024) * 8
	perPhase := int64(maxBuckets*40) + pageTable + 2*8192
	bound := int64(rundata.MaxPhases)*perPhase + 8<<20
	t.Logf("%d phases from %d bytes of files hold %d MB (bound %d MB)", len(rd.phases), size, held>>20, bound>>20)
	if held > bound {
		t.Errorf("%d bytes held, bound %d", held, bound)
	}
	for _, p := range rd.phases {
		if p.hist == nil || p.Latency.Min != -99_900 || p.Latency.Max != 99_900 {
			t.Fatalf("phase %s: %+v (note %q)", p.Name, p.Latency, p.note)
		}
	}
	runtime.KeepAlive(rd)
}

// A samples file replaced by a symbolic link is not read: the phase
// keeps its run.json figures and says why its graphs are missing. One
// replaced by a FIFO is bad input naming it (a run writes no FIFO; the
// report was drawn without its graphs, exit 0, and report --text said
// nothing).
func TestSamplesFileNotRegular(t *testing.T) {
	dir, _ := hostileDir(t)
	first := filepath.Join(dir, "samples", "000.bin")
	second := filepath.Join(dir, "samples", "001.bin")
	os.Remove(second)
	if err := os.Symlink("/etc/passwd", second); err != nil {
		t.Fatal(err)
	}
	rd, err := load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p := rd.phases[1]; p.hist != nil || !strings.Contains(p.note, "symbolic link") {
		t.Errorf("phase 2: note %q, want it to name a symbolic link", p.note)
	}
	if rd.phases[0].hist == nil || rd.phases[2].hist == nil {
		t.Errorf("phases 1 and 3 lost their samples: %q, %q", rd.phases[0].note, rd.phases[2].note)
	}
	os.Remove(first)
	if err := syscall.Mkfifo(first, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := load(dir); !badinput.Is(err) || !strings.Contains(fmt.Sprint(err), first+": not a regular file (a FIFO)") {
		t.Errorf("a FIFO samples file: %v, want bad input naming it", err)
	}
}

// A samples file whose due instants jump across the whole int64 range and
// whose latencies span the histogram renders: the figures clip, nothing
// panics.
func TestHostileSamplesRender(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "samples"), 0o755)
	f, err := os.Create(filepath.Join(dir, "samples", "01.bin"))
	if err != nil {
		t.Fatal(err)
	}
	w := rundata.NewSampleWriter(f, rundata.NewSampleHeader(48000, 64, 2))
	for i, due := range []int64{1e9, -9e18, 9e18, 0, 5} {
		lat := []int64{-5e9, 5e9, 0, -1, 99_999_999}[i]
		w.Write(&rundata.Sample{Index: int64(i), Due: due, Woke: due + lat, DSP: 1e12, Xrun: 1e18, Avail: -5})
	}
	w.Flush()
	f.Close()
	run := &rundata.Run{Schema: 1, Rate: 48000, PeriodFrames: 64, Periods: 2, PeriodUS: 1333.3, BufferUS: 2666.7,
		Phases: []rundata.Phase{{Name: "x", SamplesFile: "samples/01.bin"}}}
	if err := rundata.WriteRun(dir, run); err != nil {
		t.Fatal(err)
	}
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	rd, err := load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if l := rd.phases[0].Latency; l.Min != -5e6 || l.Max != 5e6 || rd.phases[0].Periods != 5 {
		t.Errorf("recovered figures %+v", l)
	}
}

// A run.json with figures no run produces still renders, its strings
// escaped.
func TestHostileRunRenders(t *testing.T) {
	dir := t.TempDir()
	run := &rundata.Run{Schema: 1, Rate: -5, Periods: -3, PeriodUS: 1e-300, BufferUS: 1e7,
		Phases: []rundata.Phase{{Name: "<script>x</script>", Periods: 7,
			Latency: rundata.LatencyStats{Min: -1e300, Max: 1e300, P50: 1e308, Avg: -1e308},
			CPULoop: rundata.CPULoop{NominalUS: 1e308, MaxUS: -1e308}}}}
	if err := rundata.WriteRun(dir, run); err != nil {
		t.Fatal(err)
	}
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil || strings.Contains(string(b), "<script>x") || !strings.Contains(string(b), "&lt;script&gt;x") {
		t.Errorf("the phase name is not escaped (%v)", err)
	}
}

// allocated is what f allocated, in bytes.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// What compare and report cost follows what their inputs hold: compare
// of 32 MB of newlines read them once (903 MB before: the format check
// split the file into lines first); a 16 MB run.json of empty phases or
// empty checks is refused before it is decoded (475 MB and more before,
// a Go struct per three bytes of JSON). Each costs the file read once and
// a little more.
func TestHostileInputsBounded(t *testing.T) {
	tmp := t.TempDir()
	newlines := filepath.Join(tmp, "newlines.txt")
	if err := os.WriteFile(newlines, []byte(strings.Repeat("\n", 32<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	a := allocated(func() { err = CompareTo([]Input{{Path: newlines}}, filepath.Join(tmp, "c.html"), "") })
	t.Logf("compare of 32 MB of newlines: %d MB allocated: %v", a>>20, err)
	if err == nil || a > 40<<20 {
		t.Errorf("compare of 32 MB of newlines: %d MB allocated, error %v; want refused with at most 40 MB", a>>20, err)
	}
	for _, key := range []string{"phases", "checks"} {
		dir := filepath.Join(tmp, key)
		os.Mkdir(dir, 0o755)
		n := (rundata.MaxRunFileBytes - 64) / 3
		body := `{"schema": 1, "` + key + `": [` + strings.Repeat("{},", n-1) + `{}]}`
		if err := os.WriteFile(filepath.Join(dir, rundata.RunFile), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		a := allocated(func() { err = Render(dir) })
		t.Logf("report of a %d MB run.json of empty %s: %d MB allocated: %v", len(body)>>20, key, a>>20, err)
		if err == nil || a > 24<<20 {
			t.Errorf("%s: %d MB allocated, error %v; want refused with at most 24 MB", key, a>>20, err)
		}
	}
}
