//go:build linux

package main

import (
	"latencytest/audio"
	"latencytest/audio/rtc"
)

// rtcDrivers returns the RTC driver, the original latencytest's test. It is
// never --driver auto's choice: its period is the RTC's, not a soundcard's.
func rtcDrivers() []driverEntry {
	return []driverEntry{{name: "rtc", new: func() audio.Driver { return rtc.New() }, present: func() bool { return false }}}
}
