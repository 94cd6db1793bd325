// Package held is the one owner of every kernel setting latencytest
// changes for a while (the real-time budget, the osnoise tracer's
// settings), across all its processes: two overlapping runs, a guard
// killed with SIGKILL, a run after a crash.
//
// A setting's record, a file in a directory of root's (Dir, /run: gone at
// the next boot), says what the setting was when the first holder found
// it and who holds it now: each holder's pid, start time and PID
// namespace (procfile.Proc), so that a pid reused by another process is
// not taken for a holder. Every change to a record is made under an
// exclusive flock of the directory. The first holder records what it
// finds and then changes the setting; later holders only add themselves;
// the last to let go writes back what the first found. A holder that died
// without letting go (SIGKILL) is dropped by the next Acquire, Release or
// Recover (latencytest check --restore), and when no live holder is left
// the setting is put back from the record: never from a value another run
// wrote, which is what the setting held while it was held.
package held

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"latencytest/internal/atomicfile"
	"latencytest/internal/procfile"
)

// Dir is where the records are kept.
const Dir = "/run/latencytest"

// Kernel is what the records of Dir may write: the kernel's settings.
func Kernel() []string {
	return []string{"/proc/sys/kernel/", "/sys/kernel/tracing/", "/sys/kernel/debug/tracing/"}
}

// OpenKernel opens the store of the kernel's settings: Dir.
func OpenKernel() (*Store, error) { return Open(Dir, Kernel()) }

// Write is one write to a setting's file.
type Write struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// Setting is a kernel setting to hold.
type Setting struct {
	// Name names its record: lower-case letters, digits and '-'.
	Name string
	// Found reads the setting as it is and returns the writes that put it
	// back so. It is called only when nobody holds the setting.
	Found func() ([]Write, error)
	// Set is what a holder writes.
	Set []Write
	// Exclusive settings have one holder at a time; the others are shared
	// by holders that set the same.
	Exclusive bool
}

// holder is one hold of a setting by one process.
type holder struct {
	procfile.Proc
	Boot string `json:"boot"` // the boot it was taken in (/proc/sys/kernel/random/boot_id)
	ID   string `json:"id"`   // tells two holds of one process apart
}

// record is a setting's file in the store.
type record struct {
	Found     []Write  `json:"found"`
	Set       []Write  `json:"set"`
	Exclusive bool     `json:"exclusive,omitempty"`
	Holders   []holder `json:"holders"`
}

// maxRecord bounds a record read.
const maxRecord = 64 << 10

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// Store is a directory of records.
type Store struct {
	dir   string
	allow []string
	self  procfile.Proc
	boot  string
}

// Open opens the store in dir, creating it (mode 0700) when it does not
// exist. dir must be a directory, not a symlink, of this process's user
// and no one else's (mode 0700). Its records write only to files under one
// of the allow prefixes (Kernel for Dir; a test's own directory for a
// test's store), whatever a record says.
func Open(dir string, allow []string) (*Store, error) {
	if err := unix.Mkdir(dir, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("settings record: create %s: %w", dir, err)
	}
	self, err := procfile.Self()
	if err != nil {
		return nil, fmt.Errorf("settings record: this process: %w", err)
	}
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	s := &Store{dir: dir, allow: allow, self: self, boot: strings.TrimSpace(string(boot))}
	l, err := s.lock()
	if err != nil {
		return nil, err
	}
	l.unlock()
	return s, nil
}

// locked is the store's directory, flocked.
type locked struct {
	s    *Store
	root *os.Root
	f    *os.File
}

// lock opens the directory, checks it is the store's and flocks it.
func (s *Store) lock() (*locked, error) {
	lfi, err := os.Lstat(s.dir)
	if err != nil {
		return nil, fmt.Errorf("settings record: %w", err)
	}
	if lfi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("settings record: %s is a symlink: refused", s.dir)
	}
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return nil, fmt.Errorf("settings record: %w", err)
	}
	f, err := root.Open(".")
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("settings record: %w", err)
	}
	l := &locked{s: s, root: root, f: f}
	fi, err := f.Stat()
	if err == nil {
		err = checkOwn(s.dir, fi, lfi)
	}
	if err == nil {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
	}
	if err != nil {
		l.unlock()
		return nil, fmt.Errorf("settings record: %w", err)
	}
	return l, nil
}

