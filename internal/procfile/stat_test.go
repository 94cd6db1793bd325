package procfile

import (
	"fmt"
	"os"
	"testing"
)

func statLine(comm string, flags uint64, prio, policy int) string {
	// Fields 6 to 8, 10 to 39 and 42 to 52 as a real line has them, zeros.
	return fmt.Sprintf("812 (%s) S 2 0 0 0 -1 %d 0 0 0 0 0 0 0 0 -91 0 1 0 345 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 3 %d %d 0 0 0 0 0 0 0 0 0 0 0",
		comm, flags, prio, policy)
}

// A command name holding spaces and parentheses does not shift the
// fields; a line cut before field 9 still has the first ones; a line
// without fields 2 to 5 is refused.
func TestParseStat(t *testing.T) {
	st, ok := ParseStat([]byte(statLine("irq/16-a) b (c", 0x208040, 93, 2)))
	want := Stat{Comm: "irq/16-a) b (c", State: "S", PPid: 2, Pgrp: 0, Sched: true, Flags: 0x208040, Start: 345, RTPriority: 93, Policy: 2}
	if !ok || st != want {
		t.Errorf("ParseStat = %+v, %v; want %+v", st, ok, want)
	}
	if st, ok := ParseStat([]byte("77 (x) S 1 2")); !ok || st != (Stat{Comm: "x", State: "S", PPid: 1, Pgrp: 2}) {
		t.Errorf("short line: %+v, %v", st, ok)
	}
	for _, bad := range []string{"", "77 x S 1 2", "77 (x) S 1", "77 (x) S one 2", "77 )x( S 1 2"} {
		if st, ok := ParseStat([]byte(bad)); ok {
			t.Errorf("ParseStat(%q) = %+v, want refused", bad, st)
		}
	}
	// This process's own line.
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := ParseStat(b); !ok || !st.Sched || st.PPid != os.Getppid() || st.Policy != 0 {
		t.Errorf("/proc/self/stat: %+v, %v (parent %d)", st, ok, os.Getppid())
	}
}
