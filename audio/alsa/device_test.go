//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseDevice(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want deviceName
		err  string
	}{
		{in: "", want: deviceName{card: "", device: 0, subdevice: -1}},
		{in: "hw:0", want: deviceName{card: "0", device: 0, subdevice: -1}},
		{in: "hw:0,0", want: deviceName{card: "0", device: 0, subdevice: -1}},
		{in: "hw:Dummy,0", want: deviceName{card: "Dummy", device: 0, subdevice: -1}},
		{in: "hw:Loopback,1", want: deviceName{card: "Loopback", device: 1, subdevice: -1}},
		{in: "hw:Loopback,1,3", want: deviceName{card: "Loopback", device: 1, subdevice: 3}},
		{in: "hw:CARD=PCH,DEV=3", want: deviceName{card: "PCH", device: 3, subdevice: -1}},
		{in: "default", err: "usually card 0 (hw:0,0)"},
		{in: "plughw:0,0", err: "plug plugin over hw:0,0: give --device hw:0,0"},
		{in: "plughw:CARD=PCH,DEV=3", err: "give --device hw:PCH,3"},
		{in: "front:1", err: "front plugin over hw:1,0"},
		{in: "dmix", err: "give hw:CARD"},
		{in: "hw:", err: "hw:CARD"},
		{in: "hw:0,x", err: "dev must be a number"},
		{in: "hw:0,-1", err: "dev must be a number"},
		{in: "hw:0,0,0,0", err: "too many fields"},
		{in: "hw:DEV=1", err: "field 1 is DEV="},
		{in: "hw:,1", err: "empty card"},
	} {
		got, err := parseDevice(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--device") {
				t.Errorf("parseDevice(%q) = %+v, %v; want an error about --device containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseDevice(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// fixture builds a fake /dev/snd and /proc/asound: the control nodes are
// plain files, so card ids come from /proc/asound/cardN/id.
func fixture(t *testing.T) system {
	t.Helper()
	root := t.TempDir()
	s := system{dev: filepath.Join(root, "dev", "snd"), proc: filepath.Join(root, "proc", "asound")}
	files := map[string]string{
		"dev/snd/controlC0":                   "",
		"dev/snd/controlC1":                   "",
		"dev/snd/pcmC0D0p":                    "",
		"dev/snd/pcmC1D0p":                    "",
		"dev/snd/pcmC1D0c":                    "",
		"dev/snd/pcmC1D1p":                    "",
		"dev/snd/pcmC1D1c":                    "",
		"proc/asound/card0/id":                "Dummy\n",
		"proc/asound/card1/id":                "Loopback\n",
		"proc/asound/card1/pcm1c/sub0/status": "state: RUNNING\nowner_pid   : 4243\ntrigger_time: 1.2\n",
		"proc/asound/card1/pcm1c/sub1/status": "closed\n",
		"proc/4242/comm":                      "arecord\n",
		"proc/4243/status":                    "Name:\tarecord-io\nTgid:\t4242\nPid:\t4243\n",
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestResolveCards(t *testing.T) {
	s := fixture(t)
	for _, tc := range []struct {
		card  string
		index int
	}{{"", 0}, {"0", 0}, {"1", 1}, {"Dummy", 0}, {"Loopback", 1}} {
		c, err := s.resolve(deviceName{card: tc.card})
		if err != nil || c.index != tc.index {
			t.Errorf("resolve(%q) = %+v, %v; want card %d", tc.card, c, err, tc.index)
		}
	}
	_, err := s.resolve(deviceName{card: "PCH"})
	if err == nil || !strings.Contains(err.Error(), `no sound card "PCH"; cards here: 0 [Dummy], 1 [Loopback]`) {
		t.Errorf("resolve(PCH): %v", err)
	}
	if !s.anyPlayback() {
		t.Error("anyPlayback false with pcmC0D0p present")
	}
	c, _ := s.resolve(deviceName{card: "Loopback"})
	if got := s.describeDevices(c, streamCapture); got != "device 0, 1" {
		t.Errorf("capture devices of Loopback: %q", got)
	}
	if got := s.pcmPath(c, 1, streamCapture); filepath.Base(got) != "pcmC1D1c" {
		t.Errorf("pcmPath: %s", got)
	}
}

func TestHolderNamesProcess(t *testing.T) {
	s := fixture(t)
	c, _ := s.resolve(deviceName{card: "Loopback"})
	if got := s.holder(c, 1, streamCapture); got != "pid 4242 (arecord)" {
		t.Errorf("holder = %q, want pid 4242 (arecord)", got)
	}
	if got := s.holder(c, 0, streamPlayback); got != "" {
		t.Errorf("holder of an idle device = %q", got)
	}
}

func TestNoCards(t *testing.T) {
	s := system{dev: t.TempDir(), proc: t.TempDir()}
	if _, err := s.resolve(deviceName{}); err == nil || !strings.Contains(err.Error(), "no sound card") {
		t.Errorf("resolve with no cards: %v", err)
	}
	if s.anyPlayback() {
		t.Error("anyPlayback true with no nodes")
	}
}

func TestWhatToDo(t *testing.T) {
	for who, want := range map[string]string{
		"pid 812 (pipewire)":            "systemctl --user stop",
		"pid 90 (pulseaudio)":           "pasuspender",
		"pid 7 (jackd)":                 "stop jackd",
		"pid 5 (aplay)":                 "",
		"pid 812 (pipewire), pid 9 (x)": "PipeWire",
	} {
		got := whatToDo(who)
		if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("whatToDo(%q) = %q, want %q in it", who, got, want)
		}
	}
}
