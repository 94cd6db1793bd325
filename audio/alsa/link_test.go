//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"strings"
	"testing"

	"latencytest/rundata"
)

// linkRun plays periods periods of 256 frames (2 in the buffer, 48 kHz)
// on a card whose period interrupt comes on time, each update stamped
// with the link clock's time as ahead says at that update (ns since the
// trigger), through check and woke as Wait does, and returns the samples
// woke filled.
func linkRun(t *testing.T, periods int, linkOn bool, ahead func(i int, need int64) int64) []rundata.Sample {
	t.Helper()
	const period, bufPeriods = 256, 2
	st := &mmapStatus{State: stateRunning}
	p := &pcm{bufferFrames: period * bufPeriods, status: st, periodFrames: period}
	p.boundary = uint64(p.bufferFrames)
	for p.boundary*2 <= 1<<40 {
		p.boundary *= 2
	}
	if linkOn {
		p.atime = atstampLink
	}
	s := &side{pcm: p, name: "hda", linkOn: linkOn}
	d := &Driver{rate: 48000, periodFrames: period, periodNS: 5333333}
	d.sides, d.play = []*side{s}, s
	d.grid.reset(cardNSPerFrame, float64(d.periodNS)/2)
	s.appl = uint64(p.bufferFrames)
	var out []rundata.Sample
	for i := 1; i <= periods; i++ {
		need := int64(d.need(s))
		ts := int64(float64(need) * cardNSPerFrame) // the update at the period's end, on time
		st.HWPtr = uframes(uint64(need) % p.boundary)
		st.Tstamp = timespec{Sec: ts / 1e9, Nsec: ts % 1e9}
		if linkOn {
			l := need*1e9/48000 + ahead(i, need)
			st.AudioTstamp = timespec{Sec: l / 1e9, Nsec: l % 1e9}
		} else {
			// A card without a link clock: the kernel's DEFAULT audio
			// timestamp, the pointer in ns, which must not be read.
			st.AudioTstamp = timespec{Nsec: need * 1e9 / 48000}
		}
		if err := d.check(s); err != nil {
			t.Fatal(err)
		}
		if !s.ready {
			t.Fatalf("period %d: not ready", i)
		}
		var smp rundata.Sample
		if err := d.woke(&smp); err != nil {
			t.Fatal(err)
		}
		smp.Woke = ts + 50e3
		out = append(out, smp)
		s.ready = false
		s.appl += period
	}
	return out
}

// The link timestamp says each period ended X ns before the update that
// reported it (the interrupt came X ns late on the card's clock): the
// period's end on the link clock is X before Due, and run.json's
// link_before_due_ns says X, against the grid as against the update.
func TestLinkClockBeforeUpdate(t *testing.T) {
	for _, x := range []int64{0, 3000, 17000, -2000} {
		ss := linkRun(t, 200, true, func(int, int64) int64 { return x })
		a := rundata.NewAccumulator(rundata.SampleHeader{Rate: 48000, Frames: 256, Periods: 2}, 0)
		for i := range ss {
			if ss[i].Link == 0 {
				t.Fatalf("X %d: period %d has no link instant", x, i)
			}
			if got := ss[i].Due - ss[i].Link; got != x {
				t.Fatalf("X %d: period %d: Due − Link = %d", x, i, got)
			}
			a.Add(&ss[i])
		}
		var ph rundata.Phase
		a.Fill(&ph)
		l := ph.LinkBeforeDue
		if l == nil || l.Periods != 200 {
			t.Fatalf("X %d: link_before_due_ns %+v, want 200 periods", x, l)
		}
		// On time updates: the grid is the update, within its rounding.
		for _, v := range []int64{l.MinNS, l.MedianNS, l.MaxNS} {
			if v < x-2 || v > x+2 {
				t.Errorf("X %d: link_before_due_ns %+v, want %d ± 2 ns", x, *l, x)
			}
		}
		if ph.OnCardClock == 0 {
			t.Errorf("X %d: no period on the grid", x)
		}
		r := rundata.Run{Phases: []rundata.Phase{ph}}
		if ts := r.CardTimestamp(); !strings.Contains(ts, "link clock") || !strings.Contains(ts, "dating none") {
			t.Errorf("card.timestamp %q: want the link clock read beside, dating none", ts)
		}
	}
}

