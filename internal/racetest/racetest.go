// Package racetest lets a test that runs a binary it builds (latencytest
// run, whose parent, engine and stressors are all that binary) extend the
// race detector to it: when the test runs under -race, the binary is built
// with -race too, and every process of it writes its race reports into a
// directory that the test checks at the end.
package racetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// BuildFlags are the go build flags for the binary under test.
func BuildFlags() []string {
	if Enabled {
		return []string{"-race"}
	}
	return nil
}

// Setenv makes the processes the test starts from now on (they inherit
// its environment) write their race reports into dir, and exit without the
// race runtime's default second of sleep, which would read as a slow exit.
func Setenv(dir string) {
	os.Setenv("GORACE", "log_path="+filepath.Join(dir, "race")+" atexit_sleep_ms=0")
}

// Reports returns an error holding every race report written into dir,
// nil when there is none.
func Reports(dir string) error {
	files, _ := filepath.Glob(filepath.Join(dir, "race.*"))
	if len(files) == 0 {
		return nil
	}
	var b strings.Builder
	for _, f := range files {
		text, _ := os.ReadFile(f)
		fmt.Fprintf(&b, "%s:\n%s\n", f, text)
	}
	return fmt.Errorf("data races in %d processes of the binary under test:\n%s", len(files), b.String())
}
