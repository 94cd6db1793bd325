package stress

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Comm is the command name every thread of stressor name's process
// carries, and every process it forks inherits: the kernel's tracer writes
// it in each record, so a spike is put down to the load even when the
// task that ran has ended before anyone could ask /proc whose it was (a
// hackbench worker lives a few milliseconds). The kernel keeps 15 bytes.
func Comm(name string) string {
	c := "lt:" + name
	if len(c) > 15 {
		c = c[:15]
	}
	return c
}

// nameThreads gives every thread of this process the command name comm.
// A thread made later takes the name of the one that made it, so the
// listing is read again until it holds no thread not yet renamed.
func nameThreads(comm string) error {
	done := map[string]bool{}
	for {
		dirs, err := filepath.Glob("/proc/self/task/*")
		if err != nil || len(dirs) == 0 {
			return fmt.Errorf("stress: the threads to name: %v", err)
		}
		renamed := 0
		for _, d := range dirs {
			tid := filepath.Base(d)
			if done[tid] {
				continue
			}
			if err := writeComm(filepath.Join(d, "comm"), comm); err != nil && !os.IsNotExist(err) && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("stress: name thread %s: %w", tid, err)
			}
			done[tid] = true
			renamed++
		}
		if renamed == 0 {
			return nil
		}
	}
}

func writeComm(path, comm string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(comm)
	return errors.Join(err, f.Close())
}
