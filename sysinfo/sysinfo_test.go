package sysinfo

import (
	"bufio"
	"strings"
	"testing"
)

func TestPreemptModel(t *testing.T) {
	cases := []struct{ v, rt, dyn, want string }{
		{"#1 SMP PREEMPT_RT Debian 6.1.0-rt", "", "", "PREEMPT_RT"},
		{"#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1", "", "none voluntary (full)\n", "dynamic (full)"},
		{"#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1", "", "", "dynamic"},
		{"#1 SMP PREEMPT Mon Jan 1", "", "", "full"},
		{"#1 SMP Mon Jan 1", "1\n", "", "PREEMPT_RT"},
		{"#1 SMP Mon Jan 1", "", "", "voluntary or none"},
	}
	for _, c := range cases {
		if got := PreemptModel(c.v, c.rt, c.dyn); got != c.want {
			t.Errorf("PreemptModel(%q, %q, %q) = %q, want %q", c.v, c.rt, c.dyn, got, c.want)
		}
	}
}

func TestCPUModel(t *testing.T) {
	in := "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\nprocessor\t: 1\nmodel name\t: other\n"
	if got := CPUModel(bufio.NewScanner(strings.NewReader(in))); got != "Intel(R) Xeon(R) CPU @ 2.20GHz" {
		t.Errorf("CPUModel = %q", got)
	}
	if got := CPUModel(bufio.NewScanner(strings.NewReader("Hardware\t: BCM2835\n"))); got != "BCM2835" {
		t.Errorf("CPUModel arm = %q", got)
	}
}
