package report

import (
	"fmt"
	"strings"

	"latencytest/rundata"
)

// heardLine is what a loopback phase heard (run --loopback), in one line
// under its table: its breaks in the sine (with --trace, what the trace
// had at each: Glitch.CauseText) and its round trip, with the
// part of the card delay the drivers report (reported, if read); "" without
// one.
func heardLine(s *rundata.Sound, reported *rundata.ReportedDelay) string {
	if s == nil {
		return ""
	}
	var sine string
	switch {
	case !s.Judged:
		sine = fmt.Sprintf("the sine was not judged (%s)", s.Note)
	case len(s.Glitches) == 0:
		sine = fmt.Sprintf("the %.1f Hz sine came back unbroken", s.ToneHz)
	default:
		times := fmt.Sprintf("%d times", len(s.Glitches))
		if len(s.Glitches) == 1 {
			times = "once"
		}
		var at []string
		for i, g := range s.Glitches {
			if i == 10 {
				at = append(at, fmt.Sprintf("and %d more", len(s.Glitches)-10))
				break
			}
			with := withText(g.With)
			if c := g.CauseText(); c != "" {
				with += "; in the trace: " + c
			}
			at = append(at, fmt.Sprintf("at %.1f ms for %.1f ms (period %d, %s)", g.AtMS, g.LengthMS, g.Period, with))
		}
		sine = fmt.Sprintf("the %.1f Hz sine broke %s: %s", s.ToneHz, times, strings.Join(at, ", "))
	}
	if s.Judged && s.XrunsHeard+s.XrunsNotHeard+s.GlitchesAlone > 0 {
		sine += fmt.Sprintf("; of the xruns %d heard, %d not; %d breaks with no xrun or pointer jump", s.XrunsHeard, s.XrunsNotHeard, s.GlitchesAlone)
	}
	trip := fmt.Sprintf("round trip not found (%d repetitions looked in)", s.RoundTripsMissing)
	if s.RoundTrips > 0 {
		trip = fmt.Sprintf("round trip not read: the sound broke before the MLS came back whole (%d repetitions after)", s.RoundTrips)
	}
	if d := s.CardDelay; d != nil {
		trip = fmt.Sprintf("round trip %.1f ms: the playback buffer's %d frames and a card delay of %d frames (min %d, max %d; %d repetitions read, %d before the sound first broke, %d missing)",
			s.RoundTripMS, s.BufferFrames, d.Median, d.Min, d.Max, s.RoundTrips, s.RoundTripsBeforeBreak, s.RoundTripsMissing)
		if r := reported; r != nil {
			trip += fmt.Sprintf("; the drivers report %d frames of it (playback %d, capture %d)", r.PlaybackFrames+r.CaptureFrames, r.PlaybackFrames, r.CaptureFrames)
		}
	}
	if f := s.RoundTripFollowed; f != nil {
		trip += fmt.Sprintf("; over the whole phase, across its restarts, %.1f ms (min %.1f, max %.1f; %d repetitions)", f.Median, f.Min, f.Max, s.RoundTripsFollowed)
	}
	return sine + "; " + trip + "."
}

// withText says what came with a glitch (rundata.Glitch.With).
func withText(with string) string {
	switch with {
	case rundata.GlitchXrun:
		return "an xrun"
	case rundata.GlitchPointerJump:
		return "a pointer jump"
	}
	return "no xrun"
}
