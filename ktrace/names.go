package ktrace

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"latencytest/internal/procfile"
)

// maxNoted bounds each of procNames' maps: thread ids are reused, and
// only the few real-time threads and latencytest's own are noted.
const maxNoted = 4096

// procNames is what /proc said about the threads seen in a trace, asked
// when each was first seen running.
type procNames struct {
	policies map[int]string // thread → real-time policy
	groups   map[int]member // thread with latencytest's command name → its thread group
	owners   map[int]string // thread group → the part of latencytest it is (Session.Own)
	// others names latencytest's threads in no group of owners: the
	// current phase's stressor (Session.Load), "" when it has none;
	// loadComm is the command name that stressor's threads and the
	// processes they fork carry (stress.Comm).
	others, loadComm string
}

func newProcNames() procNames {
	return procNames{policies: map[int]string{}, groups: map[int]member{}, owners: map[int]string{}}
}

// member is the thread group a thread id belonged to when it was first
// seen, and that thread's start: a thread id is reused once its thread is
// gone, by another process (the next phase's stressor, or not latencytest
// at all), so the group is asked again when the start differs.
type member struct {
	group int
	start uint64
}

func (n *procNames) policy(pid int) string { return n.policies[pid] }

func (n *procNames) owner(pid int, comm string) string {
	if comm != "" && comm == n.loadComm {
		return n.others
	}
	m, ok := n.groups[pid]
	if !ok {
		return ""
	}
	if now := procMember(pid); now.start != 0 && now.start != m.start {
		// Another thread holds the id now: its group, if it is
		// latencytest's at all; the name the trace gave the thread that
		// ran is latencytest's, or it would not have been noted.
		m = now
		n.groups[pid] = m
	}
	if m.group == 0 {
		return ""
	}
	if o, ok := n.owners[m.group]; ok {
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
			n.groups[tid] = procMember(tid)
		}
	}
}

// procMember is a thread's thread group (its process) and start, zero
// when it has gone.
func procMember(tid int) member {
	b, err := procfile.ReadAll(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return member{}
	}
	i := bytes.Index(b, []byte("\nTgid:"))
	if i < 0 {
		return member{}
	}
	f := bytes.Fields(b[i+len("\nTgid:"):])
	if len(f) == 0 {
		return member{}
	}
	g, _ := strconv.Atoi(string(f[0]))
	st, err := procfile.ReadAll(fmt.Sprintf("/proc/%d/stat", tid))
	if err != nil {
		return member{}
	}
	stat, ok := procfile.ParseStat(st)
	if !ok {
		return member{}
	}
	return member{group: g, start: stat.Start}
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