// A card without a link timestamp asks for none: no STATUS_EXT (plain
// STATUS, as before), no link instant in any period, and card.timestamp
// names the grid and the pointer update alone.
func TestNoLinkClockNoStatusExt(t *testing.T) {
	hda := uint32(infoMmap | infoMmapValid | infoInterleaved | infoBlockTransfer | infoPause | infoSyncStart | infoNoPeriodWakeup | infoHasLinkAtime)
	for _, tc := range []struct {
		info uint32
		want uint32
	}{
		{infoMmap | infoMmapValid | infoInterleaved | infoBlockTransfer | infoResume | infoPause, 0}, // AC97
		{infoMmap | infoBatch | infoSyncApplPtr | infoInterleaved, 0},                                // USB audio
		{infoHasLinkSyncAtime, 0}, // synchronized only: not against CLOCK_MONOTONIC
		{hda, atstampLink},
		{infoHasLinkAbsAtime, atstampLinkAbsolute},
		{infoHasLinkEstAtime | infoHasLinkSyncAtime, atstampLinkEstimated},
	} {
		p := &pcm{atime: linkRequest(tc.info)}
		if p.atime != tc.want {
			t.Errorf("flags %s: asks for audio timestamp %d, want %d", infoString(tc.info), p.atime, tc.want)
		}
		wantReq := uintptr(ioctlStatus)
		if tc.want != 0 {
			wantReq = ioctlStatusExt
		}
		if got := p.statusReq(); got != wantReq {
			t.Errorf("flags %s: status ioctl %#x, want %#x", infoString(tc.info), got, wantReq)
		}
	}
	ss := linkRun(t, 100, false, nil)
	a := rundata.NewAccumulator(rundata.SampleHeader{Rate: 48000, Frames: 256, Periods: 2}, 0)
	for i := range ss {
		if ss[i].Link != 0 {
			t.Fatalf("period %d: link instant %d on a card without a link clock", i, ss[i].Link)
		}
		a.Add(&ss[i])
	}
	var ph rundata.Phase
	a.Fill(&ph)
	if ph.LinkBeforeDue != nil {
		t.Errorf("link_before_due_ns %+v on a card without a link clock", *ph.LinkBeforeDue)
	}
	r := rundata.Run{Phases: []rundata.Phase{ph}}
	if ts := r.CardTimestamp(); strings.Contains(ts, "link") || !strings.Contains(ts, "grid") {
		t.Errorf("card.timestamp %q: want the grid, no link clock", ts)
	}
}

// The start's STATUS_EXT turns the link clock on only when the driver
// reports the type asked for: HD-Audio's LINK (reset at the trigger:
// zero 0), a link clock that is not reset (its time at the trigger), and
// a driver that demoted the request to DEFAULT or gave no report (off).
func TestLinkStarted(t *testing.T) {
	report := func(typ uint32) uint32 { return 1<<16 | typ<<17 | 1<<21 }
	st := pcmStatus{State: stateRunning, TriggerTstamp: timespec{Sec: 10}, Tstamp: timespec{Sec: 10, Nsec: 4000},
		AudioTstamp: timespec{Sec: 500, Nsec: 9000}}
	for _, tc := range []struct {
		atime, data uint32
		on          bool
		zero        int64
	}{
		{atstampLink, report(atstampLink), true, 0},
		{atstampLinkAbsolute, report(atstampLinkAbsolute), true, 500e9 + 9000 - 4000},
		{atstampLink, report(atstampDefault), false, 0},
		{atstampLink, 0, false, 0},
		{0, report(atstampLink), false, 0},
	} {
		st.AudioTstampData = tc.data
		on, zero := linkStarted(tc.atime, &st)
		if on != tc.on || zero != tc.zero {
			t.Errorf("asked %d, reported %#x: on %v zero %d, want %v %d", tc.atime, tc.data, on, zero, tc.on, tc.zero)
		}
	}
}
