//go:build portaudio

package main

import (
	"latencytest/audio"
	"latencytest/audio/portaudio"
)

// portaudioDrivers returns the PortAudio driver (JACK, the ALSA plugins of
// PulseAudio and PipeWire, OSS). --driver auto takes it when a JACK server
// is running and no ALSA card is.
func portaudioDrivers() []driverEntry {
	return []driverEntry{{name: "portaudio", new: func() audio.Driver { return portaudio.New() }, present: portaudio.JackRunning}}
}
