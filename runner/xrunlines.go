package runner

import (
	"fmt"

	"latencytest/rundata"
)

// xrunsPerSecond is how many xrun lines a phase prints in a second before
// it sums the rest: enough to see their lengths, few enough that a run
// with hundreds of xruns a second still shows its figures on one screen.
// Every xrun stays in the samples and run.json.
const xrunsPerSecond = 5

// xrunLines prints a phase's xrun and pointer-jump lines as aplay does,
// at most xrunsPerSecond a second of the samples' clock, then one line
// for the rest of that second: "… and 37 more underruns in that second,
// longest 1.200 ms".
type xrunLines struct {
	print func(format string, args ...any)
	phase string

	from    int64 // CLOCK_MONOTONIC ns: the second's start (its first line)
	printed int
	more    map[string]int // kind ("underrun", "overrun", "pointer jump") → lines not printed
	longest int64          // of the xruns not printed, ns
}

func newXrunLines(phase string, print func(format string, args ...any)) *xrunLines {
	return &xrunLines{print: print, phase: phase, more: map[string]int{}}
}

// add prints s's line, or counts it when the second has had its lines.
func (x *xrunLines) add(s *rundata.Sample) {
	if s.Woke-x.from >= 1e9 {
		x.flush()
		x.from, x.printed = s.Woke, 0
	}
	kind, line := xrunLine(s)
	if x.printed < xrunsPerSecond {
		x.printed++
		x.print("[%s] %s", x.phase, line)
		return
	}
	x.more[kind]++
	x.longest = max(x.longest, s.Xrun)
}

// flush prints the sum of the lines the second did not print.
func (x *xrunLines) flush() {
	for _, kind := range []string{"underrun", "overrun", "pointer jump"} {
		if n := x.more[kind]; n > 0 {
			line := fmt.Sprintf("[%s] … and %d more %s in that second", x.phase, n, plural(n, kind))
			switch {
			case kind == "pointer jump":
			case n == 1:
				line += fmt.Sprintf(", at least %.3f ms long", float64(x.longest)/1e6)
			default:
				line += fmt.Sprintf(", longest %.3f ms", float64(x.longest)/1e6)
			}
			x.print("%s (every one is in the results)", line)
		}
		delete(x.more, kind)
	}
	x.longest = 0
}

// xrunLine is an xrun's line as aplay prints it, or what a pointer jump
// is, and its kind.
func xrunLine(s *rundata.Sample) (kind, line string) {
	if s.Xrun == 0 {
		return "pointer jump", fmt.Sprintf("pointer jump at period %d: the hardware pointer fell a buffer or more behind the card's clock (a period interrupt more than a buffer late; the kernel reported no xrun, and it is not counted as one)", s.Index)
	}
	kind = "underrun"
	if s.Flags&rundata.FlagCapture != 0 {
		kind = "overrun"
	}
	sim := ""
	if s.Flags&rundata.FlagSimulated != 0 {
		sim = " (simulated)"
	}
	return kind, fmt.Sprintf("%s!!! (at least %.3f ms long)%s", kind, float64(s.Xrun)/1e6, sim)
}

// plural is noun for n things: "1 more underrun", "2 more underruns".
func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}
