package ktrace

import (
	"latencytest/internal/mono"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Once Audio names the audio thread, the kernel records its wakeups only;
// after Audio(Thread{}), every thread's again. The audio thread here is a
// locked thread woken by its timer every millisecond; the others are this
// process's sleeping goroutines' threads and the machine's own.
func TestAudioFiltersWakeups(t *testing.T) {
	s, err := Start(Options{})
	if err != nil {
		t.Fatalf("tracing needs tracefs and root here: %v", err)
	}
	defer s.Stop()
	stop, tids := make(chan struct{}), make(chan int)
	go sleeper(stop, tids)
	audio := Thread{TID: <-tids}
	defer close(stop)
	for _, c := range []struct {
		name   string
		filter Thread
	}{{"filtered", audio}, {"unfiltered", Thread{}}, {"filtered again", audio}} {
		if err := s.Audio(c.filter); err != nil {
			t.Fatal(err)
		}
		from := mono.Now()
		deadline := time.Now().Add(300 * time.Millisecond)
		for time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		to := mono.Now()
		own, others := wakeupsBetween(t, s, audio, from, to)
		t.Logf("%s: %d wakeups of the audio thread in 300 ms, %d of others", c.name, own, others)
		if own == 0 {
			t.Errorf("%s: no wakeup of the audio thread recorded", c.name)
		}
		if filtered := c.filter != (Thread{}); filtered != (others == 0) {
			t.Errorf("%s: %d wakeups of other threads recorded", c.name, others)
		}
	}
}

// sleeper sends its thread's id, then sleeps a millisecond at a time on
// that thread until stop is closed.
func sleeper(stop <-chan struct{}, tid chan<- int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid <- unix.Gettid()
	for {
		select {
		case <-stop:
			return
		default:
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 1e6}, nil)
	}
}

// wakeupsBetween counts the wakeups s recorded from from to to, of audio
// and of other threads, once the trace has reached to.
func wakeupsBetween(t *testing.T, s *Session, audio Thread, from, to int64) (own, others int) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		s.mu.Lock()
		if s.upTo >= to || time.Now().After(deadline) {
			break
		}
		s.mu.Unlock()
	}
	defer s.mu.Unlock()
	if s.upTo < to {
		t.Fatalf("the trace did not reach the end of the window in 2 s (%d ns short)", to-s.upTo)
	}
	for _, l := range s.cpus {
		for _, ev := range l.evs {
			switch {
			case ev.Kind != evWakeup || ev.TS < from || ev.TS > to:
			case audio.is(ev.PID, ev.Comm):
				own++
			default:
				others++
			}
		}
	}
	return own, others
}
