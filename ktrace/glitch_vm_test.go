//go:build vm

package ktrace

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"latencytest/internal/bintest"
	"latencytest/rundata"
)

// A heard glitch traced to its cause, end to end on a real kernel: `run
// --loopback --trace` through snd-aloop while the known culprit, above
// the audio thread on its CPU, holds it for longer than the buffer. Each
// burst is an xrun, and most break the sine; run.json lines each glitch up with
// the spike window it fell in and names the culprit there, spikes.json
// marks that spike heard with the culprit, and the report lists the
// glitch with it. A glitch outside the bursts (the VM's own freezes under
// TCG) is logged, not judged. The long tier's: it boots the tracer and
// snd-aloop together, a minute of TCG.
//
//vmtest:long
func TestVMTraceHeardCulprit(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	run := exec.Command(vmBinary, "run", "--driver", "alsa", "--stream", "duplex", "--device", "hw:Loopback,0",
		"--capture-device", "hw:Loopback,1", "--loopback", "--period", "256", "--periods", "4", "--rate", "48000",
		"--channels", "2", "--tests", "idle", "--duration", "8s", "--affinity", "0", "--cpu-load", "0",
		"--trace", "--trace-above", "3ms", "--out", out, "--no-report", "--quiet")
	// The capture's first second is the round trip's silence and the
	// sound settling: the bursts come after it.
	said, _ := runBesideCulprit(t, run, out, "glitch", time.Second)
	bursts := culpritBursts(t, said)
	r, err := rundata.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	snd := r.Phases[0].Sound
	if snd == nil || !snd.Judged {
		t.Fatalf("run.json: sound %+v, want it judged", snd)
	}
	bufNS := int64(4*256) * 1e9 / 48000
	samples := bintest.ReadSamples(t, out, r.Phases[0])
	named, heardBursts := 0, 0
	for _, b := range bursts {
		xruns := 0
		for _, s := range samples {
			if s.Woke < b.Start-bufNS || s.Woke > b.End+2*bufNS {
				continue
			}
			if s.Xrun > 0 || s.Flags != 0 || s.Woke-s.Due > bufNS/4 {
				t.Logf("burst at %d ns: period %d due %+.2f ms, woke %+.2f ms from the burst's start, xrun %.2f ms, flags %#x, avail %d",
					b.Start, s.Index, float64(s.Due-b.Start)/1e6, float64(s.Woke-b.Start)/1e6, float64(s.Xrun)/1e6, s.Flags, s.Avail)
			}
			if s.Xrun > 0 && s.Woke >= b.Start {
				xruns++
			}
		}
		if xruns == 0 {
			t.Errorf("burst at %d ns held the audio thread's CPU %.1f ms, longer than the %.1f ms buffer, and no xrun came of it", b.Start, float64(b.End-b.Start)/1e6, float64(bufNS)/1e6)
		}
		var in []rundata.Glitch
		for _, g := range snd.Glitches {
			// The seam is where the capture resumed after the xrun:
			// within the burst, or a buffer after its end at most.
			if g.AtNS >= b.Start && g.AtNS <= b.End+2*bufNS {
				in = append(in, g)
			}
		}
		t.Logf("burst %v: glitches %+v", b, in)
		if len(in) == 0 {
			// Not every xrun breaks the sine: the restart plays the
			// loop on from where it stopped (run.json's
			// xruns_not_heard). What is judged is each glitch heard.
			t.Logf("burst at %d ns (%.1f ms): no glitch heard in it or the buffer after", b.Start, float64(b.End-b.Start)/1e6)
			continue
		}
		heardBursts++
		for _, g := range in {
			if g.Trace == nil || g.Trace.Culprit == nil || g.Trace.Culprit.Name != culpritName {
				t.Errorf("glitch at %.2f ms in a burst: trace %+v, want %s named", g.AtMS, g.Trace, culpritName)
				continue
			}
			named++
		}
	}
	for _, g := range snd.Glitches {
		t.Logf("glitch at %.2f ms (%d ns) for %.2f ms with %q: trace %+v", g.AtMS, g.AtNS, g.LengthMS, g.With, traceText(g.Trace))
	}
	ss, err := rundata.ReadSpikes(out)
	if err != nil {
		t.Fatal(err)
	}
	heard := 0
	for _, sp := range ss {
		if sp.Heard != nil && sp.Heard.Culprit.Name == culpritName {
			heard++
		}
		// What the tracer saw in each burst says whether the culprit
		// held the audio thread there at all.
		for _, b := range bursts {
			if end := sp.DueNS + sp.LatencyNS; end >= b.Start && sp.DueNS <= b.End+bufNS {
				t.Logf("burst at %d ns: spike of period %d, due %+.2f ms, %.2f ms late: %s", b.Start, sp.Period, float64(sp.DueNS-b.Start)/1e6, float64(sp.LatencyNS)/1e6, causesNS(sp.Causes))
			}
		}
	}
	t.Logf("xruns heard %d, not heard %d, glitches alone %d", snd.XrunsHeard, snd.XrunsNotHeard, snd.GlitchesAlone)
	if heardBursts < len(bursts)/2 || heard == 0 {
		t.Fatalf("%d of %d bursts heard (%d glitches named %s in run.json), %d spikes heard with it in spikes.json: want half the bursts heard, and the spikes marked", heardBursts, len(bursts), named, culpritName, heard)
	}
	report := exec.Command(vmBinary, "report", out)
	if msg, err := report.CombinedOutput(); err != nil {
		t.Fatalf("report: %v\n%s", err, msg)
	}
	page, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "in the trace: "+culpritName+" (SCHED_FIFO 90)") {
		t.Errorf("the report does not list a glitch with %s (SCHED_FIFO 90)", culpritName)
	}
	t.Logf("%d bursts, %d glitches named %s, %d spikes heard with it", len(bursts), named, culpritName, heard)
}

func traceText(tr *rundata.GlitchTrace) string {
	switch {
	case tr == nil:
		return "none"
	case tr.Culprit != nil:
		return tr.Culprit.String()
	}
	return tr.None
}
