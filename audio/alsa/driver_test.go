//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"strings"
	"testing"

	"latencytest/audio"
	"latencytest/internal/badinput"
)

// Open refuses what no device could fix with one line naming the flag,
// and leaves nothing open.
func TestOpenRefusesBadConfig(t *testing.T) {
	ok := audio.Config{Rate: 48000, Channels: 2, PeriodFrames: 64, Periods: 2}
	for _, tc := range []struct {
		edit func(*audio.Config)
		want string
	}{
		{func(c *audio.Config) { c.Stream = "both" }, `--stream "both": want playback, capture or duplex`},
		{func(c *audio.Config) { c.Periods = 1 }, "--periods 1: need all > 0 and periods ≥ 2"},
		{func(c *audio.Config) { c.ToneHz, c.File = 440, "x.wav" }, "--tone and --file: choose one"},
		{func(c *audio.Config) { c.ToneHz = 30000 }, "--tone 30000: want a frequency between 0 and 24000 Hz"},
		{func(c *audio.Config) { c.Loopback = true }, "--loopback with --stream playback, --channels 2, --tone 0, --file \"\": want --stream duplex"},
		{func(c *audio.Config) { c.Loopback, c.Stream, c.Channels = true, "duplex", 1 }, "--channels 1"},
		{func(c *audio.Config) { c.Loopback, c.Stream, c.ToneHz = true, "duplex", 440 }, "--tone 440"},
		{func(c *audio.Config) { c.Device = "plughw:0" }, "plug plugin over hw:0,0"},
		{func(c *audio.Config) {}, "no sound card"},
	} {
		cfg := ok
		tc.edit(&cfg)
		d := &Driver{sys: system{dev: t.TempDir(), proc: t.TempDir()}}
		_, err := d.Open(cfg)
		if !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Open(%+v) = %v; want a one-line bad input containing %q", cfg, err, tc.want)
		}
		if d.sides != nil || d.play != nil || d.capt != nil {
			t.Errorf("Open(%+v) failed but left sides open", cfg)
		}
	}
}

func TestStateName(t *testing.T) {
	if stateName(stateXrun) != "xrun" || stateName(stateDisconnected) != "disconnected" || stateName(42) != "state 42" {
		t.Errorf("state names: %s %s %s", stateName(stateXrun), stateName(stateDisconnected), stateName(42))
	}
}
