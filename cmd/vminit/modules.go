//go:build linux

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/internal/initramfs/kmod"
)

// moduleOrderFile lists the modules to load, dependencies first.
const moduleOrderFile = kmod.ArchiveOrder

// loadModules loads every module named in orderFile (one file name a
// line, relative to the file's directory) in the order given. No file
// means no modules.
func loadModules(out io.Writer, orderFile string) error {
	f, err := os.Open(orderFile)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(out, "vminit: no %s, no modules to load\n", orderFile)
		return nil
	}
	if err != nil {
		return fmt.Errorf("modules: %w", err)
	}
	defer f.Close()
	params := cmdlineParams(readCmdline())
	var loaded []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name := strings.TrimSpace(sc.Text())
		if name == "" {
			continue
		}
		if err := loadModule(filepath.Join(filepath.Dir(orderFile), name), params[kmod.Canonical(name)]); err != nil {
			return err
		}
		loaded = append(loaded, strings.TrimSuffix(name, ".ko"))
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("modules: %s: %w", orderFile, err)
	}
	fmt.Fprintf(out, "vminit: loaded modules %s\n", strings.Join(loaded, " "))
	return nil
}

// readCmdline is the kernel's command line ("" when it cannot be read).
func readCmdline() string {
	b, _ := os.ReadFile("/proc/cmdline")
	return string(b)
}

// cmdlineParams gathers the MODULE.PARAM=VALUE words of a kernel command
// line by module (its canonical name), as modprobe would pass them: with
// no modprobe in the VM, vminit does (e.g. snd_usb_audio.lowlatency=0).
func cmdlineParams(cmdline string) map[string]string {
	params := map[string]string{}
	for _, w := range strings.Fields(cmdline) {
		k, v, ok := strings.Cut(w, "=")
		mod, param, ok2 := strings.Cut(k, ".")
		if !ok || !ok2 || mod == "" || param == "" {
			continue
		}
		m := kmod.Canonical(mod)
		params[m] = strings.TrimSpace(params[m] + " " + param + "=" + v)
	}
	return params
}

// loadModule loads one module with params (the kernel's "p1=v1 p2=v2"; ""
// for its defaults). A module that is already there (built into this
// kernel) is fine.
func loadModule(path, params string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("module: %w", err)
	}
	defer f.Close()
	if err := unix.FinitModule(int(f.Fd()), params, 0); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("finit_module %s: %w", path, err)
	}
	return nil
}

// waitPCMNodes waits until devtmpfs has a node under devSnd for every PCM
// stream the kernel lists under procAsound, and until there is at least
// one: card drivers register their devices asynchronously from module
// loading, and a test must not race them.
func waitPCMNodes(out io.Writer, procAsound, devSnd string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		nodes, missing, err := pcmNodes(procAsound, devSnd)
		if err != nil {
			return err
		}
		if len(nodes) > 0 && len(missing) == 0 {
			fmt.Fprintf(out, "vminit: PCM nodes ready: %s\n", strings.Join(nodes, " "))
			return nil
		}
		if time.Now().After(deadline) {
			if len(nodes) == 0 {
				return fmt.Errorf("no PCM device under %s after %v (sound modules not loaded?)", procAsound, timeout)
			}
			return fmt.Errorf("PCM nodes missing after %v: %s", timeout, strings.Join(missing, " "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pcmNodes returns the device nodes of the PCM streams listed as
// procAsound/cardN/pcmD{p,c} (named pcmCNDD{p,c} under devSnd) and those
// of them that do not exist yet.
func pcmNodes(procAsound, devSnd string) (nodes, missing []string, err error) {
	streams, err := filepath.Glob(filepath.Join(procAsound, "card*", "pcm*[pc]"))
	if err != nil {
		return nil, nil, fmt.Errorf("pcm nodes: %w", err)
	}
	for _, s := range streams {
		cardDir, stream := filepath.Base(filepath.Dir(s)), filepath.Base(s)
		card, err1 := strconv.Atoi(strings.TrimPrefix(cardDir, "card"))
		dev, err2 := strconv.Atoi(stream[len("pcm") : len(stream)-1])
		if err1 != nil || err2 != nil {
			continue // a name the glob matched that is not a stream
		}
		dir := stream[len(stream)-1]
		node := filepath.Join(devSnd, fmt.Sprintf("pcmC%dD%d%c", card, dev, dir))
		nodes = append(nodes, node)
		if _, err := os.Stat(node); err != nil {
			missing = append(missing, node)
		}
	}
	return nodes, missing, nil
}
