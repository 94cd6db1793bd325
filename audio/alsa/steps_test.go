//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"latencytest/rundata"
)

// simCard is a simulated playback card at 48 kHz whose pointer moves in
// steps of step frames (a USB transfer, an emulated DMA block, a period
// for BATCH cards): the update for the step ending at frame f is
// stamped f/48000 s plus a delay of up to jitter ns (a transfer's
// completion handled late), and never before the previous update.
type simCard struct {
	step, jitter int64
	counted      bool // a BATCH card's pointer (side.counted)
	rng          *rand.Rand
	updates      []update // every update, in order
}

type update struct{ pos, ts int64 }

const cardNSPerFrame = 1e9 / 48000.0

// run makes the card's updates up to frame frames.
func (c *simCard) run(frames int64) {
	var last int64
	for f := c.step; f <= frames; f += c.step {
		ts := int64(float64(f)*cardNSPerFrame) + c.rng.Int64N(c.jitter+1)
		ts = max(ts, last+1)
		c.updates = append(c.updates, update{f, ts})
		last = ts
	}
}

// stepsRun plays periods periods of period frames (2 periods of buffer)
// through check on the simulated card c: the thread wakes wake ns after the first
// update that gives it room (poll), or, every lateEvery-th period, late by
// lateBy steps. It returns each period's due against when the card
// reached the period's end, and the pointer jumps seen.
func stepsRun(t *testing.T, c *simCard, period int64, periods, lateEvery, lateBy int) (dues []int64, truths []int64, jumps int) {
	t.Helper()
	const bufPeriods = 2
	st := &mmapStatus{State: stateRunning}
	p := &pcm{bufferFrames: int(period) * bufPeriods, status: st}
	p.boundary = uint64(p.bufferFrames)
	for p.boundary*2 <= 1<<40 {
		p.boundary *= 2
	}
	s := &side{pcm: p, name: "sim", counted: c.counted}
	d := &Driver{periodFrames: int(period), periodNS: int64(period) * 1e9 / 48000}
	d.sides = []*side{s}
	d.play = s
	d.grid.reset(cardNSPerFrame, float64(d.periodNS)/2)
	// The prefill: the buffer is full as the stream starts.
	s.appl = uint64(p.bufferFrames)
	if c.updates == nil { // else the test made them
		c.run(int64(periods+bufPeriods+4) * period)
	}
	u := 0
	for i := 1; i <= periods; i++ {
		need := int64(d.need(s))
		for u < len(c.updates) && c.updates[u].pos < need {
			u++
		}
		if u >= len(c.updates) {
			t.Fatalf("the card ran out at period %d", i)
		}
		if lateEvery > 0 && i%lateEvery == 0 {
			u = min(u+lateBy, len(c.updates)-1)
		}
		up := c.updates[u]
		st.HWPtr = uframes(uint64(up.pos) % p.boundary)
		st.Tstamp = timespec{Sec: up.ts / 1e9, Nsec: up.ts % 1e9}
		if err := d.check(s); err != nil {
			t.Fatal(err)
		}
		if !s.ready {
			t.Fatalf("period %d: not ready with the pointer at %d, need %d", i, up.pos, need)
		}
		if d.jumped {
			jumps++
			d.jumped = false
		}
		dues = append(dues, s.due)
		truths = append(truths, int64(float64(need)*cardNSPerFrame))
		s.ready = false
		s.appl += uint64(period)
	}
	return dues, truths, jumps
}

