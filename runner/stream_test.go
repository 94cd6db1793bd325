package runner

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"latencytest/audio"
	"latencytest/audio/timer"
)

// A loopback's engine keeps a run's capture (the phase's, handed over
// at its end) and streams a monitor's (Config.Rotate: it never ends).
func TestEngineRequestCapture(t *testing.T) {
	cfg := Config{Driver: "alsa", Duration: 10 * time.Second, Audio: audio.Config{Loopback: true, Rate: 48000}}
	if req := engineRequestOf(context.Background(), cfg); req.Config.StreamCapture || req.Config.KeepFrames != 11*48000 {
		t.Errorf("run: streamed %v, %d frames kept; want 11 s kept", req.Config.StreamCapture, req.Config.KeepFrames)
	}
	cfg.Duration, cfg.Rotate = 0, time.Hour
	if req := engineRequestOf(context.Background(), cfg); !req.Config.StreamCapture || req.Config.KeepFrames != 0 {
		t.Errorf("monitor: streamed %v, %d frames kept; want streamed", req.Config.StreamCapture, req.Config.KeepFrames)
	}
}

// streamer is a driver whose capture is handed over as it is read: a
// piece written at once, the rest once it is told to stop.
type streamer struct {
	audio.Driver
	wrote chan struct{} // closed once the first piece is written
}

func (s streamer) StreamCapture(w io.Writer, done <-chan struct{}) error {
	w.Write([]byte("first "))
	close(s.wrote)
	<-done
	_, err := w.Write([]byte("last"))
	return err
}

// The engine hands a Streamer's capture over while its loop runs, when
// asked, and stops it once the loop is over with everything written;
// not asked, or a driver that does not stream, nothing.
func TestStreamCapture(t *testing.T) {
	req := engineRequest{Config: audio.Config{StreamCapture: true}}
	var out bytes.Buffer
	wrote := make(chan struct{})
	stop := streamCapture(streamer{timer.New(), wrote}, req, &out)
	<-wrote // while the loop would run
	if err := stop(); err != nil || out.String() != "first last" {
		t.Errorf("%q, %v; want first while it ran, last as it stopped", out.String(), err)
	}
	out.Reset()
	req.Config.StreamCapture = false
	if err := streamCapture(streamer{timer.New(), make(chan struct{})}, req, &out)(); err != nil || out.Len() != 0 {
		t.Errorf("not asked: %q, %v", out.String(), err)
	}
	req.Config.StreamCapture = true
	if err := streamCapture(timer.New(), req, &out)(); err != nil || out.Len() != 0 {
		t.Errorf("the timer driver: %q, %v", out.String(), err)
	}
}
