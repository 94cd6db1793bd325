package check

import (
	"path/filepath"
	"strings"

	"latencytest/internal/mountinfo"
	"latencytest/rundata"
)

func hasOpt(opts []string, o string) bool {
	for _, x := range opts {
		if x == o {
			return true
		}
	}
	return false
}

func checkTempFS(e *env) []rundata.Finding {
	const name = "disk phases' directory"
	const why = "the disk phases write and read their files in the directory run starts in (or --disk-dir): a tmpfs there is RAM, not a disk; with atime updates every read is also a write, and a network filesystem adds its own stalls"
	dir := e.diskDir
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	s, err := e.read("/proc/self/mountinfo")
	if err != nil {
		return []rundata.Finding{finding(name, INFO, "cannot read /proc/self/mountinfo", why, "")}
	}
	m, ok := mountinfo.Of(mountinfo.Parse(s), dir)
	if !ok {
		return []rundata.Finding{finding(name, INFO, "no mount found for "+dir, why, "")}
	}
	v := dir + " on " + m.Point + " (" + m.FSType + ", " + strings.Join(m.Options, ",") + ")"
	fix := "mount -o remount,noatime " + m.Point + " (and add noatime to its line in /etc/fstab)"
	switch {
	case m.FSType == "nfs" || m.FSType == "nfs4" || m.FSType == "cifs" || m.FSType == "smb3" || strings.HasPrefix(m.FSType, "fuse"):
		return []rundata.Finding{finding(name, WARN, v+": a network or FUSE filesystem", why, "run latencytest from a directory on a local disk, or give run --disk-dir one")}
	case m.InRAM():
		return []rundata.Finding{finding(name, WARN, v+": in RAM (the disk phases would load memory, not a disk)", why, "run latencytest from a directory on the disk to load, or give run --disk-dir one")}
	case hasOpt(m.Options, "noatime"), hasOpt(m.Options, "relatime"):
		return []rundata.Finding{finding(name, OK, v, why, "")}
	}
	return []rundata.Finding{finding(name, WARN, v+": access times written on every read", why, fix)}
}
