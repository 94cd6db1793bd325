package audio

import "time"

// Answered runs op, a call into a C audio library that waits for another
// thread to act on it (a JACK server's, a host API's process thread), and
// gives up after wait: a thread that stopped running would otherwise hold
// the engine for ever (PortAudio's JACK host waits ten minutes). ok is
// false when op did not return in time; op then stays blocked on its own
// goroutine until the process exits, and its caller must not use the
// library's handle again.
func Answered(wait time.Duration, op func() error) (ok bool, err error) {
	done := make(chan error, 1)
	go func() { done <- op() }()
	select {
	case err := <-done:
		return true, err
	case <-time.After(wait):
		return false, nil
	}
}
