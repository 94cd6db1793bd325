package stress

import (
	"flag"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize) // Bsize is int32 on 32-bit
}

// diskLoad parses a disk stressor's flags and checks them, as Main does.
func diskLoad(t *testing.T, name string, args ...string) (*disk, error) {
	t.Helper()
	s, ok := NewRegistry().Lookup(name)
	if !ok {
		t.Fatalf("no stressor %s", name)
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	l := s.Flags(fs, "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	var d *disk
	switch l := l.(type) {
	case diskCopy:
		d = l.disk
	case diskWrite:
		d = l.disk
	case diskRead:
		d = l.disk
	}
	return d, l.Check()
}

// disk-copy keeps two files: their total, not each, stays within half the
// free space, both for an explicit --size and for the default.
func TestDiskCopyTotalWithinHalfTheFreeSpace(t *testing.T) {
	dir := t.TempDir()
	// 30 % of the free space: one file fits in half of it, two do not.
	mb := freeBytes(t, dir) * 3 / 10 >> 20
	size := strconv.FormatInt(mb, 10) + "M"
	if _, err := diskLoad(t, "disk-write", "--dir", dir, "--size", size); err != nil {
		t.Errorf("disk-write --size %s (30%% of the free space): %v", size, err)
	}
	_, err := diskLoad(t, "disk-copy", "--dir", dir, "--size", size)
	if err == nil || !strings.Contains(err.Error(), "2 files of that size are more than half the free space") {
		t.Errorf("disk-copy --size %s (2 × 30%% of the free space): %v", size, err)
	}
}

// On a small filesystem the default size shrinks so that all of a
// stressor's files together take at most half the free space.
func TestDiskDefaultSizeShrinksToFit(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64m"); err != nil {
		t.Skipf("mount a 64 MiB tmpfs (needs root): %v", err)
	}
	defer unix.Unmount(dir, 0)
	free := freeBytes(t, dir)
	for name, files := range map[string]int64{"disk-copy": 2, "disk-write": 1, "disk-read": 1} {
		if _, err := diskLoad(t, name, "--dir", dir, "--size", "40M"); err == nil {
			t.Errorf("%s --size 40M: accepted with %d bytes free", name, free)
		}
		d, err := diskLoad(t, name, "--dir", dir)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := free / 2 / files >> 20 << 20; d.bytes != want {
			t.Errorf("%s: %d bytes per file, want %d (%d files, %d free)", name, d.bytes, want, files, free)
		}
	}
}