// Coarse pointer steps are not pointer jumps, and each period's due is
// where the card reached the period's end, never before it, within a step
// and the update's delay: USB audio's 48-frame transfers (1 ms at 48 kHz)
// against 64- and 256-frame periods, their completions jittered by a
// transfer; an emulated DMA that moves in blocks (ES1370 under qemu's
// audio timer: 1 ms, or 10 ms at its default); and a BATCH card whose
// pointer moves a period at a time. docs/alsa.md, "Grid", claims this.
func TestCoarsePointerSteps(t *testing.T) {
	for _, tc := range []struct {
		name         string
		step, period int64
		jitter       int64 // ns
	}{
		{"usb 48-frame transfers, 64-frame periods", 48, 64, 1e6},
		{"usb 48-frame transfers, 256-frame periods", 48, 256, 1e6},
		{"es1370 1 ms blocks, 256-frame periods", 48, 256, 100e3},
		{"es1370 10 ms blocks, 1024-frame periods", 480, 1024, 100e3},
		{"batch, a period a step, 256", 256, 256, 200e3},
	} {
		for _, late := range []struct{ every, by int }{{0, 0}, {7, 1}, {11, 2}} {
			name := fmt.Sprintf("%s, a wakeup %d updates late every %d", tc.name, late.by, late.every)
			t.Run(name, func(t *testing.T) {
				c := &simCard{step: tc.step, jitter: tc.jitter, rng: rand.New(rand.NewPCG(1, uint64(tc.step*tc.period)))}
				dues, truths, jumps := stepsRun(t, c, tc.period, 2000, late.every, late.by)
				if jumps != 0 {
					t.Errorf("%d pointer jumps, want 0", jumps)
				}
				stepNS := int64(float64(tc.step) * cardNSPerFrame)
				bad := 0
				// The first periods are the driver's to learn the steps.
				for i := 16; i < len(dues); i++ {
					if d := dues[i] - truths[i]; d < 0 || d > stepNS+tc.jitter {
						if bad < 5 {
							t.Errorf("period %d: due %d ns after the card reached its end, want 0 to %d (a step and the update's delay)", i+1, d, stepNS+tc.jitter)
						}
						bad++
					}
				}
				if bad > 0 {
					t.Errorf("%d of %d periods due outside the step", bad, len(dues)-16)
				}
			})
		}
	}
}

// A late update is a pointer jump only where the pointer is a position
// read modulo the buffer: the same card, its updates from frame 48 000 on
// a buffer and a half late (an emulated USB host that stalled), reads as
// one jump with a modulo pointer and as none with a counted (BATCH) one,
// whose late transfers lost nothing (lostBuffers; the kernel's own check
// skips BATCH cards).
func TestLateCountedPointerIsNoJump(t *testing.T) {
	const period, periods = 256, 380
	for _, counted := range []bool{false, true} {
		c := &simCard{step: 48, jitter: 100e3, counted: counted, rng: rand.New(rand.NewPCG(2, 3))}
		c.run((periods + 6) * period)
		for i := range c.updates {
			if c.updates[i].pos >= 48000 {
				c.updates[i].ts += int64(3 * period * cardNSPerFrame) // 1.5 buffers of 2 periods
			}
		}
		_, _, jumps := stepsRun(t, c, period, periods, 0, 0)
		want := 1
		if counted {
			want = 0
		}
		if jumps != want {
			t.Errorf("counted %v: %d pointer jumps, want %d", counted, jumps, want)
		}
	}
}

// The grid never dates a period after the update that showed it complete:
// after a (re)start the grid has only its first updates, and when the
// first came late (HD-Audio rw under qemu, after an xrun, amid the
// machine's stops) a grid anchored there put the next period's end 3 ms
// after the driver's own sync that found it complete (a hwsync reads the
// DMA position between interrupts, and its stamp is not fitted), a period
// woken before it ended.
func TestGridNeverAfterItsUpdate(t *testing.T) {
	const period = 256
	st := &mmapStatus{State: stateRunning}
	p := &pcm{bufferFrames: 2 * period, status: st, boundary: 1 << 40}
	s := &side{pcm: p, name: "sim", appl: 2 * period}
	d := &Driver{periodFrames: period, periodNS: int64(period) * 1e9 / 48000}
	d.sides, d.play = []*side{s}, s
	d.grid.reset(cardNSPerFrame, float64(d.periodNS)/2)
	at := func(f int64) int64 { return int64(float64(f) * cardNSPerFrame) }
	set := func(pos, ts int64) {
		st.HWPtr = uframes(uint64(pos))
		st.Tstamp = timespec{Sec: ts / 1e9, Nsec: ts % 1e9}
	}
	// Period 1: the first update after the start, 3 ms late.
	set(period, at(period)+3e6)
	if err := d.check(s); err != nil || !s.ready {
		t.Fatalf("period 1: ready %v, %v", s.ready, err)
	}
	s.ready, s.appl = false, s.appl+period
	// Period 2: found complete by the driver's own sync, 10 frames past
	// its end, before the card's interrupt for it.
	s.prePos, s.preTs = period, at(period)+3e6
	sync := at(2*period + 10)
	s.ownTs = sync
	set(2*period+10, sync)
	if err := d.check(s); err != nil || !s.ready {
		t.Fatalf("period 2: ready %v, %v", s.ready, err)
	}
	var smp rundata.Sample
	if err := d.woke(&smp); err != nil {
		t.Fatal(err)
	}
	if smp.Grid > s.due || smp.Grid > sync {
		t.Errorf("period 2: grid %d ns after the sync that found it complete (due %d ns after it)", smp.Grid-sync, s.due-sync)
	}
}

