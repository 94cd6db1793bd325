// Package atomicfile writes files so that a kill or a power loss leaves
// either the previous content or the new one, whole: the results
// directory's run.json, spikes.json and report, and every file latencytest
// writes for the user. It is also the one place that decides what an
// output path that already exists may be (Check): a regular file is
// replaced, a character device or a FIFO (/dev/null, /dev/stdout to a
// pipe or a terminal) is written through, anything else is bad input —
// never renamed over. It imports nothing of latencytest's but
// internal/badinput, a leaf, so that rundata, the results contract, stays
// at the bottom of the imports.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"latencytest/internal/badinput"
)

// WriteFile writes data to a temporary file beside path and renames it
// into place, removing the temporary file on any failure (see WriteIn).
func WriteFile(path string, data []byte) error {
	path = filepath.Clean(path) // "r1/" names r1, not a file r1/r1
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer root.Close()
	if err := WriteIn(root, filepath.Base(path), data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteIn writes data to name inside root so that, whenever the process
// or the machine stops, name holds either its previous content or data,
// whole: the data goes to a new temporary file (O_EXCL, so nothing planted
// under its name is followed), is synced, renamed over name (which
// replaces a symlink there rather than following it), and the directory
// is synced so that the rename itself survives a power loss. A name that
// is a character device or a FIFO, or a symlink to one, is written
// through instead, since renaming over it would replace /dev/null with a
// file as root; a directory, a block device or a socket is bad input
// (see Check), with nothing written.
func WriteIn(root *os.Root, name string, data []byte) error {
	how, err := classify(root, name)
	switch {
	case err != nil:
		return err
	case how == through:
		return writeThrough(root, name, data)
	}
	return replace(root, name, data)
}

// Check returns bad input if path exists and is not something WriteFile
// writes: a flag's output path checked before the work starts, so that
// a directory given as -o is refused with nothing half-written. flagName
// names the flag in the message ("-o", "--histfile").
func Check(flagName, path string) error {
	clean := filepath.Clean(path) // "r1/" names r1, as WriteFile takes it
	root, err := os.OpenRoot(filepath.Dir(clean))
	if err != nil {
		return badinput.Errorf("%s %s: %w", flagName, path, err)
	}
	defer root.Close()
	if _, err := classify(root, filepath.Base(clean)); err != nil {
		return badinput.Errorf("%s %s: %w", flagName, path, err)
	}
	return nil
}

// how is what WriteIn does with a name.
type how int

const (
	replaced how = iota // a new file renamed into place
	through             // the existing device or FIFO opened and written
)

// classify says how name in root is written, or why it cannot be: a name
// that does not exist, a regular file and a symlink to a regular file (or
// to nothing) are replaced — the symlink itself, never its target; a
// character device or a FIFO, or a symlink to one (/dev/stdout to a pipe
// or a terminal), is written through. A symlink is resolved only to see
// whether its target is such a one, and a descriptor's link to a regular
// file (/dev/stdout redirected to a file) is refused rather than replaced,
// since that would replace /dev/stdout itself.
func classify(root *os.Root, name string) (how, error) {
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return replaced, nil
	}
	if err != nil {
		return replaced, err
	}
	mode, link := fi.Mode(), fi.Mode()&fs.ModeSymlink != 0
	if link {
		target, err := os.Stat(fullPath(root, name))
		if err != nil {
			return replaced, nil // a dangling link: replaced, as a planted one is
		}
		mode = target.Mode()
		if mode.IsRegular() && descriptorLink(root, name) {
			return replaced, badOutput("standard output or another descriptor redirected to a file; give the file's own name")
		}
	}
	switch {
	case mode.IsRegular():
		return replaced, nil
	case writableThrough(mode):
		return through, nil
	}
	return replaced, badOutput("a " + kindOf(mode))
}

// writableThrough is a file kind written through rather than replaced:
// a character device (/dev/null, a terminal) or a FIFO (a pipe).
func writableThrough(mode fs.FileMode) bool {
	return mode&fs.ModeCharDevice != 0 || mode&fs.ModeNamedPipe != 0
}

// kindOf names a file kind that is neither regular nor written through.
func kindOf(mode fs.FileMode) string {
	switch {
	case mode.IsDir():
		return "directory"
	case mode&fs.ModeDevice != 0:
		return "block device"
	case mode&fs.ModeSocket != 0:
		return "socket"
	}
	return "file of kind " + mode.Type().String()
}

// badOutput says why an output path cannot be written, and what can be;
// the caller names the path.
func badOutput(why string) error {
	return badinput.Errorf("bad output path, %s; allowed a new or regular file (replaced whole), a character device or a FIFO (written through)", why)
}

// fullPath is name in root as a path, for resolving a symlink that leads
// out of root (/dev/stdout).
func fullPath(root *os.Root, name string) string { return filepath.Join(root.Name(), name) }

// descriptorLink reports whether the symlink name in root leads to one of
// a process's descriptors (/dev/stdout, /dev/fd/1, /proc/self/fd/1): one
// that must not be replaced even when it leads to a regular file.
func descriptorLink(root *os.Root, name string) bool {
	if dir, err := filepath.EvalSymlinks(root.Name()); err == nil && strings.HasPrefix(dir, "/proc/") {
		return true
	}
	target, err := root.Readlink(name)
	return err == nil && (strings.HasPrefix(target, "/proc/") || strings.HasPrefix(target, "/dev/fd/"))
}

// writeThrough writes data to the character device or FIFO that name is,
// or leads to. It opens without O_CREAT or O_TRUNC, and checks what it
// opened, so that a regular file put there since classify is refused
// untouched rather than written in place; a FIFO's open waits for a
// reader, as a shell's redirection does. Nothing is synced: a device or a
// pipe has nothing to make durable.
func writeThrough(root *os.Root, name string, data []byte) error {
	var f *os.File
	var err error
	if fi, lerr := root.Lstat(name); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		f, err = os.OpenFile(fullPath(root, name), os.O_WRONLY|syscall.O_NOCTTY, 0)
	} else {
		f, err = root.OpenFile(name, os.O_WRONLY|syscall.O_NOCTTY|syscall.O_NOFOLLOW, 0)
	}
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err != nil || !writableThrough(fi.Mode()) {
		f.Close()
		if err != nil {
			return err
		}
		return badOutput("changed while it was opened")
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// replace writes data to a new file beside name and renames it over name.
func replace(root *os.Root, name string, data []byte) error {
	f, tmp, err := createTemp(root, "."+filepath.Base(name)+".tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
		return err
	}
	return syncClose(root.Open("."))
}

// createTemp creates a new file named prefix and a random suffix in root,
// readable by all (the results are meant to be shared).
func createTemp(root *os.Root, prefix string) (*os.File, string, error) {
	for range 100 {
		name := prefix + strconv.FormatUint(rand.Uint64(), 36)
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", fmt.Errorf("create a temporary file in %s: too many collisions", root.Name())
}

// SyncDir makes a directory's entries (a rename, a new file) durable.
func SyncDir(dir string) error { return syncClose(os.Open(dir)) }

// syncClose syncs and closes the file just opened, or returns why it
// could not be opened.
func syncClose(f *os.File, err error) error {
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// RenameNoReplace renames a directory to a name nobody has taken since it
// was checked (a plain rename would replace an empty directory there).
func RenameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) { // a filesystem without the flag
		if _, serr := os.Lstat(to); !errors.Is(serr, fs.ErrNotExist) {
			return fmt.Errorf("%s appeared while the run started", to)
		}
		return os.Rename(from, to)
	}
	if err != nil {
		return fmt.Errorf("rename %s: %w", from, err)
	}
	return nil
}

// Exchange swaps two directories' names in one rename (renameat2
// RENAME_EXCHANGE), so that whoever looks at either name sees one whole
// directory or the other, never none. On a filesystem without the flag it
// falls back to two renames through a third name, with an instant in
// which b is missing.
func Exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		if err != nil {
			return fmt.Errorf("exchange %s and %s: %w", a, b, err)
		}
		return nil
	}
	aside := a + ".x"
	if err := RenameNoReplace(b, aside); err != nil {
		return err
	}
	if err := os.Rename(a, b); err != nil {
		os.Rename(aside, b)
		return fmt.Errorf("exchange %s and %s: %w", a, b, err)
	}
	if err := os.Rename(aside, a); err != nil {
		return fmt.Errorf("exchange %s and %s: %w", a, b, err)
	}
	return nil
}
