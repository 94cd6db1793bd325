package cpulist

import (
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string][]int{
		"0": {0}, "0-3,6": {0, 1, 2, 3, 6}, "1,0-1": {1, 0}, "5-5": {5},
	} {
		if got, ok := Parse(in); !ok || !slices.Equal(got, want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "a", "1-", "-1", "3-1", "1,,2", "0-99999999", " 1"} {
		if got, ok := Parse(in); ok {
			t.Errorf("Parse(%q) = %v, want refused", in, got)
		}
	}
}

// What Format writes, Parse reads back.
func TestFormatParses(t *testing.T) {
	cpus := []int{0, 2, 3, 17}
	s := Format(cpus)
	if got, ok := Parse(s); s != "0,2,3,17" || !ok || !slices.Equal(got, cpus) {
		t.Errorf("Format = %q, read back %v, %v", s, got, ok)
	}
	if Format(nil) != "" {
		t.Errorf("Format(nil) = %q", Format(nil))
	}
}
