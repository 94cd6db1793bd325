// Package threads applies a per-thread setting to every thread of the
// calling process. Linux keeps nice values and CPU affinity per thread,
// and a Go process has several threads before main runs, so a call on the
// process (pid 0) changes one arbitrary thread; threads and child
// processes created afterwards inherit the setting of the thread that made
// them.
package threads

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Each calls set for every thread of this process. It passes over the
// thread list twice, for threads created meanwhile; a thread that ended
// in between (ESRCH) is passed over.
func Each(set func(tid int) error) error {
	for range 2 {
		tids, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		for _, t := range tids {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := set(tid); err != nil && err != unix.ESRCH {
				return err
			}
		}
	}
	return nil
}

// SetAffinity lets every thread of this process run on cpus only.
func SetAffinity(cpus []int) error {
	set := Set(cpus)
	if err := Each(func(tid int) error { return unix.SchedSetaffinity(tid, &set) }); err != nil {
		return fmt.Errorf("CPU affinity %v: %w", cpus, err)
	}
	return nil
}

// Allowed is the CPUs the calling thread may run on.
func Allowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("CPU affinity: %w", err)
	}
	return List(&set), nil
}

// Set is the CPU set of cpus.
func Set(cpus []int) unix.CPUSet {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return set
}

// List is the CPUs in set, ascending.
func List(set *unix.CPUSet) []int {
	var cpus []int
	for c := 0; c < 8*int(unsafe.Sizeof(*set)); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// Without is the CPUs of all that are not in these, in all's order.
func Without(all, these []int) []int {
	var rest []int
	for _, c := range all {
		in := false
		for _, t := range these {
			in = in || t == c
		}
		if !in {
			rest = append(rest, c)
		}
	}
	return rest
}

// Format writes cpus (ascending) as the kernel's lists do: "0,2-3".
func Format(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
