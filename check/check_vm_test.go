//go:build vm

package check

import (
	"os"
	"strings"
	"testing"
)

// TestVMCheck runs every check on a real Debian kernel (scripts/vmtest):
// a PREEMPT_DYNAMIC kernel without debugfs mounted, two soundcards without
// interrupts (snd-dummy, snd-aloop), root, /tmp on tmpfs.
func TestVMCheck(t *testing.T) {
	if os.Getenv("VMTEST") != "1" {
		t.Fatal("this test runs inside scripts/vmtest's VM")
	}
	fs := Run()
	for _, f := range fs {
		t.Logf("%-4s %-30s %s", f.Status, f.Name, f.Value)
		if f.Value == "" || (f.Status != OK && f.Status != WARN && f.Status != INFO) {
			t.Errorf("malformed finding %+v", f)
		}
	}
	m := byName(fs)
	// Debian's amd64 kernel is PREEMPT_DYNAMIC; its arm64 and armmp 6.1
	// kernels are not (CONFIG_PREEMPT_VOLUNTARY, no CONFIG_PREEMPT_DYNAMIC
	// in their config), which the check cannot tell from "none" without
	// the config (scripts/vmtest -arch; docs/vmtest.md).
	want := "dynamic"
	if a := os.Getenv("VMTEST_ARCH"); a != "" && a != "amd64" {
		want = "voluntary or none"
	}
	if f := m["preemption model"]; !strings.Contains(f.Value, want) {
		t.Errorf("preemption model on Debian's %s kernel: %s %q, want %q", os.Getenv("VMTEST_ARCH"), f.Status, f.Value, want)
	}
	if f := m["rtprio limit"]; f.Status != OK || !strings.Contains(f.Value, "CAP_SYS_NICE") {
		t.Errorf("rtprio as root: %s %q", f.Status, f.Value)
	}
	// Virtual soundcards raise no interrupt: the check must say it found
	// none rather than guess.
	if f := m["soundcard IRQ threads"]; f.Status != INFO || !strings.Contains(f.Value, "/proc/asound/cards") {
		t.Errorf("sound IRQ threads with only virtual cards: %s %q", f.Status, f.Value)
	}
	// The tests run in the VM's initramfs, which is RAM.
	if f := m["disk phases' directory"]; f.Status != WARN || !strings.Contains(f.Value, "in RAM") {
		t.Errorf("the disk phases' directory in the VM's initramfs: %s %q", f.Status, f.Value)
	}
}
