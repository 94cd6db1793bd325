package bintest

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A failing child's error names what it said on stderr.
func TestOutputErrorCarriesStderr(t *testing.T) {
	_, err := Output(exec.Command("sh", "-c", "echo out; echo the-reason >&2; exit 3"))
	if err == nil || !strings.Contains(err.Error(), "the-reason") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("error %v, want exit status 3 and the child's stderr", err)
	}
	out, err := Output(exec.Command("sh", "-c", "echo out"))
	if err != nil || string(out) != "out\n" {
		t.Fatalf("a child that succeeds: %q, %v", out, err)
	}
}

// A child still running at the deadline fails with what it had said on
// stderr by then; one that ends in time gives its exit code, no error.
func TestWithinTimeoutCarriesStderr(t *testing.T) {
	start := time.Now()
	_, err := Within(200*time.Millisecond, "sh", "-c", "echo waiting-for-the-fifo >&2; exec sleep 30")
	if err == nil || !strings.Contains(err.Error(), "still running") || !strings.Contains(err.Error(), "waiting-for-the-fifo") {
		t.Fatalf("error %v, want still running and the child's stderr", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("Within returned after %v, deadline 200ms", el)
	}
	r, err := Within(10*time.Second, "sh", "-c", "echo x >&2; exit 2")
	if err != nil || r.Code != 2 || r.Stderr != "x\n" {
		t.Fatalf("a child that ends: %+v, %v", r, err)
	}
}
