//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"testing"

	"latencytest/rundata"
)

// pointerRun feeds track the updates of a card playing 2×64 frames at a
// nominal 48 kHz whose clock runs at speed times the nominal rate: one
// update per period, at the instant the card's clock reached it, except
// that the update of each period in late comes that many of the card's
// frames late and, as snd-dummy's do, reads the position modulo the
// buffer (the whole buffers the lateness spanned are lost); the updates
// after it follow on from it. It returns the periods flagged as pointer
// jumps, and the driver. A period flagged must be due, by jumpDue, when
// the card reached it, before the late update (its latency is the
// update's lateness, not ~0).
func pointerRun(t *testing.T, speed float64, periods int, late map[int]uint64) ([]int, *Driver) {
	t.Helper()
	const period, bufFrames = 64, 128
	d := &Driver{periodFrames: period, periodNS: int64(period) * 1e9 / 48000}
	s := &side{pcm: &pcm{bufferFrames: bufFrames}}
	d.sides = []*side{s}
	nominal := float64(d.periodNS) / period
	d.grid.reset(nominal, float64(d.periodNS)/2)
	var jumps []int
	var shift, lost uint64 // card frames the updates came late by, and lost
	for i := 1; i <= periods; i++ {
		shift += late[i]
		lost += late[i] / bufFrames * bufFrames
		pos := uint64(i*period) + shift
		due, _ := d.jumpDue(s)
		ts := int64(float64(pos) * nominal / speed)
		d.track(s, pos-lost, ts, true)
		if d.jumped {
			jumps = append(jumps, i)
			d.jumped = false
			if want := int64(float64(pos-late[i]) * nominal / speed); due < want-2 || due > want+2 {
				t.Errorf("speed %v, period %d: due %d ns, want %d (latency %d ns, want %d)", speed, i, due, want, ts-due, ts-want)
			}
		}
	}
	return jumps, d
}

// A pointer that lost whole buffers is a jump; a card clock running
// slow or fast is not, however far off (ES1370 under qemu's default
// audio timer ran at 13 % of its rate: 983 "jumps" in 984 periods).
func TestPointerJumpsNotClockRate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		speed float64
		late  map[int]uint64
		want  int
	}{
		{"on time", 1, nil, 0},
		{"a crystal 300 ppm slow", 0.9997, nil, 0},
		{"an emulated card at 13 % of its rate", 0.13, nil, 0},
		{"a card running 40 % fast", 1.4, nil, 0},
		{"one update 2 buffers late, the buffers lost", 1, map[int]uint64{500: 256}, 1},
		{"two such, on a slow card", 0.13, map[int]uint64{300: 384, 700: 640}, 2},
	} {
		jumps, d := pointerRun(t, tc.speed, 1000, tc.late)
		if len(jumps) != tc.want {
			t.Errorf("%s: pointer jumps at periods %v, want %d", tc.name, jumps, tc.want)
		}
		if got, want := d.clock(d.sides[0])*tc.speed, float64(d.periodNS)/64; got < want*0.999 || got > want*1.001 {
			t.Errorf("%s: the driver's clock %.2f ns per frame, want the card's %.2f", tc.name, d.clock(d.sides[0]), want/tc.speed)
		}
	}
}

// An xrun's length leaves out the simulated DSP work when the stream had
// stopped before the wakeup (aplay, doing no work, notices it at once),
// and counts from the stop when the work itself made it.
func TestXrunLengthWithoutDSP(t *testing.T) {
	const ms = int64(1e6)
	p := &rundata.Sample{Woke: 100 * ms, DSP: 4 * ms}
	for _, tc := range []struct {
		name      string
		stop, now int64
		want      int64
	}{
		{"stopped 3 ms before the wakeup, found after 4 ms of work", 97 * ms, 104 * ms, 3 * ms},
		{"stopped 1 ms into the work", 101 * ms, 104 * ms, 3 * ms},
		{"stopped at the wakeup", 100 * ms, 104 * ms, 1},
	} {
		if got := xrunSince(tc.stop, tc.now, p); got != tc.want {
			t.Errorf("%s: %d ns, want %d", tc.name, got, tc.want)
		}
	}
}

// The room at a wakeup counts the frames played since the pointer's last
// update, up to the buffer: woken 1 ms after an update that found 64
// frames free at 48 kHz, 112 are.
func TestAvailAtWakeup(t *testing.T) {
	ns := 1e9 / 48000.0
	for _, tc := range []struct {
		avail, since, want int64
	}{
		{64, 1e6, 112},
		{64, 0, 64},
		{64, 10e6, 128}, // the buffer, no more
		{64, -5, 64},    // an update stamped after the wakeup read: none
	} {
		if got := availAt(tc.avail, 128, tc.since, ns); got != tc.want {
			t.Errorf("availAt(%d, 128, %d ns) = %d, want %d", tc.avail, tc.since, got, tc.want)
		}
	}
}
