package stress

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// A forked hackbench worker gives back the parent's memory before it says
// it is ready, so that its exit, which the round times, is as cheap as a
// small C process's.
func TestForkedWorkerDropsMemory(t *testing.T) {
	if _, ok := threadPointer(); !ok {
		t.Skip("workers keep their memory on this architecture")
	}
	runtime.LockOSThread() // the child follows this thread's death
	defer runtime.UnlockOSThread()
	var rw, ww [2]int
	if err := unix.Pipe2(rw[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rw[0])
	defer unix.Close(rw[1])
	if err := unix.Pipe2(ww[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ww[0])
	defer unix.Close(ww[1])
	a := &forkArgs{role: childSender, readyFd: uintptr(rw[1]), wakeFd: uintptr(ww[0]), closeFd: ^uintptr(0),
		datasize: 1, buf: make([]byte, 1), one: [1]byte{'R'}}
	a.setDrop()
	pid, err := rawFork(a)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		unix.Kill(pid, unix.SIGKILL)
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, 0, nil)
	}()
	var b [1]byte
	if n, err := unix.Read(rw[0], b[:]); n != 1 {
		t.Fatalf("worker not ready: %v", err)
	}
	drop := a.drop[:a.ndrop]
	ours, child := rssIn(t, os.Getpid(), drop), rssIn(t, pid, drop)
	if child*2 > ours {
		t.Errorf("worker holds %d kB of the parent's anonymous mappings, the parent %d kB: want less than half", child, ours)
	}
	// And it still works: start it; with 0 loops it exits at once, cleanly.
	if _, err := unix.Write(ww[1], b[:]); err != nil {
		t.Fatal(err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Exited() || ws.ExitStatus() != 0 {
		t.Errorf("worker: %v, status %v", err, ws)
	}
}

// rssIn is the resident memory of process pid in mappings that lie within
// ranges, in kB.
func rssIn(t *testing.T, pid int, ranges [][2]uintptr) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		t.Fatal(err)
	}
	in, total := false, 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(f[0], "-"); ok && len(f) >= 5 {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			in = false
			for _, r := range ranges {
				if err1 == nil && err2 == nil && uintptr(l) >= r[0] && uintptr(h) <= r[1] {
					in = true
				}
			}
			continue
		}
		if in && f[0] == "Rss:" && len(f) > 1 {
			kb, _ := strconv.Atoi(f[1])
			total += kb
		}
	}
	return total
}
