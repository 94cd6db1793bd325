// Package procfile reads the kernel's generated files (/proc, /sys) with
// as few system calls as it takes. os.ReadFile makes seven for one of
// them: the open, the poller's fcntl and epoll_ctl, an fstat whose size
// the kernel gives as 0, two reads and the close. The check and every
// phase's end walk every thread's files, so on a machine with a few
// hundred tasks (hackbench) those calls are most of a run's start.
package procfile

import (
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Read reads the file at path into buf in one read(2) and returns what it
// read: three system calls in all. A /proc stat file is rendered whole
// in one read when buf holds it; a longer file is cut at len(buf).
func Read(path string, buf []byte) ([]byte, error) {
	fd, err := open(path)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n, err := read(fd, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// ReadAll reads the whole file at path: the open, reads until the end
// of the file, the close.
func ReadAll(path string) ([]byte, error) {
	fd, err := open(path)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := read(fd, buf[len(buf):cap(buf)])
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

func open(path string) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func read(fd int, buf []byte) (int, error) {
	for {
		n, err := unix.Read(fd, buf)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// FS is a directory tree as os.DirFS gives it, whose ReadFile (the one
// fs.ReadFile calls) is ReadAll.
type FS struct {
	root string
	dir  fs.FS
}

// Dir is the tree at root.
func Dir(root string) FS { return FS{root: root, dir: os.DirFS(root)} }

// Open opens name as os.DirFS does.
func (f FS) Open(name string) (fs.File, error) { return f.dir.Open(name) }

// ReadDir lists name as os.DirFS does.
func (f FS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(f.dir, name) }

// Stat describes name as os.DirFS does.
func (f FS) Stat(name string) (fs.FileInfo, error) { return fs.Stat(f.dir, name) }

// ReadFile reads the whole of name with ReadAll.
func (f FS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrInvalid}
	}
	b, err := ReadAll(filepath.Join(f.root, filepath.FromSlash(name)))
	if err != nil {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: err}
	}
	return b, nil
}
