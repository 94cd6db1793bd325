package stress

import (
	"os"
	"path/filepath"

	"latencytest/internal/mountinfo"
)

// mountOfDir is dir's filesystem on this machine; the zero Mount when it
// cannot tell.
func mountOfDir(dir string) mountinfo.Mount {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	b, rerr := os.ReadFile("/proc/self/mountinfo")
	if err != nil || rerr != nil {
		return mountinfo.Mount{}
	}
	m, _ := mountinfo.Of(mountinfo.Parse(string(b)), abs)
	return m
}
