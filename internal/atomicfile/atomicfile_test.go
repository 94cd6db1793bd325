package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile replaces a file whole and a symlink planted at the name
// without following it, and leaves no temporary file; a directory that
// does not exist is an error naming the path.
func TestWriteFile(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	p := filepath.Join(dir, "f")
	victim := filepath.Join(other, "victim")
	os.WriteFile(victim, []byte("precious"), 0o600)
	os.Symlink(victim, p)
	for _, data := range []string{"first", "second"} {
		if err := WriteFile(p, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != data {
			t.Errorf("read back %q, %v; want %q", b, err, data)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the symlink's target now %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left in the directory: %v", ents)
	}
	missing := filepath.Join(dir, "none", "f")
	if err := WriteFile(missing, nil); err == nil {
		t.Errorf("WriteFile(%s): no error", missing)
	}
}

// RenameNoReplace refuses a name taken, even by an empty directory.
func TestRenameNoReplace(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.Mkdir(from, 0o755)
	os.Mkdir(to, 0o755)
	if err := RenameNoReplace(from, to); err == nil {
		t.Error("renamed over an empty directory")
	}
	os.Remove(to)
	if err := RenameNoReplace(from, to); err != nil {
		t.Error(err)
	}
}
