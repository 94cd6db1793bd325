package stress

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"latencytest/internal/badinput"
	"latencytest/internal/mountinfo"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The three disk stressors share these settings and helpers: a file of
// --size bytes in --dir, written in blocks as dd does.

const (
	diskBlock     = 1 << 20  // bytes per read or write, as dd bs=1M
	diskWriteback = 64 << 20 // write back every so many bytes, so dirty data (and Stop) stays short
	defaultSize   = 1 << 30
	minDiskSize   = 1 << 20
	// prepareLimit bounds the writing of the file disk-read and disk-copy
	// start from: on a slow disk they run with what got written by then.
	prepareLimit = 5 * time.Second
	// filePrefix names every file a disk stressor makes, followed by the
	// maker's pid, so that a later run can tell a killed run's leftovers.
	filePrefix = "latencytest-stress-"
)

type disk struct {
	dir        string
	size       size
	dropCaches bool
	files      int64 // files of --size the stressor keeps at once (disk-copy: 2)
	bytes      int64 // the size of each, settled by Check
	flag       flagPrefix
	// scratch is the private directory the parent made in dir for this
	// child ("" when run by hand: the file goes in dir itself).
	scratch string
	where   mountinfo.Mount // dir's filesystem, found by Check
}

// describe records where the load's files are, so that run.json and the
// terminal say which filesystem and device the phase loaded (a tmpfs
// /tmp is RAM, not a disk).
func (d *disk) describe(m *Meter) {
	dir, err := filepath.Abs(d.dir)
	if err != nil {
		dir = d.dir
	}
	m.Set("dir", dir)
	m.Set("filesystem", d.where.String())
	m.Set("in_ram", d.where.InRAM())
}

func (d *disk) scratchIn() string     { return d.dir }
func (d *disk) useScratch(dir string) { d.scratch = dir }

func diskFlags(fs *flag.FlagSet, p flagPrefix, withDrop bool, files int64) *disk {
	d := &disk{size: size{bytes: defaultSize}, files: files, flag: p}
	// The current directory, not $TMPDIR: /tmp is a tmpfs on many
	// systems (Debian 13, Fedora, Arch), where a disk load loads RAM.
	fs.StringVar(&d.dir, p.def("dir"), ".", "directory for the stressor's file, on the disk to load (default: the current directory; never a tmpfs, which is RAM)")
	usage := "file `size`, e.g. 512M or 2G (never more than half the free space)"
	if files > 1 {
		usage = fmt.Sprintf("file `size`, e.g. 512M or 2G (%d files: together never more than half the free space)", files)
	}
	fs.Var(&d.size, p.def("size"), usage)
	if withDrop {
		fs.BoolVar(&d.dropCaches, p.def("drop-caches"), false, "also write 1 to /proc/sys/vm/drop_caches before every pass (root; drops every file's cache)")
	}
	return d
}

func (d *disk) Check() error {
	fi, err := os.Stat(d.dir)
	if err != nil {
		return badinput.Errorf("%s %s: %v", d.flag.name("dir"), d.dir, errors.Unwrap(err))
	}
	if !fi.IsDir() {
		return badinput.Errorf("%s %s: not a directory", d.flag.name("dir"), d.dir)
	}
	if err := unix.Access(d.dir, unix.W_OK|unix.X_OK); err != nil {
		return badinput.Errorf("%s %s: not writable (%v)", d.flag.name("dir"), d.dir, err)
	}
	d.where = mountOfDir(d.dir)
	var st unix.Statfs_t
	if err := unix.Statfs(d.dir, &st); err != nil {
		return badinput.Errorf("%s %s: %v", d.flag.name("dir"), d.dir, err)
	}
	free := int64(st.Bavail) * int64(st.Bsize) // Bsize is int32 on 32-bit Linux
	// All the files together stay within half the free space, so the
	// stressor can never fill the filesystem (its files never grow past
	// --size: passes overwrite them).
	limit := free / 2 / d.files / diskBlock * diskBlock
	d.bytes = d.size.bytes
	switch {
	case d.size.set && d.bytes > limit && d.files > 1:
		return badinput.Errorf("%s %s: %d files of that size are more than half the free space in %s (%s free)", d.flag.name("size"), d.size.String(), d.files, d.dir, humanSize(free))
	case d.size.set && d.bytes > limit:
		return badinput.Errorf("%s %s: more than half the free space in %s (%s free)", d.flag.name("size"), d.size.String(), d.dir, humanSize(free))
	case d.bytes > limit:
		d.bytes = limit
	}
	if d.bytes < minDiskSize {
		if d.size.bytes >= minDiskSize {
			return badinput.Errorf("%s %s: only %s free; want at least %d × 2 × 1M", d.flag.name("dir"), d.dir, humanSize(free), d.files)
		}
		return badinput.Errorf("%s %s: want at least 1M", d.flag.name("size"), d.size.String())
	}
	if d.dropCaches {
		if err := unix.Access("/proc/sys/vm/drop_caches", unix.W_OK); err != nil {
			return badinput.Errorf("%s: /proc/sys/vm/drop_caches is not writable here (%v); it needs root", d.flag.name("drop-caches"), err)
		}
	}
	return nil
}

