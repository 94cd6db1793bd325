//go:build vm

package alsa

import (
	"os"
	"testing"
)

// What the VM lacks, scripts/vmtest says in the environment (docs/vmtest.md):
// snd-dummy, when a VMTEST_KERNEL has none (Debian's ARM kernels, built
// without it, get one built by the script), and aplay, which the ARM VMs
// do not have yet. A test that needs one skips then, with the script's
// reason in its output; with Debian's amd64 kernel neither is ever set,
// so nothing skips there.

// haveDummy reports whether the VM has the snd-dummy card.
func haveDummy() bool { return os.Getenv("VMTEST_NO_SND_DUMMY") == "" }

// needDummy skips t on a VM without the snd-dummy card.
func needDummy(t testing.TB) {
	t.Helper()
	if !haveDummy() {
		t.Skipf("not run: %s (scripts/vmtest -arch %s; docs/vmtest.md)", os.Getenv("VMTEST_NO_SND_DUMMY"), os.Getenv("VMTEST_ARCH"))
	}
}

// needAplay skips t on a VM without aplay, and without the snd-dummy
// card aplay plays on.
func needAplay(t testing.TB) {
	t.Helper()
	needDummy(t)
	if why := os.Getenv("VMTEST_NO_APLAY"); why != "" {
		t.Skipf("not run: %s (scripts/vmtest -arch %s; docs/vmtest.md)", why, os.Getenv("VMTEST_ARCH"))
	}
}
