package ktrace

import (
	"path/filepath"
	"strconv"
	"testing"
	"unsafe"

	"latencytest/internal/held"
)

// testStore is a store of held settings in a directory of the test's,
// whose records may write under root.
func testStore(t *testing.T, root string) *held.Store {
	t.Helper()
	s, err := held.Open(filepath.Join(t.TempDir(), "run"), []string{root + "/"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }

// unsafeString returns a NUL-terminated copy of s for prctl.
func unsafeString(s string) unsafe.Pointer {
	b := append([]byte(s), 0)
	return unsafe.Pointer(&b[0])
}
