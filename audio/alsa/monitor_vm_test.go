//go:build vm

package alsa

import (
	"fmt"
	"math"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestVMMonitorLoopback: monitor --loopback through snd-aloop at 4 × 256
// frames (issue 45), its metrics scraped every second while it hears the
// capture as it comes (docs/monitor.md, "Listening to a loopback"), with
// the three breaks of TestVMLoopbackGlitchesAlone injected after periods
// 1125, 1500 and 1875 (6, 8 and 10 s into the stream):
//
//   - latencytest_round_trip_seconds is there in every scrape, and once
//     read (not 0) it is run --loopback's round trip on the same boot at
//     the same size (loopbackRoundTripAt), within a period and 1 ms: the
//     gauge and run.json's round_trip_ms are both the buffer and the
//     card's delay, to within a period;
//   - latencytest_glitches_total{kind="alone"} is 0 in every scrape whose
//     periods (latencytest_periods_total with
//     latencytest_lost_periods_total: the index the samples reached) have
//     not passed the first break (the stream so far, nothing injected:
//     none invented, its start included), never more than the three, and
//     exactly three once the stream is 3 s past the last (the hearing
//     counts a break up to 1.2 s after it was played);
//   - SIGINT stops it with the exit status of an interrupted monitor,
//     130 (docs/reliability.md), within 20 s, and no latencytest process
//     is left.
//
// A VM xrun restarts the stream, and the round trip is followed across
// the restart from the last one read before it (runner's follower): a
// monitor in which an xrun came before any round trip was read (the
// gauge still 0 at the scrape that first counted an xrun) judges the
// round trip in no scrape and is run again, three monitors at most. An
// xrun does not change what the breaks are counted as unless it falls
// within 1 ms of one (the seam tolerance of rundata's LineUp).
//
// In the gate: the counts are exact by construction and the round trip's
// tolerance is a period, where snd-aloop's delay is 0 at every repetition
// read (TestVMLoopbackRoundTrip). About 30 s of VM time: the 5 s run (12
// s in the VM, with its start and its analysis), the monitor's 13 s of
// stream and its start and stop.
func TestVMMonitorLoopback(t *testing.T) {
	sh := buffer{256, 4}
	ref := loopbackRoundTripAt(t, sh)
	gs := injectedGlitches(1125, 375)
	for try := 1; ; try++ {
		if monitorLoopbackOnce(t, sh, ref.RoundTripMS, gs) || t.Failed() {
			return
		}
		if try == 3 {
			t.Fatal("an xrun before the first round trip was read in each of three monitors: the round trip was never judged")
		}
		t.Logf("monitor %d: an xrun before the first round trip was read: run again", try)
	}
}

// monitorScrape is what one scrape of a monitor's metrics says.
type monitorScrape struct {
	at                time.Duration // since the metrics' address was said
	periods, xruns    float64
	lost              float64 // periods the engine's ring dropped: gaps in the indexes
	roundTrip         float64 // seconds; 0 until one is read
	hasRoundTrip      bool    // the series is on the page
	alone, withXrun   float64 // latencytest_glitches_total by kind
	withPointerJump   float64
	hasAlone, hasXrun bool
}

// index is the stream's periods so far, as far as the samples say: the
// index of the next period to arrive (those handed over and those lost).
func (s monitorScrape) index() float64 { return s.periods + s.lost }

func (s monitorScrape) String() string {
	return fmt.Sprintf("+%.1f s: %.0f periods (%.0f lost), %.0f xruns, round trip %.3f ms, glitches alone %.0f, at xruns %.0f, at pointer jumps %.0f",
		s.at.Seconds(), s.periods, s.lost, s.xruns, s.roundTrip*1e3, s.alone, s.withXrun, s.withPointerJump)
}

// scrapeMonitor reads url's metrics with Prometheus's own text parser.
func scrapeMonitor(c *http.Client, url string) (monitorScrape, error) {
	var s monitorScrape
	resp, err := c.Get(url)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("%s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return s, fmt.Errorf("%s: %v", url, err)
	}
	one := func(name string) (float64, bool) {
		mf := mfs[name]
		if mf == nil || len(mf.Metric) != 1 {
			return 0, false
		}
		if m := mf.Metric[0]; m.Counter != nil {
			return m.Counter.GetValue(), true
		} else if m.Gauge != nil {
			return m.Gauge.GetValue(), true
		}
		return 0, false
	}
	s.periods, _ = one("latencytest_periods_total")
	s.xruns, _ = one("latencytest_xruns_total")
	s.lost, _ = one("latencytest_lost_periods_total")
	s.roundTrip, s.hasRoundTrip = one("latencytest_round_trip_seconds")
	if mf := mfs["latencytest_glitches_total"]; mf != nil {
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() != "kind" {
					continue
				}
				v := m.GetCounter().GetValue()
				switch l.GetValue() {
				case "alone":
					s.alone, s.hasAlone = v, true
				case "xrun":
					s.withXrun, s.hasXrun = v, true
				case "pointer_jump":
					s.withPointerJump = v
				}
			}
		}
	}
	return s, nil
}

