package rundata

// SideStats accumulates what a phase's samples say about a duplex stream's
// two sides and about the driver's time in poll: the wakeup latency
// against each side's due (a card may raise separate capture and playback
// interrupts, and the wakeup after each is its own distribution), how far
// apart the two sides became due, and how long each period waited in poll
// (what jack-test measured as jackd's time in poll). The run, a recovery
// from a samples file and the report all fill a phase's figures with it,
// so they agree.
type SideStats struct {
	Playback *Histogram // woke − playback due, duplex periods only
	Capture  *Histogram // woke − capture due, duplex periods only
	Apart    *Histogram // capture due − playback due (negative: capture first)
	Poll     *Histogram // time in poll, every period
	polled   bool       // some period waited in poll: the driver polls
}

// newSideStats returns empty statistics. The histograms allocate their
// bins only as values reach them.
func newSideStats() *SideStats {
	return &SideStats{
		Playback: NewHistogram(DefaultHistUS),
		Capture:  NewHistogram(DefaultHistUS),
		Apart:    NewHistogram(DefaultHistUS),
		// A poll lasts up to a period or so; periods run to seconds.
		Poll: NewHistogram(MaxHistUS),
	}
}

// Add counts one period.
func (st *SideStats) Add(s *Sample) {
	if play, capt, ok := s.SideLatencies(); ok {
		st.Playback.Add(play)
		st.Capture.Add(capt)
		if s.Xrun == 0 { // a restarted stream's sides start anew, not apart by their interrupts
			st.Apart.Add(s.CaptureDue - s.PlaybackDue)
		}
	}
	// Every period counts, those that found their period already there
	// (0) too, but only once the driver is seen to poll at all: timer
	// and RTC periods have no poll wait, not a wait of 0.
	st.Poll.Add(s.PollNS)
	st.polled = st.polled || s.PollNS > 0
}

// Fill sets the phase's duplex and poll figures; each stays nil when the
// phase has none (not duplex; a driver without a poll).
func (st *SideStats) Fill(ph *Phase) {
	ph.PlaybackLatency, ph.CaptureLatency, ph.CapturePlaybackApart, ph.PollWait = nil, nil, nil, nil
	if st.Capture.Count > 0 {
		ph.PlaybackLatency = statsOf(st.Playback)
		ph.CaptureLatency = statsOf(st.Capture)
		ph.CapturePlaybackApart = statsOf(st.Apart)
	}
	if st.polled {
		ph.PollWait = statsOf(st.Poll)
	}
}

func statsOf(h *Histogram) *LatencyStats {
	s := h.Stats()
	return &s
}
