package rundata

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A samples file cut at any byte — a run killed mid-write — reads without
// error as the whole periods before the cut, control records included.
func TestSamplesCutAnywhereReadAsPrefix(t *testing.T) {
	var buf bytes.Buffer
	w := NewSampleWriter(&buf, NewSampleHeader(48000, 64, 2))
	var want []Sample
	for i := range int64(12) {
		s := Sample{Index: i, Due: 1e9 + i*1333333, Woke: 1e9 + i*1333333 + 1000 + i}
		if i == 4 {
			s.Xrun, s.Flags = 2e6, FlagSimulated
		}
		if i >= 7 { // three lost before the eighth, whose due instant is off the grid
			s.Index += 3
			s.Due += 5e6
			s.Woke += 5e6
		}
		w.Write(&s)
		want = append(want, s)
	}
	w.Flush()
	full := buf.Bytes()
	for cut := 0; cut <= len(full); cut++ {
		r, err := NewSampleReader(bytes.NewReader(full[:cut]))
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		var got []Sample
		for {
			var s Sample
			if err := r.Next(&s); err != nil {
				break
			}
			got = append(got, s)
		}
		if len(got) > len(want) || !slices.Equal(got, want[:len(got)]) {
			t.Fatalf("cut at %d: read %+v, not a prefix of what was written", cut, got)
		}
		if cut == len(full) && len(got) != len(want) {
			t.Fatalf("whole file: %d periods, want %d", len(got), len(want))
		}
	}
}

// The figures of an incomplete phase, recovered from its samples, are the
// ones its run would have written.
func TestAccumulatorRecovery(t *testing.T) {
	h := NewSampleHeader(48000, 48, 2) // 1 ms periods, 96 frames of buffer
	rec := NewAccumulator(h, 800_000)
	lat := []int64{10_000, 50_000, 150_000, 2_000_000}
	dsp := []int64{800_000, 850_000, 950_000, 799_000}
	for i := range lat {
		s := Sample{Index: int64(i), Due: int64(i+1) * 1e6, DSP: dsp[i], Avail: 48}
		s.Woke = s.Due + lat[i]
		if i == 3 {
			s.Xrun = 1_000_000
		}
		rec.Add(&s)
	}
	var ph Phase
	rec.Fill(&ph)
	if ph.Periods != 4 || ph.Xruns != 1 || ph.XrunMSTotal != 1 {
		t.Errorf("periods %d xruns %d (%g ms)", ph.Periods, ph.Xruns, ph.XrunMSTotal)
	}
	if ph.Latency.Min != 10 || ph.Latency.Max != 2000 || ph.WithinUS100 != 50 || ph.WithinMS1 != 75 {
		t.Errorf("latency %+v, within %g %% / %g %%", ph.Latency, ph.WithinUS100, ph.WithinMS1)
	}
	if ph.CPULoop.Within100USPct != 75 || ph.CPULoop.MaxUS != 950 {
		t.Errorf("cpu loop %+v", ph.CPULoop)
	}
	if ph.HeadroomMinUS != 1000 || ph.StartMonoNS != 1e6 || ph.EndMonoNS != 4e6 {
		t.Errorf("headroom %g µs, start %d, end %d", ph.HeadroomMinUS, ph.StartMonoNS, ph.EndMonoNS)
	}
}

// A phase recovered from its samples file counts what the file records
// beside the periods: the periods lost before one, and the pointer jumps
// (which a recovery once dropped, reporting none).
func TestRecoveryFromFileCountsLostAndPointerJumps(t *testing.T) {
	var buf bytes.Buffer
	w := NewSampleWriter(&buf, NewSampleHeader(48000, 48, 2))
	for i := range int64(6) {
		s := Sample{Index: i, Due: (i + 1) * 1e6, Woke: (i+1)*1e6 + 20_000, Avail: 48}
		if i >= 3 { // two periods lost before the fourth, which found the pointer a buffer behind
			s.Index += 2
			s.Due += 2e6
			s.Woke += 2e6
		}
		if i == 3 {
			s.Flags = FlagPointerJump
		}
		w.Write(&s)
	}
	w.Flush()
	sr, err := NewSampleReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	rec := NewAccumulator(sr.Header, 0)
	var s Sample
	for sr.Next(&s) == nil {
		rec.Add(&s)
	}
	var ph Phase
	rec.Fill(&ph)
	ph.Lost = sr.Lost
	if ph.Periods != 6 || ph.Lost != 2 || ph.PointerJumps != 1 || ph.Xruns != 0 {
		t.Errorf("periods %d lost %d pointer jumps %d xruns %d; want 6, 2, 1, 0", ph.Periods, ph.Lost, ph.PointerJumps, ph.Xruns)
	}
}

// Writing over a symlink planted at the name replaces the link; its
// target is untouched, and no temporary file is left.
func TestWriteFileAtomicInReplacesSymlink(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	victim := filepath.Join(other, "victim")
	os.WriteFile(victim, []byte("precious"), 0o600)
	os.Symlink(victim, filepath.Join(dir, RunFile))
	if err := WriteRun(dir, &Run{Schema: SchemaVersion}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("victim now %q", b)
	}
	fi, err := os.Lstat(filepath.Join(dir, RunFile))
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		t.Errorf("run.json: %v %v", fi, err)
	}
	if r, err := ReadRun(dir); err != nil || r.Schema != SchemaVersion {
		t.Errorf("read back: %+v %v", r, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left in the directory: %v", ents)
	}
}

// A file begun at the stream's opening says when its phase began before
// any period is in it, and reads the periods back exactly after.
func TestBeginBeforeTheFirstPeriod(t *testing.T) {
	var buf bytes.Buffer
	w := NewSampleWriter(&buf, NewSampleHeader(48000, 64, 2))
	if err := w.Begin(5e8); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	r, err := NewSampleReader(bytes.NewReader(buf.Bytes()))
	if err != nil || r.Header.FirstDue != 5e8 {
		t.Fatalf("header %+v, %v; want first due 5e8", r, err)
	}
	var s Sample
	if err := r.Next(&s); err == nil {
		t.Fatalf("a period in a file begun without one: %+v", s)
	}
	want := []Sample{{Index: 0, Due: 5e8 + 2e6, Woke: 5e8 + 2e6 + 7000}, {Index: 1, Due: 5e8 + 2e6 + 1333333, Woke: 5e8 + 3e6 + 1333333}}
	for i := range want {
		w.Write(&want[i])
	}
	w.Flush()
	if err := w.Begin(1); err == nil {
		t.Error("Begin after periods succeeded")
	}
	r, _ = NewSampleReader(bytes.NewReader(buf.Bytes()))
	for i := range want {
		if err := r.Next(&s); err != nil || s != want[i] {
			t.Errorf("period %d: %+v %v, want %+v", i, s, err, want[i])
		}
	}
}
