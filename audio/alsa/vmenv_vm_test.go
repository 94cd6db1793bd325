//go:build vm

package alsa

import (
	"os"
	"testing"
)

// What the VM lacks, scripts/vmtest says in the environment (docs/vmtest.md):
// snd-dummy, when a VMTEST_KERNEL has none (Debian's ARM kernels, built
// without it, get one built by the script). A test that needs it skips
// then, with the script's reason in its output; with Debian's kernels it
// is never set, so nothing skips there. aplay is in every VM the script
// boots (on ARM Debian's alsa-utils of the architecture).

// haveDummy reports whether the VM has the snd-dummy card.
func haveDummy() bool { return os.Getenv("VMTEST_NO_SND_DUMMY") == "" }

// needDummy skips t on a VM without the snd-dummy card.
func needDummy(t testing.TB) {
	t.Helper()
	if !haveDummy() {
		t.Skipf("not run: %s (scripts/vmtest -arch %s; docs/vmtest.md)", os.Getenv("VMTEST_NO_SND_DUMMY"), os.Getenv("VMTEST_ARCH"))
	}
}

// needAplay skips t on a VM without the snd-dummy card, which the aplay
// comparisons play on.
func needAplay(t testing.TB) {
	t.Helper()
	needDummy(t)
}
