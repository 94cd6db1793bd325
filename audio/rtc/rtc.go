//go:build linux

// Package rtc is the test of the original latencytest (1999): the real-time
// clock's periodic interrupt (/dev/rtc0, RTC_IRQP_SET and RTC_PIE_ON) at a
// power-of-two rate, 2048 Hz by default, each wakeup timed against the
// interrupt grid.
//
// The kernel makes the periodic interrupt with an hrtimer (rtc_pie_update_irq)
// whose period is NSEC_PER_SEC / rate in whole nanoseconds, started
// relative to RTC_PIE_ON and forwarded from its expiry: the interrupt grid is
// the PIE_ON instant plus multiples of that period, on CLOCK_MONOTONIC.
// A read returns how many interrupts came since the last one. As with the
// timer and ALSA drivers (docs/method.md), missed periods are replayed,
// each late from its own interrupt: the wakeup is late for the oldest, and
// the next Waits return the others at once. A virtual buffer of
// Config.Periods periods finds the xruns, as with the timer driver; an xrun
// drops the periods still owed, the way a restarted stream starts afresh.
package rtc

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"latencytest/audio"
	"latencytest/audio/timer"
	"latencytest/internal/badinput"
	"latencytest/rundata"
)

// DefaultDevice is the RTC the driver opens when --device names none.
const DefaultDevice = "/dev/rtc0"

// MaxRate is the kernel's RTC_MAX_FREQ.
const MaxRate = 8192

// Driver is the RTC driver. Its zero value is not usable; call New.
type Driver struct {
	fd       int
	periods  int
	periodNS int64  // the kernel's: NSEC_PER_SEC / rate, truncated
	origin   int64  // the interrupt grid's origin (just before RTC_PIE_ON)
	k        uint64 // interrupts accounted for: the next due is interrupt k+1
	owed     uint64 // interrupts that came and are still to be replayed
	fired    uint64 // interrupts the kernel has counted so far (the reads' sum)
	resync   bool   // an xrun: the next period is the last interrupt before the wakeup
	word     uint64 // what read(2) fills in
	wordSize uintptr

	// The system: unix's in the driver, stand-ins in tests of the grid.
	ioctl func(fd int, req uint, arg uintptr) error
	open  func(path string) (int, error)
	now   func() int64
}

// New returns an RTC driver.
func New() *Driver {
	return &Driver{fd: -1, wordSize: unsafe.Sizeof(uintptr(0)), ioctl: ioctlRaw, open: openRTC, now: audio.Now}
}

// Present reports whether there is an RTC to open.
func Present() bool {
	return unix.Access(DefaultDevice, unix.R_OK) == nil
}

func ioctlRaw(fd int, req uint, arg uintptr) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), arg); e != 0 {
		return e
	}
	return nil
}

func openRTC(path string) (int, error) {
	return unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

// Open opens the RTC and sets its periodic rate to cfg.Rate interrupts per
// second; a period is one interrupt (cfg.PeriodFrames must be 1).
func (d *Driver) Open(cfg audio.Config) (audio.Granted, error) {
	bad := func(format string, a ...any) (audio.Granted, error) {
		return audio.Granted{}, badinput.Errorf(format, a...)
	}
	if cfg.Rate < 2 || cfg.Rate > MaxRate || cfg.Rate&(cfg.Rate-1) != 0 {
		return bad("--rtc-rate %d: allowed a power of two from 2 to %d Hz", cfg.Rate, MaxRate)
	}
	if cfg.PeriodFrames != 1 || cfg.Periods < 2 {
		return bad("rtc: a period is one interrupt and the virtual buffer at least 2 periods (got %d frames × %d)", cfg.PeriodFrames, cfg.Periods)
	}
	path := cfg.Device
	if path == "" {
		path = DefaultDevice
	}
	fd, err := d.open(path)
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENODEV), errors.Is(err, unix.ENXIO):
			return bad("--device %q: no such RTC (this machine has no real-time clock device; try --driver timer)", path)
		case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
			return bad("--device %q: %v (run as root)", path, err)
		case errors.Is(err, unix.EBUSY):
			return bad("--device %q: busy (another process holds the RTC)", path)
		}
		return audio.Granted{}, fmt.Errorf("open %s: %w", path, err)
	}
	d.fd = fd
	if err := d.ioctl(fd, unix.RTC_IRQP_SET, uintptr(cfg.Rate)); err != nil {
		d.Close()
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return bad("--rtc-rate %d: above this RTC's max_user_freq (/proc/sys/dev/rtc/max-user-freq); raise it or run as root", cfg.Rate)
		}
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTTY) {
			return bad("--rtc-rate %d: %s refuses it (%v)", cfg.Rate, path, err)
		}
		return audio.Granted{}, fmt.Errorf("%s: set the periodic rate: %w", path, err)
	}
	d.periods = cfg.Periods
	d.periodNS = 1e9 / int64(cfg.Rate)
	return audio.Granted{
		Device:       fmt.Sprintf("%s (periodic interrupt)", path),
		Format:       "none",
		Rate:         cfg.Rate,
		Channels:     cfg.Channels,
		PeriodFrames: 1,
		Periods:      cfg.Periods,
		Simulated:    true,
	}, nil
}

