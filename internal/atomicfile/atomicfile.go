// Package atomicfile writes files so that a kill or a power loss leaves
// either the previous content or the new one, whole: the results
// directory's run.json, spikes.json and report, and every file latencytest
// writes for the user. It imports nothing of latencytest's, so that
// rundata, the results contract, stays at the bottom of the imports.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// WriteFile writes data to a temporary file beside path and renames it
// into place, removing the temporary file on any failure (see WriteIn).
func WriteFile(path string, data []byte) error {
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
// is synced so that the rename itself survives a power loss.
func WriteIn(root *os.Root, name string, data []byte) error {
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
