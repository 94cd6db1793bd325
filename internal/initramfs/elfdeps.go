package initramfs

import (
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// A Copy is a file of a root directory that an archive needs: Src on the
// host, Dest its path in the archive (the path the program names or the
// loader finds it at, not where a symbolic link leads).
type Copy struct{ Dest, Src string }

// Needs lists what the dynamic executable bin (a host path) needs to run
// in an archive with no ld.so.cache, found in root (a directory holding a
// system's tree: "/" for the host, or unpacked packages): its loader at
// the path its PT_INTERP names, and every library its DT_NEEDED entries
// name, and theirs, from the first of dirs (the loader's search path, as
// paths in root) that holds it. Symbolic links are followed inside root,
// an absolute target being root's, never the host's. An object's own
// DT_RUNPATH (or, without one, DT_RPATH) directories are searched for its
// DT_NEEDED before dirs, as the loader does (absolute entries only; one
// with $ORIGIN or another token is an error). A shared library (no
// PT_INTERP: a plugin a program dlopens, such as PipeWire's modules)
// needs what its DT_NEEDED entries name, recursively; the loader comes
// with the program that loads it. A static executable needs nothing.
func Needs(root, bin string, dirs []string) ([]Copy, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, err
	}
	interp, err := interpreter(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", bin, err)
	}
	var copies []Copy
	seen := map[string]bool{}
	if interp != "" {
		src, err := RootPath(root, interp)
		if err != nil {
			return nil, fmt.Errorf("%s's loader %s: %w", bin, interp, err)
		}
		copies = append(copies, Copy{interp, src})
		// The loader is loaded already: a DT_NEEDED of its name (libc's)
		// is it, which the loader finds by that name among what it has
		// loaded.
		seen[path.Base(interp)] = true
	}
	for todo := []string{bin}; len(todo) > 0; todo = todo[1:] {
		needed, runpath, err := neededBy(todo[0])
		if err != nil {
			return nil, err
		}
		for _, n := range needed {
			if seen[n] {
				continue
			}
			seen[n] = true
			c, err := find(root, n, append(runpath, dirs...))
			if err != nil {
				return nil, fmt.Errorf("%s (named by %s): %w", n, todo[0], err)
			}
			copies = append(copies, c)
			todo = append(todo, c.Src)
		}
	}
	return copies, nil
}

// interpreter is the loader f's PT_INTERP names ("" for none).
func interpreter(f *elf.File) (string, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", fmt.Errorf("PT_INTERP: %w", err)
		}
		return strings.TrimRight(string(b), "\x00"), nil
	}
	return "", nil
}

// neededBy lists the DT_NEEDED entries of the ELF file at p, and the
// directories its DT_RUNPATH (else its DT_RPATH) names.
func neededBy(p string) (needed, runpath []string, err error) {
	f, err := elf.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: DT_NEEDED: %w", p, err)
	}
	rp, err := f.DynString(elf.DT_RUNPATH)
	if err == nil && len(rp) == 0 {
		rp, err = f.DynString(elf.DT_RPATH)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: DT_RUNPATH: %w", p, err)
	}
	for _, s := range rp {
		for _, d := range strings.Split(s, ":") {
			switch {
			case d == "":
			case strings.Contains(d, "$") || !strings.HasPrefix(d, "/"):
				return nil, nil, fmt.Errorf("%s: run path %q: only absolute directories are followed", p, d)
			default:
				runpath = append(runpath, d)
			}
		}
	}
	return libs, runpath, nil
}

// find looks for the library name in dirs, in order.
func find(root, name string, dirs []string) (Copy, error) {
	if strings.Contains(name, "/") {
		return Copy{}, errors.New("a DT_NEEDED with a path (only names are searched)")
	}
	for _, d := range dirs {
		p := path.Join(d, name)
		if src, err := RootPath(root, p); err == nil {
			return Copy{p, src}, nil
		}
	}
	return Copy{}, fmt.Errorf("in none of %s", strings.Join(dirs, ", "))
}

// maxLinks bounds the symbolic links RootPath follows, as the kernel's
// ELOOP does (40).
const maxLinks = 40

// RootPath is the host path of p (absolute, a path inside root) with
// every symbolic link on the way followed inside root, an absolute target
// being root's and ".." stopping at root; it fails unless it ends at a
// regular file.
func RootPath(root, p string) (string, error) {
	rest, at, links := strings.TrimPrefix(p, "/"), "", 0
	for rest != "" {
		comp, tail, _ := strings.Cut(rest, "/")
		rest = tail
		switch comp {
		case "", ".":
			continue
		case "..":
			at = path.Dir("/" + at)[1:]
			continue
		}
		next := path.Join(at, comp)
		fi, err := os.Lstat(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			at = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: more than %d symbolic links", p, maxLinks)
		}
		t, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(t, "/") {
			at = ""
		}
		rest = strings.TrimPrefix(t, "/") + "/" + rest
	}
	full := filepath.Join(root, at)
	fi, err := os.Lstat(full)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s: not a regular file", p)
	}
	return full, nil
}
