package badinput

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func TestIsThroughWrapping(t *testing.T) {
	bad := Errorf("--rate %d: allowed 8000 to 768000 Hz", 100)
	if !Is(bad) || bad.Error() != "--rate 100: allowed 8000 to 768000 Hz" {
		t.Fatalf("Errorf: %v, Is %v", bad, Is(bad))
	}
	if w := fmt.Errorf("phase idle: %w", bad); !Is(w) || w.Error() != "phase idle: --rate 100: allowed 8000 to 768000 Hz" {
		t.Errorf("wrapped: %v, Is %v", w, Is(w))
	}
	if Is(errors.New("disk full")) || Is(nil) {
		t.Error("a plain error or nil is bad input")
	}
	// %w inside keeps the cause reachable.
	if e := Errorf("--out x: %w", fs.ErrPermission); !errors.Is(e, fs.ErrPermission) || !Is(e) {
		t.Errorf("Errorf with %%w lost its cause: %v", e)
	}
}