// A card whose pointer falls behind its clock once, by more than three
// quarters of the buffer, is one pointer jump, not one for every period
// after it: HD-Audio under qemu at 2×64 with read/write access, its DMA
// standing 2–5 ms now and then while its updates came on the 1 ms audio
// timer, read up to a tick late. The grid kept the old phase, every
// update after the pause read as late by the pause (less than eight of
// the updates' mean delays, so the grid did not restart itself), and 40
// periods in a row were flagged (docs/notes/cardtrace-2026-12-06.md: about
// half of latencytest rw's jumps with the card steady in the kernel's own
// reads). The jump restarts the grid and the pace from the late update.
func TestOnePauseOneJump(t *testing.T) {
	const period, periods = 64, 3000
	for _, pause := range []int64{2.5e6, 5e6} {
		c := &simCard{step: 48, jitter: 1e6, rng: rand.New(rand.NewPCG(4, uint64(pause)))}
		c.run((periods + 6) * period)
		for i := range c.updates {
			if c.updates[i].pos >= 96000 {
				c.updates[i].ts += pause
			}
		}
		dues, truths, jumps := stepsRun(t, c, period, periods, 0, 0)
		if jumps != 1 {
			t.Errorf("a %.1f ms pause at 2 s: %d pointer jumps, want 1", float64(pause)/1e6, jumps)
		}
		// After it, the periods are dated on the card's clock as it now
		// runs: from where it reached each period's end, within a step
		// and the update's delay, as before the pause.
		stepNS := int64(48 * cardNSPerFrame)
		bad := 0
		for i := 96000/period + 16; i < len(dues); i++ {
			if d := dues[i] - truths[i] - pause; d < 0 || d > stepNS+c.jitter {
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("a %.1f ms pause: %d of %d periods after it due outside the step", float64(pause)/1e6, bad, len(dues)-96000/period-16)
		}
	}
}

// The card's pace is measured over paceSpanN updates, also right after
// a restart: ES1370 under qemu at 2×64 restarts after an xrun every few
// dozen periods, and its updates, 64 frames apart, come on the 1 ms
// audio timer, up to a tick late. A pace from the first few updates
// after each restart is off by as much as a tick in a period or two
// (25–75 %), and enough of them in the median read the card as a
// quarter fast, which put a period whose update came 2.5 ms after the
// one before (no read gap, the card moving) a buffer behind the clock: a
// pointer jump the kernel's reads do not show (TestVMCardPauses, ES1370
// rw, one of nine).
func TestPaceAcrossRestarts(t *testing.T) {
	const period = 64
	s := &side{pcm: &pcm{bufferFrames: 2 * period}}
	d := &Driver{periodFrames: period, periodNS: int64(period) * 1e9 / 48000}
	d.sides = []*side{{}} // not the tracked side: no grid, no jumps
	d.grid.reset(cardNSPerFrame, float64(d.periodNS)/2)
	rng := rand.New(rand.NewPCG(5, 6))
	var pos uint64
	t0 := int64(0)
	worst := 0.0
	for r := 0; r < 300; r++ {
		s.seen = false // a restart: the pointer from 0 again
		pos = 0
		for i := 0; i < 12+rng.IntN(20); i++ {
			pos += period
			ts := t0 + int64(float64(pos)*cardNSPerFrame) + rng.Int64N(1e6)
			d.track(s, pos, ts, true)
			if s.paceNS != 0 && r > 0 {
				worst = max(worst, math.Abs(s.paceNS/cardNSPerFrame-1))
			}
		}
		t0 += int64(float64(pos)*cardNSPerFrame) + 5e6
	}
	if worst > clockOff {
		t.Errorf("the pace strayed %.0f %% from the card's clock, want within %.0f %% (clockOff)", worst*100, clockOff*100)
	}
}

// The card's first buffer after a start places no grid: qemu's intel-hda
// ran at two thirds of its rate through it after every start, then at
// its rate, so a grid anchored on the first update (the earliest against
// the line after it) put every period after it 2–3.5 ms before the card
// reached its end, as long as that update stayed among the envelope's
// (64 periods, where HD-Audio at 2×64 restarted every 10–30). Here the
// first buffer after the start comes at two thirds of the rate: the
// periods after it are dated on the card's clock as it runs from there,
// within a step and the update's delay.
func TestGridAfterStartTransient(t *testing.T) {
	const period, buffer, step = 64, 128, 48
	c := &simCard{step: step, jitter: 200e3, rng: rand.New(rand.NewPCG(7, 8))}
	c.run(600 * period)
	bufNS := float64(buffer) * cardNSPerFrame
	slow := int64(bufNS / 2) // the first buffer takes 1.5 times its time
	for i := range c.updates {
		f := c.updates[i].pos
		c.updates[i].ts += min(f, buffer) * slow / buffer
	}
	st := &mmapStatus{State: stateRunning}
	p := &pcm{bufferFrames: buffer, status: st, boundary: 1 << 40}
	s := &side{pcm: p, name: "sim", appl: buffer}
	d := &Driver{periodFrames: period, periodNS: int64(period) * 1e9 / 48000}
	d.sides, d.play = []*side{s}, s
	d.grid.reset(cardNSPerFrame, float64(d.periodNS)/2)
	u, bad, graded := 0, 0, 0
	for i := 1; i <= 500; i++ {
		need := int64(d.need(s))
		for c.updates[u].pos < need {
			u++
		}
		up := c.updates[u]
		st.HWPtr = uframes(uint64(up.pos))
		st.Tstamp = timespec{Sec: up.ts / 1e9, Nsec: up.ts % 1e9}
		if err := d.check(s); err != nil || !s.ready {
			t.Fatalf("period %d: ready %v, %v", i, s.ready, err)
		}
		var smp rundata.Sample
		if err := d.woke(&smp); err != nil {
			t.Fatal(err)
		}
		truth := int64(float64(need)*cardNSPerFrame) + slow
		if smp.Grid != 0 && need > 3*buffer {
			graded++
			if e := smp.Grid - truth; e < 0 || e > int64(step*cardNSPerFrame)+c.jitter {
				if bad < 5 {
					t.Errorf("period %d: grid %.3f ms from when the card reached its end, want 0 to a step and the update's delay", i, float64(e)/1e6)
				}
				bad++
			}
		}
		if d.jumped {
			t.Errorf("period %d: a pointer jump", i)
			d.jumped = false
		}
		s.ready, s.appl = false, s.appl+period
	}
	if bad > 0 || graded < 400 {
		t.Errorf("%d of %d periods dated on the grid outside the step", bad, graded)
	}
}

// On the grid, lateness is judged beyond a pointer step: the grid is the
// updates' lower envelope, the earliest of them, and an update on time
// comes up to a step after it. Where a step is half the buffer (ES1370 at
// 2×64 under qemu: the pointer moves a period at a time, its interrupts
// on the 1 ms audio timer), two updates a tick late in a row were 2–2.5
// ms behind the grid, past three quarters of the 2.67 ms buffer, and read
// as a lost buffer while the kernel's own reads showed the card moving
// (TestVMCardPauses, ES1370). Two buffers lost still read as one.
func TestGridLatenessBeyondAStep(t *testing.T) {
	const period = 64
	for _, tc := range []struct {
		late float64 // ms behind the grid, the update before it as late
		want bool
	}{{2.5, false}, {3.2, false}, {5.4, true}} {
		s := &side{pcm: &pcm{bufferFrames: 2 * period}}
		d := &Driver{periodFrames: period, periodNS: int64(period) * 1e9 / 48000}
		d.sides = []*side{s}
		d.grid.reset(cardNSPerFrame, float64(d.periodNS)/2)
		at := func(f uint64) int64 { return int64(float64(f) * cardNSPerFrame) }
		var pos uint64
		for i := 0; i < 40; i++ { // on time: the pace, the steps and the grid known
			pos += period
			d.track(s, pos, at(pos), true)
		}
		if d.jumped || s.paceNS == 0 || s.steps.granularity() != period {
			t.Fatalf("on time: jumped %v, pace %.1f, step %d", d.jumped, s.paceNS, s.steps.granularity())
		}
		// The update before: as late, so that only the grid can tell.
		late := int64(tc.late * 1e6)
		pos += period
		s.lastPos, s.lastTs = pos, at(pos)+late
		pos += period
		if got := d.lostBuffers(s, pos, at(pos)+late, true); got != tc.want {
			t.Errorf("an update %.1f ms behind the grid, a step a period: a lost buffer %v, want %v", tc.late, got, tc.want)
		}
	}
}
