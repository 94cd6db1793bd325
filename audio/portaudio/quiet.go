//go:build portaudio

package portaudio

import (
	"os"

	"golang.org/x/sys/unix"
)

// quietStderr points file descriptor 2 at /dev/null until the returned
// function is called. PortAudio's ALSA host API probes every PCM at
// initialisation and alsa-lib prints "ALSA lib ..." lines for each one it
// cannot open, and libjack prints "Cannot connect to server" when no JACK
// server runs: noise for someone who asked for another device. The C
// libraries write to the descriptor directly, so os.Stderr cannot be
// swapped instead. With verbose set nothing is hidden.
func quietStderr(verbose bool) (restore func()) {
	if verbose {
		return func() {}
	}
	saved, err := unix.Dup(2)
	if err != nil {
		return func() {}
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		unix.Close(saved)
		return func() {}
	}
	defer null.Close()
	if err := unix.Dup2(int(null.Fd()), 2); err != nil {
		unix.Close(saved)
		return func() {}
	}
	return func() {
		unix.Dup2(saved, 2)
		unix.Close(saved)
	}
}
