//go:build linux && (amd64 || arm64 || arm || 386)

package main

import (
	"latencytest/audio"
	"latencytest/audio/alsa"
)

// alsaDrivers returns the ALSA driver; --driver auto prefers it whenever a
// playback PCM node exists under /dev/snd.
func alsaDrivers() []driverEntry {
	return []driverEntry{{name: "alsa", new: func() audio.Driver { return alsa.New() }, present: alsa.Present}}
}