// Start turns the periodic interrupt on. The grid's origin is read just
// before RTC_PIE_ON: every due instant is early by the ioctl's entry time,
// a microsecond or two, so latencies read that much high, never low.
func (d *Driver) Start() (int64, error) {
	d.origin = d.now()
	if err := d.ioctl(d.fd, unix.RTC_PIE_ON, 0); err != nil {
		return 0, fmt.Errorf("rtc: periodic interrupt on: %w", err)
	}
	d.k, d.owed, d.fired, d.resync = 0, 0, 0, false
	return d.origin, nil
}

// Wait blocks in read(2) until the next interrupt, or returns at once
// with the next one owed.
func (d *Driver) Wait(p *rundata.Sample) error {
	if d.owed > 0 {
		d.owed--
		d.k++
		p.Due, p.Woke, p.Avail = d.origin+int64(d.k)*d.periodNS, d.now(), 1
		return nil
	}
	for {
		_, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(d.fd), uintptr(unsafe.Pointer(&d.word)), d.wordSize)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return fmt.Errorf("rtc: read: %w", e)
		}
		break
	}
	p.Woke = d.now()
	n := d.word >> 8 // interrupts since the last read
	if d.wordSize == 4 {
		n = uint64(uint32(d.word)) >> 8
	}
	d.fired += max(n, 1)
	if d.resync {
		// The interrupts that came since the xrun belong to no period:
		// the period is the last one the kernel counted. (Not the last
		// grid instant before the wakeup: the kernel's timer starts a
		// little after the origin, so a wakeup can fall between a grid
		// instant and its interrupt, and the periods after it would be
		// due before they came.)
		d.k = max(d.k+1, d.fired)
		d.owed, d.resync = 0, false
	} else {
		d.k++
		d.owed = max(n, 1) - 1
	}
	p.Due = d.origin + int64(d.k)*d.periodNS
	p.Avail = int32(min(d.owed+1, uint64(d.periods)))
	return nil
}

// Transfer applies the virtual buffer: the period due at p.Due is written
// now, and the buffer ran dry if that is after the last queued period
// played. The interrupt grid runs on regardless (a clock has no stream to
// restart): after an xrun the periods owed, and the interrupts that come
// until the next wakeup, are dropped, and the next period is the last
// interrupt before that wakeup — the grid's equivalent of a restart.
func (d *Driver) Transfer(p *rundata.Sample) error {
	if x := timer.Xrun(p.Due, d.now(), d.periods, d.periodNS); x > 0 {
		p.Xrun = x
		p.Flags |= rundata.FlagSimulated
		d.owed, d.resync = 0, true
	}
	return nil
}

// PinnableLoop reports that Wait and Transfer make only raw system calls.
func (d *Driver) PinnableLoop() bool { return true }

// Close turns the interrupt off and closes the device.
func (d *Driver) Close() error {
	if d.fd < 0 {
		return nil
	}
	d.ioctl(d.fd, unix.RTC_PIE_OFF, 0)
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}
