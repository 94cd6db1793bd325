// Package timer is the driver used when there is no soundcard: the period
// clock is clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) and latency is
// wake − absolute deadline, cyclictest's definition for each wakeup. Unlike
// cyclictest it does not skip the deadlines that passed during a stall: a
// card needs every period written, so they are replayed, each late
// (run.json's caught_up counts them).
//
// A virtual buffer of Config.Periods periods stands in for the card's: it
// finds the xruns a real card would have had with that buffer, and marks
// them simulated.
package timer

import (
	"latencytest/audio"
	"latencytest/internal/badinput"
	"latencytest/rundata"
)

// Driver is the timer driver. Its zero value is not usable; call New.
type Driver struct {
	cfg      audio.Config
	periodNS int64
	next     int64 // due instant of the next period
	sleep    audio.Sleeper
}

// New returns a timer driver.
func New() *Driver { return &Driver{} }

// Open accepts any positive shape: a timer can run any period.
func (d *Driver) Open(cfg audio.Config) (audio.Granted, error) {
	if cfg.Rate <= 0 || cfg.PeriodFrames <= 0 || cfg.Periods < 2 {
		return audio.Granted{}, badinput.Errorf("timer: rate %d, period %d, periods %d: need rate > 0, period > 0, periods ≥ 2", cfg.Rate, cfg.PeriodFrames, cfg.Periods)
	}
	if cfg.Device != "" {
		return audio.Granted{}, badinput.Errorf("--device %q: the timer driver has no devices", cfg.Device)
	}
	d.cfg = cfg
	d.periodNS = cfg.PeriodNS()
	return audio.Granted{
		Device:       "timer (CLOCK_MONOTONIC)",
		Format:       "none",
		Rate:         cfg.Rate,
		Channels:     cfg.Channels,
		PeriodFrames: cfg.PeriodFrames,
		Periods:      cfg.Periods,
		Simulated:    true,
	}, nil
}

// Start starts the virtual stream with a full buffer.
func (d *Driver) Start() (int64, error) {
	now := audio.Now()
	d.next = now + d.periodNS
	return now, nil
}

// Wait sleeps until the next period's deadline.
func (d *Driver) Wait(p *rundata.Sample) error {
	p.Due = d.next
	d.sleep.Until(d.next)
	p.Woke = audio.Now()
	d.next += d.periodNS
	// At the deadline one period has been played, so one period is free;
	// every period of lateness frees another, up to the whole buffer.
	free := int64(d.cfg.PeriodFrames) + (p.Woke-p.Due)*int64(d.cfg.Rate)/1e9
	p.Avail = int32(min(free, int64(d.cfg.PeriodFrames*d.cfg.Periods)))
	return nil
}

// Transfer "writes" the period. The virtual buffer ran dry if the write
// comes after the last queued period has played: the period due at
// p.Due keeps the card busy until p.Due + (periods−1) periods. The xrun
// lasts from then until the write. As on a real card the stream then
// restarts, so a stall of any length is one xrun and the period grid starts
// afresh at the write instead of catching up period by period.
func (d *Driver) Transfer(p *rundata.Sample) error {
	end := audio.Now()
	if x := Xrun(p.Due, end, d.cfg.Periods, d.periodNS); x > 0 {
		p.Xrun = x
		p.Flags |= rundata.FlagSimulated
		d.next = end + d.periodNS
	}
	return nil
}

// Xrun is the virtual buffer's rule: the length of the xrun when the period
// due at due is written at end into a buffer of periods periods of
// periodNS each, or 0 when the write came in time.
func Xrun(due, end int64, periods int, periodNS int64) int64 {
	dry := due + int64(periods-1)*periodNS
	return max(0, end-dry)
}

// PinnableLoop reports that Wait and Transfer make only raw system calls.
func (d *Driver) PinnableLoop() bool { return true }

// Close does nothing: there is nothing to release.
func (d *Driver) Close() error { return nil }
