package child

import (
	"fmt"
	"os"
	"strconv"

	"latencytest/internal/procfile"
)

// ProcStat is what /proc/PID/stat says of a process.
type ProcStat struct {
	Pid, PPid, Pgrp int
	State           string // R, S, D, Z...
}

// Processes lists the processes of this PID namespace, from /proc.
// Zombies count: a zombie is a process nobody has reaped yet.
func Processes() ([]ProcStat, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []ProcStat
	buf := make([]byte, 4096)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := procfile.Read("/proc/"+e.Name()+"/stat", buf)
		if err != nil {
			continue // gone meanwhile
		}
		if st, ok := parseStat(pid, b); ok {
			out = append(out, st)
		}
	}
	return out, nil
}

// parseStat reads process pid's state, parent and group.
func parseStat(pid int, b []byte) (ProcStat, bool) {
	st, ok := procfile.ParseStat(b)
	return ProcStat{Pid: pid, PPid: st.PPid, Pgrp: st.Pgrp, State: st.State}, ok
}

// GroupPIDs lists the processes of process group pgid.
func GroupPIDs(pgid int) ([]int, error) {
	return pidsWhere(func(p ProcStat) bool { return p.Pgrp == pgid })
}

// ChildPIDs lists the children of process ppid.
func ChildPIDs(ppid int) ([]int, error) {
	return pidsWhere(func(p ProcStat) bool { return p.PPid == ppid })
}

func pidsWhere(keep func(ProcStat) bool) ([]int, error) {
	procs, err := Processes()
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, p := range procs {
		if keep(p) {
			pids = append(pids, p.Pid)
		}
	}
	return pids, nil
}
