package stress

import (
	"os"
	"path/filepath"
	"strings"
)

// mount is the filesystem a directory is on, as /proc/self/mountinfo
// says: where it is mounted, its type and its source (the device).
type mount struct {
	point, fstype, source string
}

// inRAM says whether the filesystem keeps its files in memory: a disk
// load there loads memory, not a disk.
func (m mount) inRAM() bool { return m.fstype == "tmpfs" || m.fstype == "ramfs" }

// String is "ext4 on /dev/sda2" or "tmpfs (in RAM)".
func (m mount) String() string {
	switch {
	case m.fstype == "":
		return "an unknown filesystem"
	case m.inRAM():
		return m.fstype + " (in RAM)"
	}
	return m.fstype + " on " + m.source
}

// mountOf finds dir's filesystem in mountinfo (/proc/self/mountinfo's
// text): the mount with the longest mount point that holds it. dir is
// absolute and free of symlinks.
func mountOf(mountinfo, dir string) mount {
	var best mount
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 2 {
			continue
		}
		point := unescapeMount(f[4])
		if within(dir, point) && len(point) >= len(best.point) {
			best = mount{point: point, fstype: g[0], source: unescapeMount(g[1])}
		}
	}
	return best
}

func within(dir, point string) bool {
	return point == "/" || dir == point || strings.HasPrefix(dir, point+"/")
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline
// and backslash.
func unescapeMount(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// mountOfDir is dir's filesystem on this machine; the zero mount when it
// cannot tell.
func mountOfDir(dir string) mount {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	b, rerr := os.ReadFile("/proc/self/mountinfo")
	if err != nil || rerr != nil {
		return mount{}
	}
	return mountOf(string(b), abs)
}
