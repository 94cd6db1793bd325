package mountinfo

import "testing"

// A path is on the mount with the longest mount point holding it, the
// last mounted of equals; tmpfs and ramfs are in RAM; escapes undone.
func TestOf(t *testing.T) {
	ms := Parse(`22 1 8:2 / / rw,relatime shared:1 - ext4 /dev/sda2 rw
40 22 0:35 / /tmp rw,nosuid,nodev shared:18 - tmpfs tmpfs rw,size=8G
41 22 8:17 / /srv/my\040disk rw,noatime shared:19 - xfs /dev/sdb1 rw
42 40 0:36 / /tmp/ram rw - ramfs none rw
43 22 0:37 / /tmp rw - ext4 /dev/sdc1 rw
`)
	for _, tc := range []struct {
		path string
		want string
		ram  bool
	}{
		{"/home/me/results", "ext4 on /dev/sda2", false},
		{"/tmp/x", "ext4 on /dev/sdc1", false}, // mounted over the tmpfs
		{"/tmpfoo", "ext4 on /dev/sda2", false},
		{"/srv/my disk/data", "xfs on /dev/sdb1", false},
		{"/tmp/ram/a", "ramfs (in RAM)", true},
	} {
		m, ok := Of(ms, tc.path)
		if !ok || m.String() != tc.want || m.InRAM() != tc.ram {
			t.Errorf("%s: %s (in RAM %v), want %s (%v)", tc.path, m, m.InRAM(), tc.want, tc.ram)
		}
	}
	if m, _ := Of(ms, "/srv/my disk"); len(m.Options) != 2 || m.Options[1] != "noatime" {
		t.Errorf("options %q", m.Options)
	}
}