// monitorLoopbackOnce is one monitor of TestVMMonitorLoopback, at sh,
// against run's round trip refMS, with gs injected; false when the round
// trip could not be judged (an xrun before it was first read), the rest
// checked all the same.
func monitorLoopbackOnce(t *testing.T, sh buffer, refMS float64, gs []glitchAt) (judged bool) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "monitor")
	args := append([]string{"monitor", "--driver", "alsa", "--out", out, "--listen", "127.0.0.1:0",
		"--test-glitch", testGlitchFlag(gs)}, loopbackArgs...)
	cmd := exec.Command(vmBinary, args...)
	var so stampWriter // its output, locked: read while it is written
	cmd.Stdout, cmd.Stderr = &so, &so
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	exited := false
	defer func() {
		if !exited {
			cmd.Process.Kill()
			<-done
		}
		t.Logf("latencytest %v\n%s", args, so.String())
	}()

	// The address is said at the first period (--listen's port 0: a free one).
	said := regexp.MustCompile(`metrics: (http://\S+/metrics)`)
	var url string
	for deadline := time.Now().Add(30 * time.Second); url == ""; time.Sleep(50 * time.Millisecond) {
		if m := said.FindStringSubmatch(so.String()); m != nil {
			url = m[1]
			break
		}
		select {
		case err := <-done:
			exited = true
			t.Fatalf("the monitor ended before its first period: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no metrics address said within 30 s")
		}
	}

	perSecond := int64(48000 / sh.period) // periods a second, rounded down
	first, last := gs[0].at, gs[len(gs)-1].at
	settled := last + 3*perSecond // every break heard by then (up to 1.2 s behind the stream)
	periodMS := float64(sh.period) * 1e3 / 48000
	want := float64(len(gs))
	c := &http.Client{Timeout: 5 * time.Second}
	began := time.Now()
	var sc monitorScrape
	before := 0 // scrapes before the first break, 3 s into the stream or later
	for {
		s, err := scrapeMonitor(c, url)
		s.at = time.Since(began)
		if err != nil {
			// Under TCG a scrape can time out; the next one says.
			t.Logf("scrape at +%.1f s: %v", s.at.Seconds(), err)
		} else {
			sc = s
			t.Logf("scrape %v", sc)
			switch {
			case !sc.hasRoundTrip:
				t.Errorf("scrape %v: no latencytest_round_trip_seconds on the page", sc)
			case !sc.hasAlone || !sc.hasXrun:
				t.Errorf("scrape %v: no latencytest_glitches_total{kind=\"alone\"} or {kind=\"xrun\"} on the page", sc)
			}
			if sc.index() <= float64(first) {
				if sc.index() >= float64(3*perSecond) {
					before++ // a second of the sine judged at least
				}
				if sc.alone != 0 {
					t.Errorf("scrape %v: glitches alone before the first break was injected (period %d): none may be invented", sc, first)
				}
			}
			if sc.alone > want {
				t.Errorf("scrape %v: more glitches alone than the %.0f injected", sc, want)
			}
			// A round trip read before any xrun was counted is the
			// reference the follower keeps across the restarts after it.
			if sc.roundTrip > 0 && sc.xruns == 0 {
				judged = true
			}
			if got := sc.roundTrip * 1e3; judged {
				if math.Abs(got-refMS) > periodMS+1 {
					t.Errorf("scrape %v: round trip %.3f ms, run --loopback's %.3f ms: more than a period (%.2f ms) and 1 ms apart", sc, got, refMS, periodMS)
				}
			} else if got > 0 {
				t.Logf("round trip %.3f ms not judged: an xrun came before one was read (run --loopback's %.3f ms)", got, refMS)
			}
			if sc.index() >= float64(settled) && sc.alone >= want {
				break
			}
		}
		if time.Since(began) > 60*time.Second {
			t.Errorf("after 60 s: %v; want the stream past period %d (3 s after the last break) and %.0f glitches alone", sc, settled, want)
			break
		}
		select {
		case err := <-done:
			exited = true
			t.Fatalf("the monitor ended by itself: %v", err)
		case <-time.After(time.Second):
		}
	}
	if before == 0 {
		t.Errorf("no scrape between period %d and the first break (period %d): none said that nothing is invented", 3*perSecond, first)
	}
	if sc.alone != want {
		t.Errorf("last scrape %v: glitches alone %.0f, want the %.0f injected (%s)", sc, sc.alone, want, testGlitchFlag(gs))
	}
	if sc.roundTrip <= 0 {
		t.Errorf("last scrape %v: no round trip read", sc)
	}

	// Stopped as a user's Ctrl-C stops it.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
		exited = true
	case <-time.After(20 * time.Second):
		t.Fatal("the monitor did not end within 20 s of SIGINT")
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != 130 {
		t.Errorf("monitor: exit %d after SIGINT, want 130 (interrupted, no error)", code)
	}
	if left := latencytestProcesses(""); len(left) > 0 {
		t.Errorf("latencytest processes left after the monitor ended: %v", left)
	}
	return judged
}
