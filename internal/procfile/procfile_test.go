package procfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"testing/fstest"
)

// The FS is a correct fs.FS, and ReadFile gives what os.ReadFile gives,
// for files shorter and longer than its first buffer.
func TestFS(t *testing.T) {
	dir := t.TempDir()
	long := bytes.Repeat([]byte("0123456789abcdef"), 3000) // 48 000 bytes, past several doublings
	files := map[string][]byte{"empty": nil, "short": []byte("one line\n"), "sub/long": long}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := Dir(dir)
	if err := fstest.TestFS(f, "empty", "short", "sub/long"); err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := fs.ReadFile(f, name)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("ReadFile(%q) = %d bytes, %v; want %d bytes", name, len(got), err, len(want))
		}
	}
	if _, err := fs.ReadFile(f, "missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := f.ReadFile("../short"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("ReadFile of ../short: %v, want fs.ErrInvalid", err)
	}
}

// The kernel's files read whole: /proc/self/stat names this process, and
// a /proc file longer than the first buffer (zoneinfo, 5 KB on a 2-CPU VM
// with 1 GiB) has os.ReadFile's lines, whose counters may move between
// the two reads but not their number.
func TestKernelFiles(t *testing.T) {
	buf := make([]byte, 4096)
	b, err := Read("/proc/self/stat", buf)
	if err != nil {
		t.Fatal(err)
	}
	if pid := strconv.Itoa(os.Getpid()); !bytes.HasPrefix(b, []byte(pid+" (")) {
		t.Errorf("/proc/self/stat = %.40q, want it to begin with %s", b, pid)
	}
	got, err := fs.ReadFile(Dir("/"), "proc/self/status")
	if err != nil || !bytes.Contains(got, []byte("\nCpus_allowed_list:")) {
		t.Errorf("proc/self/status: %v, %.60q", err, got)
	}
	all, err := ReadAll("/proc/zoneinfo")
	want, err2 := os.ReadFile("/proc/zoneinfo")
	if err != nil || err2 != nil || len(all) < 100 || bytes.Count(all, []byte("\n")) != bytes.Count(want, []byte("\n")) {
		t.Errorf("zoneinfo: %d bytes, %d lines (%v); os.ReadFile %d lines (%v)", len(all), bytes.Count(all, []byte("\n")), err, bytes.Count(want, []byte("\n")), err2)
	}
}
