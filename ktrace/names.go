package ktrace

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// maxNoted bounds each of procNames' maps: thread ids are reused, and
// only the few real-time threads and latencytest's own are noted.
const maxNoted = 4096

// procNames is what /proc said about the threads seen in a trace, asked
// when each was first seen running.
type procNames struct {
	policies map[int]string // thread → real-time policy
	groups   map[int]int    // thread with latencytest's command name → its thread group
	owners   map[int]string // thread group → the part of latencytest it is (Session.Own)
	// others names latencytest's threads in no group of owners: the
	// current phase's stressor (Session.Load), "" when it has none.
	others string
}

func newProcNames() procNames {
	return procNames{policies: map[int]string{}, groups: map[int]int{}, owners: map[int]string{}}
}

func (n *procNames) policy(pid int) string { return n.policies[pid] }

func (n *procNames) owner(pid int) string {
	g, ok := n.groups[pid]
	if !ok {
		return ""
	}
	if o, ok := n.owners[g]; ok {
		return o
	}
	return n.others
}

// note asks /proc about a thread just switched in, the first time it is
// seen: a real-time one's policy, and the thread group of one with
// latencytest's command name.
func (n *procNames) note(tid, prio int, own bool) {
	if prio >= 0 && prio < 100 {
		if _, ok := n.policies[tid]; !ok {
			if len(n.policies) >= maxNoted {
				clear(n.policies)
			}
			n.policies[tid] = procPolicy(tid)
		}
	}
	if own {
		if _, ok := n.groups[tid]; !ok {
			if len(n.groups) >= maxNoted {
				clear(n.groups)
			}
			n.groups[tid] = procTGID(tid)
		}
	}
}

// procTGID is a thread's thread group (its process), 0 when it has gone.
func procTGID(tid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return 0
	}
	i := bytes.Index(b, []byte("\nTgid:"))
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+len("\nTgid:"):])
	if len(f) == 0 {
		return 0
	}
	g, _ := strconv.Atoi(string(f[0]))
	return g
}

// procComm is a task's command name as the tracer shows it ("self": this
// thread's).
func procComm(task string) string {
	b, err := os.ReadFile("/proc/" + task + "/comm")
	if err != nil {
		return ""
	}
	return string(bytes.TrimSuffix(b, []byte("\n")))
}
