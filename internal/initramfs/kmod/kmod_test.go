package kmod

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"latencytest/internal/initramfs/kmod/kmodtest"
)

func writeKO(t *testing.T, path string, modinfo ...string) {
	t.Helper()
	must(t, kmodtest.WriteModule(path, modinfo...))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func names(ms []Module) []string {
	var n []string
	for _, m := range ms {
		n = append(n, m.Name)
	}
	return n
}

// soundTree lays out the dependency graph of Debian 6.1's sound modules,
// with the "-" and "_" spellings mixed as the real files have them.
func soundTree(t *testing.T) string {
	dir := t.TempDir()
	k := filepath.Join(dir, "kernel", "sound")
	writeKO(t, filepath.Join(k, "soundcore.ko"), "depends=", "name=soundcore")
	writeKO(t, filepath.Join(k, "core", "snd.ko"), "license=GPL", "depends=soundcore", "name=snd")
	writeKO(t, filepath.Join(k, "core", "snd-timer.ko"), "depends=snd", "name=snd_timer")
	writeKO(t, filepath.Join(k, "core", "snd-pcm.ko"), "depends=snd,snd-timer", "name=snd_pcm")
	writeKO(t, filepath.Join(k, "drivers", "snd-dummy.ko"), "depends=snd,snd-pcm", "name=snd_dummy")
	writeKO(t, filepath.Join(k, "drivers", "snd-aloop.ko"), "depends=snd-timer,snd,snd-pcm", "name=snd_aloop")
	writeKO(t, filepath.Join(k, "drivers", "snd-unused.ko"), "depends=snd", "name=snd_unused")
	return dir
}

func TestRead(t *testing.T) {
	dir := soundTree(t)
	m, err := Read(filepath.Join(dir, "kernel", "sound", "drivers", "snd-aloop.ko"))
	must(t, err)
	want := Module{
		Name:    "snd_aloop",
		Path:    filepath.Join(dir, "kernel", "sound", "drivers", "snd-aloop.ko"),
		Depends: []string{"snd_timer", "snd", "snd_pcm"},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("Read = %+v, want %+v", m, want)
	}
}

func TestLoadOrder(t *testing.T) {
	dir := soundTree(t)
	got, err := LoadOrder(dir, []string{"snd-dummy", "snd_aloop"})
	must(t, err)
	want := []string{"soundcore", "snd", "snd_timer", "snd_pcm", "snd_dummy", "snd_aloop"}
	if !reflect.DeepEqual(names(got), want) {
		t.Fatalf("LoadOrder = %v, want %v", names(got), want)
	}
	// Every module comes after everything it depends on.
	pos := map[string]int{}
	for i, m := range got {
		for _, d := range m.Depends {
			if _, ok := pos[d]; !ok {
				t.Errorf("%s loaded before its dependency %s", m.Name, d)
			}
		}
		pos[m.Name] = i
	}
}

func TestLoadOrderMissingDependency(t *testing.T) {
	dir := t.TempDir()
	writeKO(t, filepath.Join(dir, "a.ko"), "depends=b", "name=a")
	_, err := LoadOrder(dir, []string{"a"})
	if err == nil || !strings.Contains(err.Error(), "module b not found") || !strings.Contains(err.Error(), "needed by a") {
		t.Fatalf("err = %v, want module b not found, needed by a", err)
	}
}

func TestLoadOrderCycle(t *testing.T) {
	dir := t.TempDir()
	writeKO(t, filepath.Join(dir, "a.ko"), "depends=b", "name=a")
	writeKO(t, filepath.Join(dir, "b.ko"), "depends=a", "name=b")
	_, err := LoadOrder(dir, []string{"a"})
	if err == nil || !strings.Contains(err.Error(), "cycle: a -> b -> a") {
		t.Fatalf("err = %v, want a dependency cycle a -> b -> a", err)
	}
}

func TestCompressedModuleIsAnError(t *testing.T) {
	dir := soundTree(t)
	must(t, os.WriteFile(filepath.Join(dir, "kernel", "sound", "snd-x.ko.xz"), []byte("\xfd7zXZ"), 0o644))
	if _, err := LoadOrder(dir, []string{"snd"}); err == nil || !strings.Contains(err.Error(), "compressed") {
		t.Fatalf("err = %v, want an error saying the module is compressed", err)
	}
}

func TestReadNotAModule(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.ko")
	must(t, os.WriteFile(p, []byte("not elf"), 0o644))
	if _, err := Read(p); err == nil {
		t.Fatal("Read of a non-ELF file succeeded")
	}
}
