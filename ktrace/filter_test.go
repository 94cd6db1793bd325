package ktrace

import (
	"latencytest/internal/mono"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Once Audio names the audio threads, the kernel records their wakeups
// only; after Audio(Thread{}), every thread's again. The audio threads
// here are two locked threads woken by their timers every millisecond (run
// --cpus has one per CPU); the others are this process's sleeping
// goroutines' threads and the machine's own.
func TestAudioFiltersWakeups(t *testing.T) {
	s, err := Start(Options{})
	if err != nil {
		t.Fatalf("tracing needs tracefs and root here: %v", err)
	}
	defer s.Stop()
	stop, tids := make(chan struct{}), make(chan int)
	go sleeper(stop, tids)
	go sleeper(stop, tids)
	a, b := Thread{TID: <-tids}, Thread{TID: <-tids}
	defer close(stop)
	for _, c := range []struct {
		name   string
		filter []Thread
		kept   []Thread // whose wakeups are recorded, besides any other's
	}{
		{"one", []Thread{a}, []Thread{a}},
		{"unfiltered", []Thread{{}}, []Thread{a, b}},
		{"both", []Thread{a, b}, []Thread{a, b}},
		{"none named", nil, []Thread{a, b}},
	} {
		if err := s.Audio(c.filter...); err != nil {
			t.Fatal(err)
		}
		from := mono.Now()
		deadline := time.Now().Add(300 * time.Millisecond)
		for time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		to := mono.Now()
		filtered := len(c.filter) > 0 && c.filter[0] != (Thread{})
		for _, th := range []Thread{a, b} {
			own, others := wakeupsBetween(t, s, th, from, to)
			t.Logf("%s: %d wakeups of thread %d in 300 ms, %d of others", c.name, own, th.TID, others)
			if kept := slices.Contains(c.kept, th); kept != (own > 0) {
				t.Errorf("%s: %d wakeups of thread %d recorded; want them kept: %v", c.name, own, th.TID, kept)
			}
			if !filtered && others == 0 {
				t.Errorf("%s: no other thread's wakeup recorded", c.name)
			}
		}
		if filtered {
			own, others := wakeupsBetween(t, s, a, from, to)
			if len(c.kept) == 2 {
				own2, _ := wakeupsBetween(t, s, b, from, to)
				others -= own2
			}
			if others != 0 {
				t.Errorf("%s: %d wakeups of threads not named recorded (%d of thread %d)", c.name, others, own, a.TID)
			}
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
