package nice

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// Every thread gets the value, read back from /proc (field 19 of stat).
func TestSetAllEveryThread(t *testing.T) {
	before, err := Get()
	if err != nil {
		t.Fatal(err)
	}
	defer SetAll(before)
	want := before + 1
	if err := SetAll(want); err != nil {
		t.Fatal(err)
	}
	tids, _ := os.ReadDir("/proc/self/task")
	if len(tids) < 2 {
		t.Fatalf("%d threads; a Go test binary has several", len(tids))
	}
	for _, tid := range tids {
		b, err := os.ReadFile("/proc/self/task/" + tid.Name() + "/stat")
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if got, _ := strconv.Atoi(f[16]); got != want {
			t.Errorf("thread %s: nice %d, want %d", tid.Name(), got, want)
		}
	}
	if got, _ := Get(); got != want {
		t.Errorf("Get %d, want %d", got, want)
	}
}
