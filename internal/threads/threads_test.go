package threads

import (
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Every thread of the process gets the affinity, read back from /proc,
// including threads the runtime starts later (they inherit it).
func TestSetAffinityEveryThread(t *testing.T) {
	all, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 2 {
		t.Fatalf("allowed CPUs %v: the test needs two (a split of one CPU says nothing)", all)
	}
	defer SetAffinity(all)
	want := all[len(all)-1:]
	if err := SetAffinity(want); err != nil {
		t.Fatal(err)
	}
	// New threads: a locked goroutine forces the runtime to start one.
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		<-done
	}()
	defer close(done)
	Each(func(tid int) error {
		b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/status")
		if err != nil {
			return nil // ended meanwhile
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok && strings.TrimSpace(v) != strconv.Itoa(want[0]) {
				t.Errorf("thread %d: Cpus_allowed_list %s, want %d", tid, strings.TrimSpace(v), want[0])
			}
		}
		return nil
	})
}

func TestWithout(t *testing.T) {
	if got := Without([]int{0, 1, 2, 3}, []int{1, 3}); !reflect.DeepEqual(got, []int{0, 2}) {
		t.Errorf("got %v", got)
	}
	if got := Without([]int{1}, []int{1}); got != nil {
		t.Errorf("got %v, want none", got)
	}
	if got := Format([]int{0, 2, 3, 4, 7}); got != "0,2-4,7" {
		t.Errorf("Format = %q", got)
	}
	s := Set([]int{0, 5, 70})
	if got := List(&s); !reflect.DeepEqual(got, []int{0, 5, 70}) {
		t.Errorf("List(Set) = %v", got)
	}
}
