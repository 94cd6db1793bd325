package cthread

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"latencytest/audio"
)

// The header names the callback thread as the engine tells the spike
// tracer it is named.
func TestThreadNameAgrees(t *testing.T) {
	b, err := os.ReadFile("cthread.h")
	if err != nil {
		t.Fatal(err)
	}
	want := "#define LT_THREAD_NAME " + strconv.Quote(audio.CallbackThreadName) + "\n"
	if !strings.Contains(string(b), want) {
		t.Fatalf("cthread.h has no line %q", want)
	}
}
