//go:build vm

package alsa

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"latencytest/internal/bintest"
)

// aplayGrants runs aplay -v with flags on hw:0,0,0 for a second and reads
// the period and buffer (frames) alsa-lib granted from its hw params dump.
func aplayGrants(t *testing.T, flags ...string) (period, buffer int) {
	t.Helper()
	args := append([]string{"-v", "-D", "hw:0,0,0", "-t", "raw", "-f", "S16_LE", "-c", "2", "-r", "48000", "-d", "1"}, flags...)
	out, err := exec.Command(aplayBinary, append(args, "/dev/zero")...).CombinedOutput()
	if err != nil {
		t.Fatalf("aplay %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	field := func(name string) int {
		m := regexp.MustCompile(`(?m)^\s*` + name + `\s*:\s*(\d+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("aplay -v printed no %s:\n%s", name, out)
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	return field("period_size"), field("buffer_size")
}

// aplay's own flags, given to latencytest, grant on snd-dummy what they
// grant aplay: a bug report's command line translates one to one.
func TestVMAplayFlags(t *testing.T) {
	needAplay(t)
	for _, flags := range [][]string{
		{"--period-size=128", "--buffer-size=512"},
		{"--period-size=64", "--buffer-size=192"},
		{"--period-time=2667", "--buffer-time=10667"},
	} {
		ap, ab := aplayGrants(t, flags...)
		out := filepath.Join(t.TempDir(), "x")
		args := []string{"run", "--driver", "alsa", "--device", "hw:0,0,0", "--tests", "idle", "--duration", "1s",
			"--cpu-load", "0", "--no-report", "--quiet", "--out", out}
		for _, f := range flags {
			name, v, _ := strings.Cut(f, "=")
			args = append(args, name, v)
		}
		if b, err := exec.Command(vmBinary, args...).CombinedOutput(); err != nil {
			t.Fatalf("latencytest %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		r := bintest.ReadRun(t, out)
		if r.PeriodFrames != ap || r.PeriodFrames*r.Periods != ab {
			t.Errorf("%v: latencytest granted %d × %d = %d frames, aplay %d frames of %d", flags, r.PeriodFrames, r.Periods, r.PeriodFrames*r.Periods, ap, ab)
		} else {
			t.Logf("%v: both granted periods of %d frames, a buffer of %d", flags, ap, ab)
		}
	}
}
