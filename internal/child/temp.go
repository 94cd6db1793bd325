package child

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// tempPrefix names the private temporary directories of children.
const tempPrefix = "latencytest-child-"

// tempDir is a child's private temporary directory. The parent holds an
// exclusive flock on it while it may be in use, so that a later run can
// tell the directory of a killed run (no lock: remove it) from one in use
// — in any PID namespace, with no pid to be reused.
type tempDir struct {
	path string
	lock *os.File
	once sync.Once
	err  error
}

// newTempDir creates a private temporary directory in dir, first removing
// those that killed runs left there.
func newTempDir(dir string) (*tempDir, error) {
	removeStale(dir)
	path, err := os.MkdirTemp(dir, tempPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	lock, err := lockDir(path, 0)
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	return &tempDir{path: path, lock: lock}, nil
}

// lockDir opens path, a directory and not a symlink, and flocks it
// exclusively (with unix.LOCK_NB in how: or fails at once).
func lockDir(path string, how int) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	if err := unix.Flock(fd, unix.LOCK_EX|how); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	return f, nil
}

// removeStale removes the children's directories in dir that nobody holds.
func removeStale(dir string) {
	names, _ := filepath.Glob(filepath.Join(dir, tempPrefix+"*"))
	for _, n := range names {
		if f, err := lockDir(n, unix.LOCK_NB); err == nil {
			os.RemoveAll(n)
			f.Close()
		}
	}
}

// remove removes the directory and whatever the child left in it, saying
// what that was. It is safe on a nil tempDir and more than once.
func (t *tempDir) remove() error {
	if t == nil {
		return nil
	}
	t.once.Do(func() {
		defer t.lock.Close()
		ents, _ := os.ReadDir(t.path)
		var left []string
		for _, e := range ents {
			left = append(left, e.Name())
		}
		rmErr := os.RemoveAll(t.path)
		if len(left) > 0 {
			sort.Strings(left)
			t.err = fmt.Errorf("left %s behind in %s (removed: %v)", strings.Join(left, ", "), t.path, rmErr == nil)
		} else if rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			t.err = rmErr
		}
	})
	return t.err
}
