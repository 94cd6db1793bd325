// Command mkinitramfs writes the initramfs scripts/vmtest boots: a newc
// cpio archive with an /init program, the kernel modules it loads (and
// the order to load them in), and any host files or directories.
//
// Usage:
//
//	mkinitramfs -o initrd.cpio -init vminit [-modules DIR -load snd-dummy,snd-aloop]
//		[-libroot ROOT -libdirs DIR:DIR...] [DEST=SRC ...]
//
// Each DEST=SRC copies the host file or directory SRC to DEST in the
// archive. With -libroot, each SRC that is a dynamic executable brings
// what it needs to run (initramfs.Needs): its loader and its libraries
// (a shared library, such as a plugin given as a file of its own, its
// libraries), found in ROOT (a system's tree: / for the host's, or unpacked packages)
// in the -libdirs, the loader's search path, in order. The modules named by -load and everything they depend on are
// found under DIR (an extracted lib/modules/VERSION) and written to
// /lib/modules/NAME.ko, with /lib/modules/load.order listing the file
// names in an order that loads every module after its dependencies.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"latencytest/internal/initramfs"
	"latencytest/internal/initramfs/kmod"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

type badInput struct{ msg string }

func (b badInput) Error() string { return b.msg }

func run(args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("mkinitramfs", flag.ContinueOnError)
	fl.SetOutput(stderr)
	out := fl.String("o", "", "write the archive to `FILE`")
	initProg := fl.String("init", "", "the /init program (a static executable)")
	modDir := fl.String("modules", "", "find kernel modules under `DIR`")
	load := fl.String("load", "", "comma-separated `MODULES` to include, with their dependencies, in load order")
	libRoot := fl.String("libroot", "", "find what dynamic executables need in `ROOT`")
	libDirs := fl.String("libdirs", "", "colon-separated `DIRS` of -libroot the loader searches, in order")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	err := build(*out, *initProg, *modDir, *load, libs{*libRoot, *libDirs}, fl.Args())
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "mkinitramfs: %v\n", err)
	if _, ok := err.(badInput); ok {
		return 2
	}
	return 1
}

// libs is where dynamic executables' loader and libraries are found.
type libs struct{ root, dirs string }

func build(out, initProg, modDir, load string, lb libs, entries []string) error {
	switch {
	case out == "":
		return badInput{"-o FILE is required"}
	case initProg == "":
		return badInput{"-init FILE is required"}
	case (modDir == "") != (load == ""):
		return badInput{"-modules DIR and -load MODULES go together"}
	case (lb.root == "") != (lb.dirs == ""):
		return badInput{"-libroot ROOT and -libdirs DIRS go together"}
	}
	var copies []initramfs.Copy
	for _, e := range entries {
		dest, src, ok := strings.Cut(e, "=")
		if !ok || !strings.HasPrefix(dest, "/") || src == "" {
			return badInput{fmt.Sprintf("argument %q: want DEST=SRC with an absolute DEST", e)}
		}
		copies = append(copies, initramfs.Copy{Dest: dest, Src: src})
	}
	copies, err := withLibs(copies, lb)
	if err != nil {
		return err
	}
	var mods []kmod.Module
	if load != "" {
		if mods, err = kmod.LoadOrder(modDir, strings.Split(load, ",")); err != nil {
			return err
		}
	}

	f, err := os.CreateTemp(filepath.Dir(out), ".mkinitramfs-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // a no-op once renamed
	bw := bufio.NewWriterSize(f, 1<<20)
	w := initramfs.NewWriter(bw)
	if err := skeleton(w); err != nil {
		return err
	}
	if err := w.CopyFile("/init", initProg); err != nil {
		return err
	}
	var order strings.Builder
	for _, m := range mods {
		name := m.Name + ".ko"
		if err := w.CopyFile(kmod.ArchiveDir+"/"+name, m.Path); err != nil {
			return err
		}
		order.WriteString(name + "\n")
	}
	if len(mods) > 0 {
		if err := w.File(kmod.ArchiveOrder, 0o644, []byte(order.String())); err != nil {
			return err
		}
	}
	for _, c := range copies {
		st, err := os.Stat(c.Src)
		if err != nil {
			return err
		}
		if st.IsDir() {
			err = w.CopyTree(c.Dest, c.Src)
		} else {
			err = w.CopyFile(c.Dest, c.Src)
		}
		if err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return os.Rename(f.Name(), out)
}

// withLibs adds to copies what each dynamic executable or shared library
// among them (not inside a directory) needs
// (lb.root "": nothing), each file once, at its first path.
func withLibs(copies []initramfs.Copy, lb libs) ([]initramfs.Copy, error) {
	if lb.root == "" {
		return copies, nil
	}
	have := map[string]bool{}
	for _, c := range copies {
		have[c.Dest] = true
	}
	all := copies
	for _, c := range copies {
		if !isELF(c.Src) {
			continue
		}
		needs, err := initramfs.Needs(lb.root, c.Src, strings.Split(lb.dirs, ":"))
		if err != nil {
			return nil, err
		}
		for _, n := range needs {
			if !have[n.Dest] {
				have[n.Dest] = true
				all = append(all, n)
			}
		}
	}
	return all, nil
}

// isELF says whether p is a regular file that starts as an ELF file does.
func isELF(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false
	}
	magic := make([]byte, 4)
	_, err = io.ReadFull(f, magic)
	return err == nil && string(magic) == "\x7fELF"
}

// skeleton adds what /init needs before it can mount anything: the mount
// points and /dev/console, which the kernel opens as /init's stdin,
// stdout and stderr before devtmpfs exists.
func skeleton(w *initramfs.Writer) error {
	for _, d := range []struct {
		name string
		perm os.FileMode
	}{{"/proc", 0o555}, {"/sys", 0o555}, {"/dev", 0o755}, {"/tmp", 0o755}, {"/bin", 0o755}, {"/etc", 0o755}} {
		if err := w.Dir(d.name, d.perm); err != nil {
			return err
		}
	}
	return w.CharDev("/dev/console", 0o600, 5, 1)
}
