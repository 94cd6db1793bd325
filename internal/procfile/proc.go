package procfile

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Proc names one process for as long as the machine runs: a pid alone
// is reused once its process is gone, and the same pid is another process
// in each PID namespace (every container has its PID 1). Its start time
// tells a reused pid, its namespace tells two containers' processes.
type Proc struct {
	NS    uint64 `json:"pidns"` // the inode of its PID namespace (/proc/PID/ns/pid)
	PID   int    `json:"pid"`   // its pid in that namespace
	Start uint64 `json:"start"` // its start, in clock ticks since boot (/proc/PID/stat field 22)
}

// Self is this process.
func Self() (Proc, error) { return ProcOf(os.Getpid()) }

// ProcOf is process pid of this process's PID namespace, while it runs.
func ProcOf(pid int) (Proc, error) {
	st, err := stat(pid)
	if err != nil {
		return Proc{}, err
	}
	ns, err := PIDNamespace(strconv.Itoa(pid))
	if err != nil {
		return Proc{}, err
	}
	return Proc{NS: ns, PID: pid, Start: st.Start}, nil
}

func stat(pid int) (Stat, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	b, err := ReadAll(path)
	if err != nil {
		return Stat{}, err
	}
	st, ok := ParseStat(b)
	if !ok || !st.Sched {
		return Stat{}, fmt.Errorf("%s: not a stat line", path)
	}
	return st, nil
}

// PIDNamespace is the inode of the PID namespace of process task ("self":
// this one's), from its /proc/TASK/ns/pid link ("pid:[4026531836]").
func PIDNamespace(task string) (uint64, error) {
	path := "/proc/" + task + "/ns/pid"
	l, err := os.Readlink(path)
	if err != nil {
		return 0, err
	}
	s, ok := strings.CutPrefix(l, "pid:[")
	s, ok2 := strings.CutSuffix(s, "]")
	ino, err := strconv.ParseUint(s, 10, 64)
	if !ok || !ok2 || err != nil {
		return 0, fmt.Errorf("%s: %q is not a PID namespace", path, l)
	}
	return ino, nil
}

// Alive says whether p still runs: known is false when p is of another
// PID namespace than this process, whose processes this one cannot see.
// A zombie is not alive: it runs no more code. A pid now held by a
// process started at another time is not p.
func (p Proc) Alive() (alive, known bool) {
	ns, err := PIDNamespace("self")
	if err != nil || p.NS != ns || p.PID <= 0 {
		return false, false
	}
	st, err := stat(p.PID)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return false, true
	}
	if err != nil {
		return false, false
	}
	return st.Start == p.Start && st.State != "Z" && st.State != "X", true
}
