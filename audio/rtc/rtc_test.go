//go:build linux

package rtc

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"latencytest/audio"
	"latencytest/internal/badinput"
	"latencytest/rundata"
)

// fake is an RTC made of a pipe: each word written is what one read(2) of
// /dev/rtc returns (interrupt count << 8 | flags).
type fake struct {
	r, w   int
	clock  int64 // CLOCK_MONOTONIC as the driver sees it
	calls  []uint
	ioctlE error
}

func newFake(t *testing.T) (*Driver, *fake) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	f := &fake{r: p[0], w: p[1]}
	t.Cleanup(func() { unix.Close(f.w) })
	d := New()
	d.now = func() int64 { return f.clock }
	d.open = func(string) (int, error) { return f.r, nil }
	d.ioctl = func(_ int, req uint, _ uintptr) error {
		f.calls = append(f.calls, req)
		if req == unix.RTC_IRQP_SET {
			return f.ioctlE
		}
		return nil
	}
	return d, f
}

// irq delivers n interrupts at once, as a read after n of them returns.
func (f *fake) irq(t *testing.T, n uint64) {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], n<<8|0xc0)
	if _, err := unix.Write(f.w, b[:]); err != nil {
		t.Fatal(err)
	}
}

func cfg(rate, periods int) audio.Config {
	return audio.Config{Rate: rate, Channels: 2, PeriodFrames: 1, Periods: periods}
}

// Dues lie on the interrupt grid; interrupts that came during a stall are
// replayed, each due at its own instant; an xrun drops those still owed.
func TestGridAndMissedInterrupts(t *testing.T) {
	for _, c := range []struct {
		name    string
		periods int
		want    []int64 // interrupt numbers of the samples after the stall
	}{
		{"replayed", 16, []int64{2, 3, 4, 5, 6}},
		{"xrun drops the rest", 2, []int64{2, 11, 12}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, f := newFake(t)
			g, err := d.Open(cfg(2048, c.periods))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if g.Rate != 2048 || g.PeriodFrames != 1 || !g.Simulated || d.periodNS != 488281 {
				t.Fatalf("granted %+v, period %d ns", g, d.periodNS)
			}
			f.clock = 1e9
			start, _ := d.Start()
			var s rundata.Sample
			f.clock += 488281 + 20e3 // the first interrupt, and 20 µs to wake
			f.irq(t, 1)
			if d.Wait(&s); s.Due != start+488281 || s.Latency() != 20e3 {
				t.Fatalf("first due %d after the origin, latency %d, want one period and 20 µs", s.Due-start, s.Latency())
			}
			d.Transfer(&s)
			// Five interrupts came while the thread was away for 5 ms: the
			// sample is the oldest; then the rest, or after an xrun (a
			// 2-period buffer is 1 ms) the next one to come.
			f.clock += 5e6
			f.irq(t, 5)
			var got []int64
			for range len(c.want) {
				if c.name == "xrun drops the rest" && len(got) == 1 {
					// The next wakeup comes 10 µs after grid instant 12,
					// but the kernel's timer, started a little after the
					// origin, has fired only 11 so far (five more): the
					// period is interrupt 11, and the next one 12, never
					// due before it came.
					f.clock = start + 12*488281 + 10e3
					f.irq(t, 5)
				}
				if c.name == "xrun drops the rest" && len(got) == 2 {
					f.clock = start + 12*488281 + 60e3
					f.irq(t, 1)
				}
				s = rundata.Sample{}
				if err := d.Wait(&s); err != nil {
					t.Fatal(err)
				}
				d.Transfer(&s)
				if first := len(got) == 0; first && (s.Xrun > 0) != (c.periods == 2) {
					t.Errorf("first sample after the stall: xrun %d ns with %d periods", s.Xrun, c.periods)
				}
				if s.Latency() < 0 {
					t.Errorf("sample %d due %d ns after its wakeup", len(got), -s.Latency())
				}
				got = append(got, (s.Due-start)/488281)
				if (s.Due-start)%488281 != 0 {
					t.Fatalf("due %d ns after the origin, off the grid", s.Due-start)
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("interrupts %v, want %v", got, c.want)
			}
		})
	}
}

// Bad input is one line naming the flag or device and what is allowed.
func TestOpenErrors(t *testing.T) {
	for _, c := range []struct {
		rate  int
		ioctl error
		want  string
	}{
		{3000, nil, "--rtc-rate 3000: allowed a power of two from 2 to 8192 Hz"},
		{16384, nil, "--rtc-rate 16384: allowed a power of two"},
		{4096, unix.EACCES, "--rtc-rate 4096: above this RTC's max_user_freq"},
		{4096, unix.EINVAL, "--rtc-rate 4096: /dev/rtc0 refuses it"},
	} {
		d, f := newFake(t)
		f.ioctlE = c.ioctl
		_, err := d.Open(cfg(c.rate, 2))
		if !badinput.Is(err) || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("rate %d, ioctl %v: %v, want a bad-device error starting %q", c.rate, c.ioctl, err, c.want)
		}
		if d.fd != -1 {
			t.Errorf("rate %d: device left open", c.rate)
		}
	}
	d := New()
	_, err := d.Open(audio.Config{Device: "/nonexistent/rtc9", Rate: 2048, PeriodFrames: 1, Periods: 2})
	if !badinput.Is(err) || !strings.Contains(err.Error(), `--device "/nonexistent/rtc9": no such RTC`) {
		t.Errorf("missing device: %v", err)
	}
}