// checkOwn refuses a directory that is not the one looked at (lfi), or
// that another user owns or may write.
func checkOwn(dir string, fi, lfi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no owner", dir)
	}
	switch {
	case !fi.IsDir() || !os.SameFile(fi, lfi):
		return fmt.Errorf("%s: not the directory it was: refused", dir)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s: owned by uid %d, not %d: refused", dir, st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s: mode %04o, not 0700: refused", dir, fi.Mode().Perm())
	}
	return nil
}

func (l *locked) unlock() {
	l.f.Close() // releases the flock
	l.root.Close()
}

func fileName(name string) string { return name + ".json" }

// read reads a setting's record, nil when there is none.
func (l *locked) read(name string) (*record, error) {
	f, err := l.root.OpenFile(fileName(name), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("settings record %s: %w", l.path(name), err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("settings record %s: not a regular file", l.path(name))
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil {
		return nil, fmt.Errorf("settings record %s: %w", l.path(name), err)
	}
	var r record
	if len(b) > maxRecord {
		err = errors.New("too long")
	} else {
		err = json.Unmarshal(b, &r)
	}
	if err == nil {
		err = l.s.allowed(append(slices.Clone(r.Found), r.Set...))
	}
	if err != nil {
		return nil, fmt.Errorf("settings record %s: %v: not used; remove it once the setting is as it should be", l.path(name), err)
	}
	return &r, nil
}

func (l *locked) path(name string) string { return filepath.Join(l.s.dir, fileName(name)) }

func (l *locked) write(name string, r *record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err == nil {
		err = atomicfile.WriteIn(l.root, fileName(name), append(b, '\n'))
	}
	if err != nil {
		return fmt.Errorf("settings record %s: %w", l.path(name), err)
	}
	return nil
}

func (l *locked) remove(name string) error {
	if err := l.root.Remove(fileName(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("settings record: %w", err)
	}
	return nil
}

// alive says whether h may still hold its setting: a holder of another
// boot is gone; one of another PID namespace cannot be seen from here and
// is taken as alive.
func (s *Store) alive(h holder) bool {
	if h.Boot != s.boot {
		return false
	}
	alive, known := h.Alive()
	return alive || !known
}

// settle drops from r the holders that are gone and the hold id (""
// none); with nobody left it puts the setting back and removes the
// record, else writes it.
func (l *locked) settle(name string, r *record, id string) (restored bool, err error) {
	r.Holders = slices.DeleteFunc(r.Holders, func(h holder) bool { return h.ID == id || !l.s.alive(h) })
	if len(r.Holders) > 0 {
		return false, l.write(name, r)
	}
	if err := l.s.apply(r.Found); err != nil {
		return false, fmt.Errorf("put back %s: %w (its record %s is kept)", name, err, l.path(name))
	}
	return true, l.remove(name)
}

// Hold is one hold of a setting.
type Hold struct {
	// Found is how the setting was before its first holder changed it.
	Found []Write
	// Recovered is what was put back before this hold was taken, from the
	// record of holders that died holding it; nil when none.
	Recovered []Write

	s    *Store
	name string
	id   string
	once sync.Once
	err  error
}

// HeldError is Acquire's error when the setting is held by another
// process in a way that excludes this hold.
type HeldError struct {
	Name string
	By   int // the pid of a holder
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("%s is held by another latencytest (pid %d)", e.Name, e.By)
}

// Acquire holds the setting: it puts back what holders that died left,
// records the setting as found when nobody holds it, adds this process as
// a holder and writes st.Set.
func (s *Store) Acquire(st Setting) (*Hold, error) {
	if !validName.MatchString(st.Name) {
		return nil, fmt.Errorf("settings record: bad name %q", st.Name)
	}
	if err := s.allowed(st.Set); err != nil {
		return nil, err
	}
	l, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer l.unlock()
	h := &Hold{s: s, name: st.Name, id: newID()}
	r, err := l.read(st.Name)
	if err != nil {
		return nil, err
	}
	if r != nil {
		found := r.Found
		restored, err := l.settle(st.Name, r, "")
		if err != nil {
			return nil, err
		}
		if restored {
			h.Recovered, r = found, nil
		}
	}
	switch {
	case r != nil && (r.Exclusive || st.Exclusive):
		return nil, &HeldError{Name: st.Name, By: r.Holders[0].PID}
	case r != nil && !slices.Equal(r.Set, st.Set):
		return nil, fmt.Errorf("%w, set otherwise", &HeldError{Name: st.Name, By: r.Holders[0].PID})
	case r == nil:
		found, err := st.Found()
		if err == nil {
			err = s.allowed(found)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", st.Name, err)
		}
		r = &record{Found: found, Set: st.Set, Exclusive: st.Exclusive}
	}
	r.Holders = append(r.Holders, holder{Proc: s.self, Boot: s.boot, ID: h.id})
	if err := l.write(st.Name, r); err != nil {
		return nil, err
	}
	if err := s.apply(st.Set); err != nil {
		_, uerr := l.settle(st.Name, r, h.id)
		return nil, errors.Join(fmt.Errorf("%s: %w", st.Name, err), uerr)
	}
	h.Found = r.Found
	return h, nil
}

// Release lets go of the hold; the last holder puts the setting back as
// the first found it. It may be called more than once.
func (h *Hold) Release() error {
	h.once.Do(func() {
		l, err := h.s.lock()
		if err != nil {
			h.err = err
			return
		}
		defer l.unlock()
		r, err := l.read(h.name)
		if err != nil || r == nil {
			// No record: a Recover or an Acquire took this hold for a
			// dead one's and put the setting back already.
			h.err = err
			return
		}
		_, h.err = l.settle(h.name, r, h.id)
	})
	return h.err
}

// Recovered is what Recover did for one record.
type Recovered struct {
	Name string
	// Put is what was written back; nil when the setting is still held.
	Put []Write
	// By is the pid of a live holder when it is.
	By int
}

// Recover goes through every record: the settings whose holders are all
// gone are put back as their first holder found them, and their records
// removed; those still held are said so.
func (s *Store) Recover() ([]Recovered, error) {
	l, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer l.unlock()
	ents, err := fs.ReadDir(l.root.FS(), ".")
	if err != nil {
		return nil, fmt.Errorf("settings record: %w", err)
	}
	var out []Recovered
	var errs []error
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !validName.MatchString(name) {
			continue
		}
		r, err := l.read(name)
		if err != nil || r == nil {
			errs = append(errs, err)
			continue
		}
		found := r.Found
		restored, err := l.settle(name, r, "")
		switch {
		case err != nil:
			errs = append(errs, err)
		case restored:
			out = append(out, Recovered{Name: name, Put: found})
		default:
			out = append(out, Recovered{Name: name, By: r.Holders[0].PID})
		}
	}
	return out, errors.Join(errs...)
}

// allowed refuses writes outside the store's prefixes, or to a path that
// is not clean (a "..").
func (s *Store) allowed(ws []Write) error {
	for _, w := range ws {
		ok := filepath.IsAbs(w.Path) && filepath.Clean(w.Path) == w.Path &&
			slices.ContainsFunc(s.allow, func(p string) bool { return strings.HasPrefix(w.Path, p) })
		if !ok {
			return fmt.Errorf("%q is not a setting latencytest changes: refused", w.Path)
		}
	}
	return nil
}

// apply writes ws in order, each to an existing file, never through a
// symlink.
func (s *Store) apply(ws []Write) error {
	if err := s.allowed(ws); err != nil {
		return err
	}
	for _, w := range ws {
		if err := writeSetting(w); err != nil {
			return err
		}
	}
	return nil
}

func writeSetting(w Write) error {
	f, err := os.OpenFile(w.Path, os.O_WRONLY|os.O_TRUNC|unix.O_NOFOLLOW, 0)
	if err == nil {
		_, err = f.WriteString(w.Value)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("write %s to %s: %w (run as root)", w.Value, w.Path, err)
		}
		return fmt.Errorf("write %s to %s: %w", w.Value, w.Path, err)
	}
	return nil
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
