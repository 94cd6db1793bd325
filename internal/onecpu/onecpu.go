//go:build linux

// Package onecpu runs a step with every CPU but CPU 0 offline: the VM
// tests' way to patch the kernel's code safely.
//
// Arming a kprobe, or a tracepoint's first or second probe, patches
// kernel code (text_poke_bp: an int3 on the site, an IPI to every CPU,
// the new bytes). Under qemu's multi-threaded TCG a virtual CPU can keep
// a translation made while the int3 was there and trap on it without
// end, interrupts off, so that it never answers the next patch's IPI and
// the whole guest stops (docs/spikes.md). With no other CPU running,
// nothing can hold such a translation.
package onecpu

import (
	"fmt"
	"os"
	"path/filepath"
)

// Run takes every online CPU but CPU 0 offline, runs f, and brings them
// back, whatever f returned.
func Run(f func() error) (err error) {
	others, _ := filepath.Glob("/sys/devices/system/cpu/cpu[1-9]*/online")
	var offline []string
	defer func() {
		for _, o := range offline {
			if werr := os.WriteFile(o, []byte("1"), 0); werr != nil && err == nil {
				err = fmt.Errorf("bring %s back: %w", o, werr)
			}
		}
	}()
	for _, o := range others {
		if b, _ := os.ReadFile(o); len(b) > 0 && b[0] == '1' {
			if err := os.WriteFile(o, []byte("0"), 0); err != nil {
				return fmt.Errorf("offline %s: %w", o, err)
			}
			offline = append(offline, o)
		}
	}
	return f()
}
