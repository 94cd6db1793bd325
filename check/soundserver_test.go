package check

import (
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// serverEnv is a machine whose card 0 has an HDA interrupt line, threaded
// at irqPrio, and whose playback substream pid holds (0: closed), pid's
// comm and its threads' priorities (SCHED_FIFO; 0: SCHED_OTHER).
func serverEnv(irqPrio int, pid int, comm string, prios ...int) *env {
	fsys := fstest.MapFS{
		"proc/interrupts":                        file("           CPU0       CPU1\n 129:       1000          0  IR-PCI-MSI 512000-edge      snd_hda_intel:card0\n"),
		"proc/asound/cards":                      file(" 0 [PCH            ]: HDA-Intel - HDA Intel PCH\n"),
		"proc/130/comm":                          file("irq/129-snd_hda_intel:card0\n"),
		"proc/130/stat":                          file(taskStat(130, "irq/129-snd_hda_intel:card0", true, irqPrio, schedFIFO)),
		"proc/asound/card0/pcm0p/sub0/status":    file("closed\n"),
		"proc/asound/card0/pcm0p/sub0/hw_params": file("closed\n"),
	}
	if pid != 0 {
		p := strconv.Itoa(pid)
		fsys["proc/asound/card0/pcm0p/sub0/status"] = file("state: RUNNING\nowner_pid   : " + p + "\ntrigger_time: 1.0\n")
		fsys["proc/asound/card0/pcm0p/sub0/hw_params"] = file("access: MMAP_INTERLEAVED\nformat: S32_LE\nsubformat: STD\nchannels: 2\nrate: 48000 (48000/1)\nperiod_size: 1024\nbuffer_size: 2048\n")
		fsys["proc/"+p+"/comm"] = file(comm + "\n")
		for i, prio := range prios {
			policy := schedFIFO
			if prio == 0 {
				policy = 0
			}
			addTask(fsys, pid, pid+i, comm, false, prio, policy, "0-3")
		}
	}
	return &env{fsys: fsys}
}

// check says which server holds the card, at which shape, and judges its
// real-time thread against the card's interrupt thread.
func TestCheckSoundServer(t *testing.T) {
	for _, c := range []struct {
		name   string
		e      *env
		status string
		has    []string
	}{
		{"nothing", serverEnv(90, 0, ""), OK, []string{"no sound server runs"}},
		{"PipeWire below the IRQ thread", serverEnv(90, 812, "pipewire", 0, 88), INFO,
			[]string{"hw:0,0 playback held by PipeWire (pipewire, pid 812), 48000 Hz, period 1024, buffer 2048 frames", "SCHED_FIFO 88", "below the card's interrupt thread irq/129-snd_hda_intel:card0 SCHED_FIFO 90"}},
		{"PipeWire above the IRQ thread", serverEnv(50, 812, "pipewire", 0, 88), WARN, []string{"not below the card's interrupt thread", "SCHED_FIFO 50"}},
		{"jackd not real-time", serverEnv(90, 700, "jackd", 0, 0), WARN, []string{"held by JACK (jackd, pid 700)", "none of its threads is real-time"}},
		{"an application", serverEnv(90, 1500, "aplay", 0), INFO, []string{"held by aplay (pid 1500)", "an application"}},
	} {
		fs := checkSoundServer(c.e)
		if len(fs) != 1 {
			t.Fatalf("%s: %d findings %+v, want 1", c.name, len(fs), fs)
		}
		f := fs[0]
		if f.Name != nameSoundServer || f.Status != c.status {
			t.Errorf("%s: %s %s, want %s %s", c.name, f.Name, f.Status, nameSoundServer, c.status)
		}
		for _, h := range c.has {
			if !strings.Contains(f.Value, h) {
				t.Errorf("%s: %q lacks %q", c.name, f.Value, h)
			}
		}
	}
}

// A server that runs with no card open (PipeWire suspends idle ones) is
// said, not passed over as nothing.
func TestCheckSoundServerIdle(t *testing.T) {
	e := serverEnv(90, 0, "")
	e.fsys.(fstest.MapFS)["proc/812/comm"] = file("pipewire\n")
	f := checkSoundServer(e)[0]
	if f.Status != INFO || !strings.Contains(f.Value, "PipeWire (pipewire, pid 812) running, holding no card now") {
		t.Errorf("%s %q, want PipeWire running without a card", f.Status, f.Value)
	}
}
