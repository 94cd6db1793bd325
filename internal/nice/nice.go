// Package nice sets the CFS nice value of every thread of the calling
// process (Linux keeps it per thread; see internal/threads).
package nice

import (
	"fmt"

	"golang.org/x/sys/unix"

	"latencytest/internal/threads"
)

// SetAll gives every thread of this process the nice value n (-20..19).
// Lowering the value needs CAP_SYS_NICE; the error says it was refused.
func SetAll(n int) error {
	if err := threads.Each(func(tid int) error { return unix.Setpriority(unix.PRIO_PROCESS, tid, n) }); err != nil {
		return fmt.Errorf("nice %d: %w", n, err)
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
