package ktrace

import (
	"reflect"
	"testing"

	"latencytest/internal/procfile"
)

// Two containers' PID 1 get two instances, and a process the same pid
// had before gets another; the owner is read back from the name, and a
// name not of the form (another tool's, latencytest's before it, one
// padded or cut) says no owner.
func TestInstanceName(t *testing.T) {
	a := procfile.Proc{NS: 4026532300, PID: 1, Start: 512}
	b := procfile.Proc{NS: 4026532301, PID: 1, Start: 512}
	c := procfile.Proc{NS: 4026532300, PID: 1, Start: 9000}
	names := map[string]bool{InstanceName(a): true, InstanceName(b): true, InstanceName(c): true}
	if len(names) != 3 {
		t.Errorf("names %v: want three", names)
	}
	if InstanceName(a) != "latencytest-4026532300-1-512" {
		t.Errorf("InstanceName(%+v) = %s", a, InstanceName(a))
	}
	for _, p := range []procfile.Proc{a, b, c} {
		if got, ok := instanceOwner(InstanceName(p)); !ok || got != p {
			t.Errorf("instanceOwner(%s) = %+v, %v", InstanceName(p), got, ok)
		}
	}
	for _, n := range []string{"latencytest-1", "latencytest-1-2", "latencytest-1-2-3-4", "latencytest-+1-2-3", "latencytest-01-2-3",
		"latencytest--1-2", "other-1-2-3", "rtla-1-2-3", "latencytest-a-b-c"} {
		if p, ok := instanceOwner(n); ok {
			t.Errorf("instanceOwner(%q) = %+v, want no owner", n, p)
		}
	}
}

// The clean-up removes only the instances whose owner is known to be
// gone: not its own, not one whose owner lives, not one of another PID
// namespace (alive not known), not one whose name says no owner.
func TestStaleInstances(t *testing.T) {
	self := procfile.Proc{NS: 10, PID: 100, Start: 1000}
	dead := procfile.Proc{NS: 10, PID: 200, Start: 2000}
	live := procfile.Proc{NS: 10, PID: 300, Start: 3000}
	foreign := procfile.Proc{NS: 11, PID: 200, Start: 2000}
	alive := func(p procfile.Proc) (bool, bool) {
		switch {
		case p.NS != self.NS:
			return false, false
		case p == live, p == self:
			return true, true
		}
		return false, true
	}
	names := []string{InstanceName(self), InstanceName(dead), InstanceName(live), InstanceName(foreign), "latencytest-200", "latencytest-notes"}
	got := staleInstances(names, self, alive)
	if want := []string{InstanceName(dead)}; !reflect.DeepEqual(got, want) {
		t.Errorf("staleInstances = %v, want %v", got, want)
	}
}
