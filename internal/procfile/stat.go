package procfile

import (
	"bytes"
	"strconv"
)

// Stat is a task as its /proc/PID/stat (or /proc/PID/task/TID/stat) line
// shows it: the fields latencytest reads.
type Stat struct {
	Comm       string // field 2, without its parentheses
	State      string // field 3
	PPid, Pgrp int    // fields 4 and 5
	// Sched says the line had fields 9 to 41 (every kernel since 2.6
	// writes them); Flags, Start, RTPriority and Policy are 0 without.
	Sched      bool
	Flags      uint64 // field 9, the PF_* flags
	Start      uint64 // field 22, the start in clock ticks since boot
	RTPriority int    // field 40
	Policy     int    // field 41, SCHED_*
}

// ParseStat parses a stat line. The command name, field 2, is in
// parentheses and may hold anything, spaces and parentheses included, so
// the fields are counted from the last ')'. ok is false for a line
// without fields 2 to 5.
func ParseStat(b []byte) (st Stat, ok bool) {
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return Stat{}, false
	}
	f := bytes.Fields(b[j+1:]) // f[0] is field 3
	if len(f) < 3 {
		return Stat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[4-3]))
	pgrp, err2 := strconv.Atoi(string(f[5-3]))
	if err1 != nil || err2 != nil {
		return Stat{}, false
	}
	st = Stat{Comm: string(b[i+1 : j]), State: string(f[0]), PPid: ppid, Pgrp: pgrp}
	if len(f) < 41-2 {
		return st, true
	}
	flags, err1 := strconv.ParseUint(string(f[9-3]), 10, 64)
	prio, err2 := strconv.Atoi(string(f[40-3]))
	policy, err3 := strconv.Atoi(string(f[41-3]))
	start, err4 := strconv.ParseUint(string(f[22-3]), 10, 64)
	if err1 == nil && err2 == nil && err3 == nil && err4 == nil {
		st.Sched, st.Flags, st.RTPriority, st.Policy, st.Start = true, flags, prio, policy, start
	}
	return st, true
}
