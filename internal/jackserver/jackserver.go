// Package jackserver finds the JACK server a client of this process would
// connect to, without libjack: --driver auto's check for the drivers that
// reach JACK (audio/portaudio, audio/jack), which must not start a client
// (or, for PortAudio, probe every ALSA device) to ask.
package jackserver

import (
	"fmt"
	"os"
	"path/filepath"
)

// Name is the server a client connects to by default: JACK_DEFAULT_SERVER,
// else "default".
func Name() string {
	if n := os.Getenv("JACK_DEFAULT_SERVER"); n != "" {
		return n
	}
	return "default"
}

// Socket is where jackd2 makes the socket of the server named name on
// Linux, for this user.
func Socket(name string) string {
	return filepath.Join("/dev/shm", fmt.Sprintf("jack_%s_%d_0", name, os.Getuid()))
}

// Running reports whether the default server (Name) is up: its socket is
// there.
func Running() bool {
	_, err := os.Stat(Socket(Name()))
	return err == nil
}
