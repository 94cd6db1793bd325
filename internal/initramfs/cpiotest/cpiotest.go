// Package cpiotest checks archives made by package initramfs with GNU
// cpio, an implementation that is not ours, for the tests of initramfs and
// of the mkinitramfs command.
package cpiotest

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// Need skips the test when cpio is missing, and fails it under CI, where
// scripts/setup test must have installed it.
func Need(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("cpio"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("cpio not installed; scripts/setup test installs it (apt package cpio)")
		}
		t.Skip("cpio not installed; run scripts/setup test (apt package cpio)")
	}
}

// Run runs cpio --quiet with args on the archive as its input and returns
// what it printed.
func Run(t *testing.T, archive string, args ...string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("cpio", append([]string{"--quiet"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = f, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("cpio %v: %v: %s", args, err, stderr.String())
	}
	return stdout.String()
}
