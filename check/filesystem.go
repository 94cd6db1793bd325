package check

import (
	"path/filepath"
	"strings"

	"latencytest/rundata"
)

// mount is one line of /proc/self/mountinfo.
type mount struct {
	point, fstype, source string
	options               []string
}

// parseMountinfo parses /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT
// POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS". Mount points
// escape spaces as \040.
func parseMountinfo(s string) []mount {
	var out []mount
	for _, line := range strings.Split(s, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 6 || len(b) < 2 {
			continue
		}
		out = append(out, mount{
			point:   unescapeMount(a[4]),
			options: strings.Split(a[5], ","),
			fstype:  b[0],
			source:  b[1],
		})
	}
	return out
}

func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// mountOf returns the mount holding path: the last-mounted among the
// longest mount points that are a prefix of it.
func mountOf(ms []mount, path string) (mount, bool) {
	path = filepath.Clean(path)
	best, found := mount{}, false
	for _, m := range ms {
		p := m.point
		if path == p || p == "/" || strings.HasPrefix(path, p+"/") {
			if !found || len(p) >= len(best.point) {
				best, found = m, true
			}
		}
	}
	return best, found
}

func hasOpt(opts []string, o string) bool {
	for _, x := range opts {
		if x == o {
			return true
		}
	}
	return false
}

func checkTempFS(e *env) []rundata.Finding {
	const name = "temp dir filesystem"
	const why = "the disk stressors write and read in the temp dir; with atime updates every read is also a write, and a network filesystem adds its own stalls"
	dir := e.tempDir
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	s, err := e.read("/proc/self/mountinfo")
	if err != nil {
		return []rundata.Finding{finding(name, INFO, "cannot read /proc/self/mountinfo", why, "")}
	}
	m, ok := mountOf(parseMountinfo(s), dir)
	if !ok {
		return []rundata.Finding{finding(name, INFO, "no mount found for "+dir, why, "")}
	}
	v := dir + " on " + m.point + " (" + m.fstype + ", " + strings.Join(m.options, ",") + ")"
	fix := "mount -o remount,noatime " + m.point + " (and add noatime to its line in /etc/fstab)"
	switch {
	case m.fstype == "nfs" || m.fstype == "nfs4" || m.fstype == "cifs" || m.fstype == "smb3" || strings.HasPrefix(m.fstype, "fuse"):
		return []rundata.Finding{finding(name, WARN, v+": a network or FUSE filesystem", why, "set TMPDIR to a local filesystem")}
	case m.fstype == "tmpfs" || m.fstype == "ramfs":
		return []rundata.Finding{finding(name, OK, v+": in memory (the disk stressors then load memory, not the disk)", why, "")}
	case hasOpt(m.options, "noatime"), hasOpt(m.options, "relatime"):
		return []rundata.Finding{finding(name, OK, v, why, "")}
	}
	return []rundata.Finding{finding(name, WARN, v+": access times written on every read", why, fix)}
}
