package atomicfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/internal/badinput"
)

// WriteFile replaces a file whole and a symlink planted at the name
// without following it, and leaves no temporary file; a directory that
// does not exist is an error naming the path.
func TestWriteFile(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	p := filepath.Join(dir, "f")
	victim := filepath.Join(other, "victim")
	os.WriteFile(victim, []byte("precious"), 0o600)
	os.Symlink(victim, p)
	for _, data := range []string{"first", "second"} {
		if err := WriteFile(p, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != data {
			t.Errorf("read back %q, %v; want %q", b, err, data)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the symlink's target now %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left in the directory: %v", ents)
	}
	missing := filepath.Join(dir, "none", "f")
	if err := WriteFile(missing, nil); err == nil {
		t.Errorf("WriteFile(%s): no error", missing)
	}
}

// RenameNoReplace refuses a name taken, even by an empty directory.
func TestRenameNoReplace(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.Mkdir(from, 0o755)
	os.Mkdir(to, 0o755)
	if err := RenameNoReplace(from, to); err == nil {
		t.Error("renamed over an empty directory")
	}
	os.Remove(to)
	if err := RenameNoReplace(from, to); err != nil {
		t.Error(err)
	}
}

// nsEnv marks the copy of the test binary that runs in a mount namespace
// of its own (TestWriteFileDeviceNodes).
const nsEnv = "LATENCYTEST_ATOMICFILE_MOUNTNS"

// A character device is written through and stays a device; a block
// device, a directory and a symlink to a block device are bad input and
// stay as they were. The nodes are made with mknod on a tmpfs mounted in
// a mount namespace of the test's own (a copy of the test binary started
// with CLONE_NEWNS), never in the real /dev. Before the fix, WriteFile
// renamed a regular file over /dev/null.
func TestWriteFileDeviceNodes(t *testing.T) {
	if os.Getenv(nsEnv) == "" {
		if os.Geteuid() != 0 {
			t.Skip("needs root (mknod, a mount namespace)")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestWriteFileDeviceNodes$", "-test.v")
		cmd.Env = append(os.Environ(), nsEnv+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS} // Go makes / private in it
		out, err := cmd.CombinedOutput()
		t.Logf("in a mount namespace:\n%s", out)
		if err != nil {
			t.Fatalf("in a mount namespace: %v", err)
		}
		return
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs: %v", err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	null, blk := filepath.Join(dir, "null"), filepath.Join(dir, "blk")
	if err := unix.Mknod(null, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	// Major 240 is for local use: no driver behind it, and it is refused
	// before any open anyway.
	if err := unix.Mknod(blk, unix.S_IFBLK|0o600, int(unix.Mkdev(240, 0))); err != nil {
		t.Fatal(err)
	}
	toNull, toBlk, sub := filepath.Join(dir, "stdout"), filepath.Join(dir, "disk"), filepath.Join(dir, "sub")
	os.Symlink(null, toNull)
	os.Symlink(blk, toBlk)
	os.Mkdir(sub, 0o755)
	for _, p := range []string{null, toNull} {
		if err := Check("-o", p); err != nil {
			t.Errorf("Check(%s): %v", p, err)
		}
		if err := WriteFile(p, []byte("discarded")); err != nil {
			t.Errorf("WriteFile(%s): %v", p, err)
		}
	}
	for _, p := range []string{blk, toBlk, sub, sub + "/"} {
		if err := Check("-o", p); !badinput.Is(err) {
			t.Errorf("Check(%s): %v, want bad input", p, err)
		}
		if err := WriteFile(p, []byte("x")); !badinput.Is(err) {
			t.Errorf("WriteFile(%s): %v, want bad input", p, err)
		}
	}
	wantKind(t, null, fs.ModeDevice|fs.ModeCharDevice)
	wantKind(t, toNull, fs.ModeSymlink)
	wantKind(t, blk, fs.ModeDevice)
	wantKind(t, toBlk, fs.ModeSymlink)
	wantKind(t, sub, fs.ModeDir)
	if ents, _ := os.ReadDir(dir); len(ents) != 5 {
		t.Errorf("left in the directory: %v", ents)
	}
}

// A FIFO, and a symlink to one (as /dev/stdout is to a pipe), is written
// through to its reader and stays a FIFO and a symlink. The reader opens
// first, without blocking, so that the write's open finds it, and reads
// after the write with a deadline, so that a FIFO renamed over fails the
// test instead of hanging it.
func TestWriteFileFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo, link := filepath.Join(dir, "fifo"), filepath.Join(dir, "link")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Symlink(fifo, link)
	for _, p := range []string{fifo, link} {
		r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		r.SetReadDeadline(time.Now().Add(10 * time.Second))
		if err := WriteFile(p, []byte("through "+p)); err != nil {
			t.Errorf("WriteFile(%s): %v", p, err)
		}
		if b, _ := io.ReadAll(r); string(b) != "through "+p { // the pipe's buffer holds it all
			t.Errorf("the reader of %s read %q", p, b)
		}
		r.Close()
		wantKind(t, fifo, fs.ModeNamedPipe)
	}
	wantKind(t, link, fs.ModeSymlink)
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("left in the directory: %v", ents)
	}
}

// A link to a descriptor, as /dev/stdout is, is written through when it
// leads to a pipe, and refused, never replaced, when it leads to a
// regular file (standard output redirected to one).
func TestWriteFileDescriptorLink(t *testing.T) {
	dir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	toPipe := filepath.Join(dir, "stdout")
	os.Symlink(fmt.Sprintf("/proc/self/fd/%d", w.Fd()), toPipe)
	if err := WriteFile(toPipe, []byte("ranking")); err != nil {
		t.Errorf("WriteFile(%s): %v", toPipe, err)
	}
	r.SetReadDeadline(time.Now().Add(10 * time.Second)) // not to hang when nothing came
	b := make([]byte, 64)
	if n, _ := r.Read(b); string(b[:n]) != "ranking" {
		t.Errorf("the pipe read %q", b[:n])
	}
	f, err := os.Create(filepath.Join(dir, "redirected"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	toFile := filepath.Join(dir, "stdout2")
	os.Symlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), toFile)
	if err := WriteFile(toFile, []byte("x")); !badinput.Is(err) {
		t.Errorf("WriteFile(%s): %v, want bad input", toFile, err)
	}
	wantKind(t, toPipe, fs.ModeSymlink)
	wantKind(t, toFile, fs.ModeSymlink)
}

// wantKind fails the test unless path (not followed) is of kind typ.
func wantKind(t *testing.T, path string, typ fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if fi.Mode().Type() != typ {
		t.Errorf("%s is now %v, want %v", path, fi.Mode().Type(), typ)
	}
}
