package audio

import "testing"

func TestCodeMapping(t *testing.T) {
	cases := []struct {
		line       string
		start, end uint64
		ok         bool
	}{
		{"00400000-007c9000 r-xp 00000000 fe:00 9978109                            /usr/bin/latencytest", 0x400000, 0x7c9000, true},
		{"007c9000-00bf7000 r--p 003c9000 fe:00 9978109                            /tmp/my dir/latencytest", 0x7c9000, 0xbf7000, true},
		{"00bf7000-010fe000 rw-p 007f7000 fe:00 9978109                            /usr/bin/latencytest", 0, 0, false},
		{"010fe000-03136000 rw-p 00000000 00:00 0 ", 0, 0, false},
		{"7f0000000000-7f0000004000 r--s 00000000 00:06 412                        /dev/snd/pcmC0D0p", 0, 0, false},
		{"7f0000000000-7f0000004000 r--p 00000000 00:06 412                        /dev/zero", 0, 0, false},
		{"7ffd1a5e0000-7ffd1a5e2000 r-xp 00000000 00:00 0                          [vdso]", 0, 0, false},
		{"", 0, 0, false},
	}
	for _, c := range cases {
		start, end, ok := codeMapping(c.line)
		if ok != c.ok || start != c.start || end != c.end {
			t.Errorf("%q: %x-%x %v, want %x-%x %v", c.line, start, end, ok, c.start, c.end, c.ok)
		}
	}
}
