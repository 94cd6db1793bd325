package main

import (
	"latencytest/audio"
	"latencytest/audio/timer"
)

// driverEntry is one driver built into this binary.
type driverEntry struct {
	name string
	new  func() audio.Driver
	// present reports whether the driver has something to open on this
	// machine; --driver auto takes the first present one.
	present func() bool
}

// drivers lists the built-in drivers in the order --driver auto prefers
// them: a real soundcard first, the timer last.
func drivers() []driverEntry {
	var d []driverEntry
	d = append(d, alsaDrivers()...)
	d = append(d, jackDrivers()...)
	d = append(d, portaudioDrivers()...)
	d = append(d, rtcDrivers()...)
	d = append(d, driverEntry{name: "timer", new: func() audio.Driver { return timer.New() }, present: func() bool { return true }})
	return d
}

func driverNames() []string {
	var n []string
	for _, d := range drivers() {
		n = append(n, d.name)
	}
	return n
}

// allDriverNames is what --driver accepts, built in or not, so that asking
// for a driver this build lacks can say how to get it.
func allDriverNames() []string { return []string{"auto", "timer", "alsa", "portaudio", "jack", "rtc"} }

func lookupDriver(name string) (driverEntry, bool) {
	for _, d := range drivers() {
		if d.name == name {
			return d, true
		}
	}
	return driverEntry{}, false
}

// autoDriver returns the first driver with a device present.
func autoDriver() driverEntry {
	ds := drivers()
	for _, d := range ds {
		if d.present() {
			return d
		}
	}
	return ds[len(ds)-1]
}
