//go:build portaudio

package portaudio

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"latencytest/internal/jacktest"
)

// startJack starts a JACK server of the test's own (internal/jacktest):
// the dummy backend at rate and period, under a name no other test uses.
func startJack(t *testing.T, rate, period int) (stop func()) {
	t.Helper()
	return jacktest.Start(t, rate, period).Stop
}

// serverThreads describes the threads of the jackd serving name: each
// one's name, state, CPU ticks, scheduling policy and priority (from
// /proc/PID/task/TID/stat) and where it sleeps (wchan).
func serverThreads(name string) string {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var b strings.Builder
	for _, c := range procs {
		cmd, err := os.ReadFile(c)
		if err != nil || !strings.Contains(string(cmd), "\x00-n\x00"+name+"\x00") {
			continue
		}
		dir := filepath.Dir(c)
		tasks, _ := filepath.Glob(dir + "/task/[0-9]*")
		for _, task := range tasks {
			stat, _ := os.ReadFile(task + "/stat")
			wchan, _ := os.ReadFile(task + "/wchan")
			fmt.Fprintf(&b, "%s: %s wchan %s\n", task, threadStat(string(stat)), wchan)
		}
	}
	if b.Len() == 0 {
		return "no jackd -n " + name + " found\n"
	}
	return b.String()
}

// threadStat picks a task's comm, state, utime, stime, priority and
// policy out of its stat line (proc(5): fields 2, 3, 14, 15, 18, 41).
func threadStat(stat string) string {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return stat
	}
	f := strings.Fields(stat[i+1:]) // from field 3 on
	if len(f) < 39 {
		return stat
	}
	return fmt.Sprintf("%s %s utime %s stime %s prio %s policy %s", stat[:i+1], f[0], f[11], f[12], f[15], f[38])
}
