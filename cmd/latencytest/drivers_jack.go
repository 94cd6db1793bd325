//go:build jack

package main

import (
	"latencytest/audio"
	"latencytest/audio/jack"
)

// jackDrivers returns the native JACK driver, a client of the server whose
// period is the server's cycle. --driver auto takes it, before PortAudio,
// when a JACK server is running and no ALSA card is.
func jackDrivers() []driverEntry {
	return []driverEntry{{name: "jack", new: func() audio.Driver { return jack.New() }, present: jack.Present}}
}
