package audio_test

import (
	"errors"
	"testing"
	"time"

	"latencytest/audio"
)

// Answered hands back op's own error when op returns in time, and gives up
// on one still blocked after the wait.
func TestAnswered(t *testing.T) {
	want := errors.New("refused")
	if ok, err := audio.Answered(time.Second, func() error { return want }); !ok || err != want {
		t.Errorf("op returning at once: ok %v, err %v; want true, %v", ok, err, want)
	}
	block := make(chan struct{})
	defer close(block)
	start := time.Now()
	ok, err := audio.Answered(50*time.Millisecond, func() error { <-block; return nil })
	if ok || err != nil {
		t.Errorf("op blocked: ok %v, err %v; want false, nil", ok, err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("gave up after %v, before the wait of 50ms", d)
	}
}
