// Package initramfs writes the "newc" cpio archives the Linux kernel
// unpacks into its root filesystem at boot (see the kernel's
// Documentation/driver-api/early-userspace/buffer-format.rst).
//
// scripts/vmtest uses it to boot a test kernel with our own /init; writing
// the archive ourselves keeps the VM build independent of cpio(1) and of
// the host's file ownership, and makes the archive reproducible: every
// entry is owned by root and has mtime 0.
package initramfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// File type bits of the cpio mode field (the same as struct stat's).
const (
	typeDir     = 0o040000
	typeReg     = 0o100000
	typeSymlink = 0o120000
	typeChar    = 0o020000
)

// trailer is the name of the entry that ends every archive.
const trailer = "TRAILER!!!"

// A Writer writes one newc archive. The kernel does not create missing
// parent directories while unpacking, so the Writer adds every parent of
// a name before the name itself, once. Names are absolute or relative
// paths inside the archive ("/bin/x" and "bin/x" are the same entry).
//
// Close must be called to write the trailer.
type Writer struct {
	w      io.Writer
	off    int64           // bytes written, for the 4-byte alignment
	ino    uint32          // last inode number handed out
	seen   map[string]bool // names written so far
	closed bool
	err    error // first write error; later calls return it
}

// NewWriter returns a Writer that writes the archive to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, seen: map[string]bool{}}
}

// Dir adds a directory.
func (w *Writer) Dir(name string, perm fs.FileMode) error {
	n, err := w.clean(name)
	if err != nil {
		return err
	}
	if w.seen[n] {
		return nil
	}
	if err := w.parents(n); err != nil {
		return err
	}
	return w.entry(n, typeDir|uint32(perm.Perm()), 2, 0, 0, nil)
}

// File adds a regular file with the given contents.
func (w *Writer) File(name string, perm fs.FileMode, data []byte) error {
	return w.add(name, typeReg|uint32(perm.Perm()), 0, 0, data)
}

// Symlink adds a symbolic link name pointing at target.
func (w *Writer) Symlink(name, target string) error {
	return w.add(name, typeSymlink|0o777, 0, 0, []byte(target))
}

// CharDev adds a character device node, e.g. /dev/console (5, 1), which
// the kernel opens as the first process's stdin, stdout and stderr before
// anything could mount devtmpfs.
func (w *Writer) CharDev(name string, perm fs.FileMode, major, minor uint32) error {
	return w.add(name, typeChar|uint32(perm.Perm()), major, minor, nil)
}

// CopyFile adds the host file src as name, keeping its permission bits.
func (w *Writer) CopyFile(name, src string) error {
	st, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("initramfs: %s is not a regular file", src)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	return w.File(name, st.Mode().Perm(), data)
}

// CopyTree adds the host directory src as name, recursively, in lexical
// order. Regular files, directories and symbolic links are copied; other
// file types are an error.
func (w *Writer) CopyTree(name, src string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("initramfs: %w", err)
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return fmt.Errorf("initramfs: %w", err)
		}
		dst := path.Join(name, filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("initramfs: %w", err)
		}
		switch {
		case d.IsDir():
			return w.Dir(dst, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("initramfs: %w", err)
			}
			return w.Symlink(dst, target)
		case d.Type().IsRegular():
			return w.CopyFile(dst, p)
		}
		return fmt.Errorf("initramfs: %s: unsupported file type %v", p, d.Type())
	})
}

// Close writes the trailer. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	return w.entry(trailer, 0, 1, 0, 0, nil)
}

// add writes a non-directory entry after its parents. Writing the same
// name twice is an error: the kernel would silently keep the last one,
// which hides a mistake in whoever assembles the archive.
func (w *Writer) add(name string, mode, major, minor uint32, data []byte) error {
	n, err := w.clean(name)
	if err != nil {
		return err
	}
	if w.seen[n] {
		return fmt.Errorf("initramfs: %s added twice", n)
	}
	if err := w.parents(n); err != nil {
		return err
	}
	return w.entry(n, mode, 1, major, minor, data)
}

// clean turns name into the archive's form: relative, slash-separated,
// no "." or ".." elements.
func (w *Writer) clean(name string) (string, error) {
	if w.closed {
		return "", errors.New("initramfs: write after Close")
	}
	n := strings.TrimPrefix(path.Clean("/"+name), "/")
	if n == "" {
		return "", fmt.Errorf("initramfs: empty name %q", name)
	}
	return n, nil
}

// parents adds the missing parent directories of n, outermost first.
func (w *Writer) parents(n string) error {
	dir := path.Dir(n)
	if dir == "." || w.seen[dir] {
		return nil
	}
	return w.Dir(dir, 0o755)
}

// entry writes one header, name and body. The newc header is the magic
// "070701" and thirteen 8-digit hex fields; the name (with its NUL) and
// the body are each padded to a multiple of 4 bytes.
func (w *Writer) entry(name string, mode, nlink, rmajor, rminor uint32, data []byte) error {
	if w.err != nil {
		return w.err
	}
	ino := uint32(0)
	if name != trailer {
		w.ino++
		ino = w.ino
		w.seen[name] = true
	}
	hdr := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		ino, mode, 0, 0, nlink, 0, // ino, mode, uid, gid, nlink, mtime
		len(data), 0, 0, rmajor, rminor, // filesize, devmajor, devminor, rdevmajor, rdevminor
		len(name)+1, 0) // namesize, check
	w.write([]byte(hdr))
	w.write([]byte(name + "\x00"))
	w.pad()
	w.write(data)
	w.pad()
	return w.err
}

func (w *Writer) write(b []byte) {
	if w.err != nil || len(b) == 0 {
		return
	}
	n, err := w.w.Write(b)
	w.off += int64(n)
	if err != nil {
		w.err = fmt.Errorf("initramfs: %w", err)
	}
}

var zeros [3]byte

func (w *Writer) pad() {
	if r := w.off % 4; r != 0 {
		w.write(zeros[:4-r])
	}
}
