//go:build vm

package vmsmoke

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	// cmd/vminit sets VMTEST=1; on any other machine these tests would
	// fail for want of the VM's kernel, with less helpful messages.
	if os.Getenv("VMTEST") != "1" {
		fmt.Fprintln(os.Stderr, "vmsmoke: these tests run inside the test VM; use scripts/vmtest")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// cardLine matches the first line of each card in /proc/asound/cards:
// " 0 [Dummy          ]: Dummy - Dummy".
var cardLine = regexp.MustCompile(`^\s*(\d+) \[(\S+)\s*\]: (\S+) - (.*)$`)

// cards maps the card id (what hw:ID names) to its index.
func cards(t *testing.T) map[string]int {
	t.Helper()
	f, err := os.Open("/proc/asound/cards")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := cardLine.FindStringSubmatch(sc.Text()); m != nil {
			n, _ := strconv.Atoi(m[1])
			ids[m[2]] = n
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// wantCards are the cards the VM has: snd-dummy's and snd-aloop's, or
// snd-aloop's alone where the kernel has no snd-dummy, which
// scripts/vmtest then says in VMTEST_NO_SND_DUMMY.
func wantCards() map[string][]string {
	// snd-dummy has one PCM device; snd-aloop two, cross-connected:
	// what is played on 0 is captured on 1 and the other way round.
	want := map[string][]string{"Dummy": {"D0p", "D0c"}, "Loopback": {"D0p", "D0c", "D1p", "D1c"}}
	if os.Getenv("VMTEST_NO_SND_DUMMY") != "" {
		delete(want, "Dummy")
	}
	return want
}

func TestCardsListed(t *testing.T) {
	ids := cards(t)
	for id := range wantCards() {
		if _, ok := ids[id]; !ok {
			b, _ := os.ReadFile("/proc/asound/cards")
			t.Errorf("no %s card in /proc/asound/cards:\n%s", id, b)
		}
	}
}

func TestPCMNodes(t *testing.T) {
	ids := cards(t)
	for id, streams := range wantCards() {
		n, ok := ids[id]
		if !ok {
			t.Errorf("no %s card", id)
			continue
		}
		nodes := []string{fmt.Sprintf("/dev/snd/controlC%d", n)}
		for _, s := range streams {
			nodes = append(nodes, fmt.Sprintf("/dev/snd/pcmC%d%s", n, s))
		}
		for _, node := range nodes {
			st, err := os.Stat(node)
			if err != nil {
				t.Errorf("%s card: %v", id, err)
				continue
			}
			if st.Mode()&os.ModeCharDevice == 0 {
				t.Errorf("%s is %v, not a character device", node, st.Mode())
			}
		}
	}
}

func TestLatencytestOnPath(t *testing.T) {
	p, err := exec.LookPath("latencytest")
	if err != nil {
		t.Fatalf("latencytest not on PATH %q: %v", os.Getenv("PATH"), err)
	}
	out, err := exec.Command(p, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", p, err, out)
	}
	if !strings.HasPrefix(string(out), "latencytest ") || !strings.Contains(string(out), "drivers:") {
		t.Fatalf("%s version printed %q, want \"latencytest VERSION\\ndrivers: ...\"", p, out)
	}
}

// TestEnvironment checks the rest of what docs/vmtest.md promises tests.
func TestEnvironment(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Errorf("euid %d, want root", os.Geteuid())
	}
	for _, dir := range []string{os.TempDir(), t.TempDir(), "/dev/shm"} {
		f, err := os.CreateTemp(dir, "w")
		if err != nil {
			t.Errorf("%s not writable: %v", dir, err)
			continue
		}
		f.Close()
		os.Remove(f.Name())
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Errorf("/proc not mounted: %v", err)
	}
	if _, err := os.Stat("/sys/class/sound"); err != nil {
		t.Errorf("/sys not mounted or no sound class: %v", err)
	}
}
