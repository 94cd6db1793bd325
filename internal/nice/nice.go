// Package nice sets the CFS nice value of every thread of the calling
// process. Linux keeps nice per thread, and a Go process has several
// threads before main runs, so setpriority(PRIO_PROCESS, 0) alone would
// change one arbitrary thread; threads (and child processes) created
// afterwards inherit the value of the thread that made them.
package nice

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// SetAll gives every thread of this process the nice value n (-20..19).
// It passes over the thread list twice, for threads created meanwhile.
// Lowering the value needs CAP_SYS_NICE; the error says it was refused.
func SetAll(n int) error {
	for range 2 {
		tids, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("nice %d: %w", n, err)
		}
		for _, t := range tids {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := unix.Setpriority(unix.PRIO_PROCESS, tid, n); err != nil && err != unix.ESRCH {
				return fmt.Errorf("nice %d: %w", n, err)
			}
		}
	}
	return nil
}

// Get is the nice value of the calling thread.
func Get() (int, error) {
	// The raw syscall returns 20 − nice (never negative); x/sys's
	// Getpriority returns that value as is.
	p, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		return 0, err
	}
	return 20 - p, nil
}
