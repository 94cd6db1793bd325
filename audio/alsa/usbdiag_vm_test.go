//go:build vm

package alsa

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func tw(t *testing.T, p, v string) {
	if err := os.WriteFile("/sys/kernel/tracing/"+p, []byte(v), 0); err != nil {
		t.Logf("write %s: %v", p, err)
	}
}

func TestVMUSBDiag(t *testing.T) {
	cards := needCards(t)
	c := cards["usb"]
	unix.Mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, "")
	want := map[string]bool{"snd_pcm_period_elapsed": true, "__snd_pcm_xrun": true,
		"snd_usb_pcm_playback_ack": true, "prepare_playback_urb": true, "retire_playback_urb": true, "snd_usb_queue_pending_output_urbs": true,
		"pcm_lib_apply_appl_ptr": true, "snd_pcm_update_hw_ptr0": true, "snd_pcm_sync_ptr": true,
		"snd_pcm_do_start": true, "snd_pcm_do_stop": true, "snd_pcm_do_prepare": true, "snd_usb_pcm_prepare": true,
		"snd_usb_endpoint_start": true, "snd_usb_endpoint_stop": true, "snd_pcm_drop": true, "snd_complete_urb": true, "snd_pcm_hwsync": true,
		"snd_usb_endpoint_prepare": true, "sync_pending_stops": true, "stop_urbs": true, "wait_clear_urbs": true, "snd_usb_substream_playback_trigger": true}
	ff, _ := os.ReadFile("/sys/kernel/tracing/available_filter_functions")
	var have []string
	for _, l := range strings.Split(string(ff), "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && want[f[0]] {
			have = append(have, f[0])
		}
	}
	tw(t, "set_ftrace_filter", strings.Join(have, "\n"))
	tw(t, "current_tracer", "function")
	tw(t, "buffer_size_kb", "20000")
	for _, who := range []string{"aplay", "latencytest"} {
		tw(t, "trace", "")
		tw(t, "tracing_on", "1")
		if who == "aplay" {
			a := startAplayOn(t, c.hw(), 64, 4, 3*time.Second, true, -1)
			time.Sleep(1500 * time.Millisecond)
			syscall.Kill(a.cmd.Process.Pid, syscall.SIGSTOP)
			time.Sleep(300 * time.Millisecond)
			tw(t, "trace", "")
			syscall.Kill(a.cmd.Process.Pid, syscall.SIGCONT)
			a.cmd.Wait()
			t.Logf("aplay: %d underruns", len(a.out.xruns()))
		} else {
			dir := filepath.Join(t.TempDir(), "x")
			out, err := exec.Command(vmBinary, "run", "--driver", "alsa", "--device", c.hw(), "--period", "64", "--periods", "4",
				"--tests", "idle", "--duration", "4s", "--cpu-load", "0", "--no-report", "--quiet", "--out", dir).CombinedOutput()
			t.Logf("latencytest: %v\n%s", err, out)
		}
		tw(t, "tracing_on", "0")
		b, _ := os.ReadFile("/sys/kernel/tracing/trace")
		lines := strings.Split(string(b), "\n")
		idx := 0
		if who == "latencytest" {
			for i, l := range lines {
				if strings.Contains(l, "__snd_pcm_xrun") && i > 100 {
					idx = i
					break
				}
			}
		}
		var keep []string
		for _, l := range lines[idx:] {
			if strings.Contains(l, "snd_complete_urb") || strings.Contains(l, "retire_playback") || strings.HasPrefix(strings.TrimSpace(l), "#") {
				continue
			}
			keep = append(keep, l)
		}
		head := keep[:min(70, len(keep))]
		tail := keep[max(len(keep)-30, 0):]
		t.Logf("TRACE %s (%d lines):\n%s\n...\n%s", who, len(keep), strings.Join(head, "\n"), strings.Join(tail, "\n"))
	}
}
