package stress

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// Without --duration, hackbench runs one round and prints what rt-tests
// hackbench prints.
func TestHackbenchOneRound(t *testing.T) {
	for _, c := range []struct {
		args []string
		head string
	}{
		{[]string{"-g", "2", "-l", "20"}, "Running in process mode with 2 groups using 40 file descriptors each (== 80 tasks)\nEach sender will pass 20 messages of 100 bytes\n"},
		{[]string{"-g", "1", "-f", "5", "-l", "30", "-s", "512", "-p"}, "Running in process mode with 1 groups using 10 file descriptors each (== 10 tasks)\nEach sender will pass 30 messages of 512 bytes\n"},
		{[]string{"-T", "-g", "2", "-f", "4", "-l", "20"}, "Running in threaded mode with 2 groups using 8 file descriptors each (== 16 tasks)\nEach sender will pass 20 messages of 100 bytes\n"},
		{[]string{"-T", "-p", "-g", "1", "-f", "3", "-l", "10", "-s", "4096"}, "Running in threaded mode with 1 groups using 6 file descriptors each (== 6 tasks)\nEach sender will pass 10 messages of 4096 bytes\n"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main("latencytest", append([]string{"hackbench"}, c.args...), &stdout, &stderr); code != 0 {
			t.Fatalf("hackbench %v: exit %d: %s", c.args, code, stderr.String())
		}
		re := regexp.MustCompile("^" + regexp.QuoteMeta(c.head) + `Time: (\d+\.\d{3})\n$`)
		m := re.FindStringSubmatch(stdout.String())
		if m == nil {
			t.Fatalf("hackbench %v printed %q, want %q then Time: x.xxx", c.args, stdout.String(), c.head)
		}
		if _, err := strconv.ParseFloat(m[1], 64); err != nil {
			t.Errorf("hackbench %v: Time %q: %v", c.args, m[1], err)
		}
	}
}

func TestHackbenchTime(t *testing.T) {
	for d, want := range map[int64]string{0: "0.000", 1_999_999: "0.001", 606_900_000: "0.606", 12_345_678_901: "12.345"} {
		if got := hackbenchTime(time.Duration(d)); got != want {
			t.Errorf("hackbenchTime(%d ns) = %q, want %q", d, got, want)
		}
	}
}