// create removes leftovers of killed runs by hand from the directory and
// creates a new file for role: in the private directory the parent made,
// if there is one (the parent removes it, whatever happens to us).
func (d *disk) create(role string) (*os.File, error) {
	removeLeftovers(d.dir)
	dir := d.dir
	if d.scratch != "" {
		dir = d.scratch
	}
	f, err := os.CreateTemp(dir, fmt.Sprintf("%s%d-%s-*", filePrefix, os.Getpid(), role))
	if err != nil {
		return nil, fmt.Errorf("create file in %s: %w", dir, err)
	}
	return f, nil
}

// removeLeftovers removes the files of disk stressors that are no longer
// running (killed before they could clean up).
func removeLeftovers(dir string) {
	names, _ := filepath.Glob(filepath.Join(dir, filePrefix+"*"))
	for _, n := range names {
		rest := strings.TrimPrefix(filepath.Base(n), filePrefix)
		pidStr, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 0 {
			continue
		}
		if pid != os.Getpid() && unix.Kill(pid, 0) == unix.ESRCH {
			os.Remove(n)
		}
	}
}

// closeRemove ends a stressor's file.
func closeRemove(f *os.File) error {
	cerr := f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return fmt.Errorf("remove %s: %w", f.Name(), err)
	}
	return cerr
}

// randomBlock is a block of data filesystems cannot compress or dedupe.
func randomBlock() []byte {
	b := make([]byte, diskBlock)
	_, _ = rand.Read(b)
	return b
}

// fill writes n bytes to f from offset 0 in blocks, counting them on
// count, starting writeback as it goes so that dirty data stays bounded,
// and ends with fdatasync (unless stopped). It stops at ctx's end or deadline (zero: none)
// and returns the bytes written.
func fill(ctx context.Context, f *os.File, src func(off int64, b []byte) (int, error), n int64, deadline time.Time, count func(int64)) (int64, error) {
	buf := randomBlock()
	fd := int(f.Fd())
	var off int64
	for off < n {
		if ctx.Err() != nil || (!deadline.IsZero() && time.Now().After(deadline)) {
			break
		}
		b := buf[:min(int64(len(buf)), n-off)]
		k, err := src(off, b)
		if err != nil {
			return off, err
		}
		if k == 0 {
			break
		}
		if _, err := f.WriteAt(b[:k], off); err != nil {
			return off, fmt.Errorf("write %s: %w", f.Name(), err)
		}
		off += int64(k)
		count(int64(k))
		if off%diskWriteback == 0 {
			// Start writing this chunk, wait for the one before.
			_ = unix.SyncFileRange(fd, off-diskWriteback, diskWriteback, unix.SYNC_FILE_RANGE_WRITE)
			if off >= 2*diskWriteback {
				_ = unix.SyncFileRange(fd, off-2*diskWriteback, diskWriteback,
					unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
			}
		}
	}
	if ctx.Err() != nil {
		return off, nil // stopping: the file is about to go, unsynced
	}
	if err := unix.Fdatasync(fd); err != nil {
		return off, fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	return off, nil
}

// prepare writes the file disk-read and disk-copy start from, in at most
// prepareLimit, and returns its size.
func (d *disk) prepare(ctx context.Context, f *os.File, m *Meter) (int64, error) {
	n, err := fill(ctx, f, blockSource, d.bytes, time.Now().Add(prepareLimit), func(int64) {})
	if err != nil {
		return 0, err
	}
	if n < minDiskSize && ctx.Err() == nil {
		return 0, fmt.Errorf("wrote only %s to %s in %v", humanSize(n), f.Name(), prepareLimit)
	}
	if err := f.Truncate(n); err != nil {
		return 0, fmt.Errorf("truncate %s: %w", f.Name(), err)
	}
	m.Set("size_bytes", n)
	return n, dropCache(f)
}

// blockSource writes the block buffer as it is.
func blockSource(_ int64, b []byte) (int, error) { return len(b), nil }

// dropCache drops f's pages from the page cache, so the next read comes
// from the disk (clean pages only: fill and copies end with fdatasync).
func dropCache(f *os.File) error {
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("posix_fadvise DONTNEED %s: %w", f.Name(), err)
	}
	return nil
}

// dropAllCaches is --drop-caches: every clean page of every file.
func dropAllCaches() error {
	unix.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("1\n"), 0); err != nil {
		return fmt.Errorf("drop caches: %w", err)
	}
	return nil
}
