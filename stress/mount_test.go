package stress

import "testing"

// A directory is on the mount with the longest mount point holding it;
// tmpfs and ramfs are in RAM.
func TestMountOf(t *testing.T) {
	const info = `22 1 8:2 / / rw,relatime shared:1 - ext4 /dev/sda2 rw
40 22 0:35 / /tmp rw,nosuid,nodev shared:18 - tmpfs tmpfs rw,size=8G
41 22 8:17 / /srv/my\040disk rw shared:19 - xfs /dev/sdb1 rw
42 40 0:36 / /tmp/ram rw - ramfs none rw
`
	for _, tc := range []struct {
		dir  string
		want string
		ram  bool
	}{
		{"/home/me/results", "ext4 on /dev/sda2", false},
		{"/tmp", "tmpfs (in RAM)", true},
		{"/tmp/x", "tmpfs (in RAM)", true},
		{"/tmpfoo", "ext4 on /dev/sda2", false},
		{"/srv/my disk/data", "xfs on /dev/sdb1", false},
		{"/tmp/ram/a", "ramfs (in RAM)", true},
	} {
		m := mountOf(info, tc.dir)
		if m.String() != tc.want || m.inRAM() != tc.ram {
			t.Errorf("%s: %s (in RAM %v), want %s (%v)", tc.dir, m, m.inRAM(), tc.want, tc.ram)
		}
	}
}
