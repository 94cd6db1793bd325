// Package kmod works out which kernel modules a set of modules needs and
// the order to load them in, from the modules themselves.
//
// A kernel package ships its .ko files without modules.dep (depmod writes
// that at install time), so the dependencies are read where depmod reads
// them: the "depends=" string in each module's .modinfo ELF section.
package kmod

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// Where an initramfs built by internal/initramfs/cmd/mkinitramfs keeps the
// modules, and the file listing their names (one a line) in load order;
// cmd/vminit loads them from there.
const (
	ArchiveDir   = "/lib/modules"
	ArchiveOrder = ArchiveDir + "/load.order"
)

// A Module is one kernel module file.
type Module struct {
	Name    string   // canonical name: "-" written as "_", as the kernel does
	Path    string   // the .ko file
	Depends []string // canonical names of the modules it needs loaded first
}

// Canonical returns the kernel's spelling of a module name or file name
// ("snd-pcm", "snd_pcm.ko" → "snd_pcm").
func Canonical(name string) string {
	return strings.ReplaceAll(strings.TrimSuffix(filepath.Base(name), ".ko"), "-", "_")
}

// Read reads the module file at path.
func Read(path string) (Module, error) {
	f, err := elf.Open(path)
	if err != nil {
		if isCompressed(path) {
			return Module{}, fmt.Errorf("kmod: %s is compressed; decompress it first (xz -d / zstd -d)", path)
		}
		return Module{}, fmt.Errorf("kmod: %w", err)
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return Module{}, fmt.Errorf("kmod: %s has no .modinfo section; not a kernel module?", path)
	}
	info, err := sec.Data()
	if err != nil {
		return Module{}, fmt.Errorf("kmod: %s: reading .modinfo: %w", path, err)
	}
	m := Module{Name: Canonical(path), Path: path}
	// .modinfo is a sequence of NUL-terminated key=value strings.
	for _, kv := range bytes.Split(info, []byte{0}) {
		k, v, ok := bytes.Cut(kv, []byte("="))
		if !ok {
			continue
		}
		switch string(k) {
		case "name":
			m.Name = Canonical(string(v))
		case "depends":
			for _, d := range strings.Split(string(v), ",") {
				if d != "" {
					m.Depends = append(m.Depends, Canonical(d))
				}
			}
		}
	}
	return m, nil
}

func isCompressed(path string) bool {
	return strings.HasSuffix(path, ".ko.xz") || strings.HasSuffix(path, ".ko.zst") || strings.HasSuffix(path, ".ko.gz")
}

// Index maps the canonical name of every .ko file under dir to its path.
// Compressed modules are reported as an error rather than left out, so
// that a kernel that starts compressing its modules fails loudly.
func Index(dir string) (map[string]string, error) {
	idx := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if isCompressed(p) {
			return fmt.Errorf("%s is compressed; decompress it first (xz -d / zstd -d)", p)
		}
		if strings.HasSuffix(p, ".ko") {
			idx[Canonical(p)] = p
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("kmod: %w", err)
	}
	return idx, nil
}

// LoadOrder returns the modules named in want and everything they depend
// on, each once, every module after the modules it depends on. The
// modules are looked up under dir.
func LoadOrder(dir string, want []string) ([]Module, error) {
	idx, err := Index(dir)
	if err != nil {
		return nil, err
	}
	return order(want, func(name string) (Module, error) {
		p, ok := idx[name]
		if !ok {
			return Module{}, fmt.Errorf("kmod: module %s not found under %s", name, dir)
		}
		return Read(p)
	})
}

// order does LoadOrder's depth-first walk; read fetches one module.
func order(want []string, read func(name string) (Module, error)) ([]Module, error) {
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var out []Module
	var visit func(name string, chain []string) error
	visit = func(name string, chain []string) error {
		switch state[name] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("kmod: dependency cycle: %s -> %s", strings.Join(chain, " -> "), name)
		}
		state[name] = visiting
		m, err := read(name)
		if err != nil {
			if len(chain) > 0 {
				return fmt.Errorf("%w (needed by %s)", err, chain[len(chain)-1])
			}
			return err
		}
		for _, d := range m.Depends {
			if err := visit(d, append(chain, name)); err != nil {
				return err
			}
		}
		state[name] = done
		out = append(out, m)
		return nil
	}
	for _, w := range want {
		if err := visit(Canonical(w), nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}
