// Package mountinfo reads /proc/self/mountinfo: which filesystem holds a
// path, for the disk loads (a tmpfs is RAM, not a disk) and for check.
package mountinfo

import (
	"path/filepath"
	"strings"
)

// Mount is one line of /proc/self/mountinfo.
type Mount struct {
	Point, FSType, Source string
	Options               []string // the mount's own (noatime, relatime, …)
}

// InRAM says whether the filesystem keeps its files in memory: a disk
// load there loads memory, not a disk. rootfs is an initramfs's root,
// ramfs or tmpfs underneath.
func (m Mount) InRAM() bool {
	return m.FSType == "tmpfs" || m.FSType == "ramfs" || m.FSType == "rootfs"
}

// String is "ext4 on /dev/sda2" or "tmpfs (in RAM)".
func (m Mount) String() string {
	switch {
	case m.FSType == "":
		return "an unknown filesystem"
	case m.InRAM():
		return m.FSType + " (in RAM)"
	}
	return m.FSType + " on " + m.Source
}

// Parse parses /proc/self/mountinfo's text: "ID PARENT MAJ:MIN ROOT POINT
// OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS". Mount points
// escape spaces as \040.
func Parse(s string) []Mount {
	var out []Mount
	for _, line := range strings.Split(s, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 6 || len(b) < 2 {
			continue
		}
		out = append(out, Mount{Point: unescape(a[4]), Options: strings.Split(a[5], ","), FSType: b[0], Source: unescape(b[1])})
	}
	return out
}

func unescape(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// Of returns the mount holding path (absolute, free of symlinks): the
// last-mounted among the longest mount points that are a prefix of it.
func Of(ms []Mount, path string) (Mount, bool) {
	path = filepath.Clean(path)
	best, found := Mount{}, false
	for _, m := range ms {
		p := m.Point
		if path == p || p == "/" || strings.HasPrefix(path, p+"/") {
			if !found || len(p) >= len(best.Point) {
				best, found = m, true
			}
		}
	}
	return best, found
}
