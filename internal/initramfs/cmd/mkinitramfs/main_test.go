package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"latencytest/internal/initramfs/cpiotest"
	"latencytest/internal/initramfs/kmod/kmodtest"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestBuild(t *testing.T) {
	cpiotest.Need(t)
	dir := t.TempDir()
	mods := filepath.Join(dir, "lib", "modules", "6.1.0-test", "kernel", "sound")
	must(t, kmodtest.WriteModule(filepath.Join(mods, "soundcore.ko"), "depends=", "name=soundcore"))
	must(t, kmodtest.WriteModule(filepath.Join(mods, "core", "snd.ko"), "depends=soundcore", "name=snd"))
	must(t, kmodtest.WriteModule(filepath.Join(mods, "drivers", "snd-dummy.ko"), "depends=snd", "name=snd_dummy"))
	initProg := filepath.Join(dir, "init")
	must(t, os.WriteFile(initProg, []byte("#!/bin/sh\n"), 0o755))
	tests := filepath.Join(dir, "tests")
	must(t, os.MkdirAll(filepath.Join(tests, "pkg", "testdata"), 0o755))
	must(t, os.WriteFile(filepath.Join(tests, "pkg.test"), []byte("bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(tests, "pkg", "testdata", "in.txt"), []byte("data"), 0o644))
	conf := filepath.Join(dir, "vmtest.json")
	must(t, os.WriteFile(conf, []byte("{}"), 0o644))

	out := filepath.Join(dir, "initrd.cpio")
	var stderr bytes.Buffer
	if code := run([]string{"-o", out, "-init", initProg, "-modules", filepath.Dir(mods), "-load", "snd-dummy",
		"/tests=" + tests, "/etc/vmtest.json=" + conf}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	list := cpiotest.Run(t, out, "-it")
	for _, name := range []string{"dev/console", "proc", "sys", "tmp", "init", "lib/modules/snd_dummy.ko",
		"tests/pkg.test", "tests/pkg/testdata/in.txt", "etc/vmtest.json"} {
		if !strings.Contains("\n"+list, "\n"+name+"\n") {
			t.Errorf("archive lacks %s:\n%s", name, list)
		}
	}
	if got, want := cpiotest.Run(t, out, "-i", "--to-stdout", "lib/modules/load.order"), "soundcore.ko\nsnd.ko\nsnd_dummy.ko\n"; got != want {
		t.Errorf("load.order = %q, want %q", got, want)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".mkinitramfs-*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// With -libroot, a dynamic executable comes with its loader and
// libraries, at the paths the loader looks for them; a static one (the
// init) with nothing.
func TestBuildWithLibs(t *testing.T) {
	cpiotest.Need(t)
	triplet := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[runtime.GOARCH]
	if triplet == "" {
		t.Skipf("no Debian triplet known for %s", runtime.GOARCH)
	}
	dir := t.TempDir()
	initProg := filepath.Join(dir, "init")
	must(t, os.WriteFile(initProg, []byte("#!/bin/sh\n"), 0o755))
	out := filepath.Join(dir, "initrd.cpio")
	var stderr bytes.Buffer
	dirs := "/lib/" + triplet + ":/usr/lib/" + triplet + ":/lib:/usr/lib"
	if code := run([]string{"-o", out, "-init", initProg, "-libroot", "/", "-libdirs", dirs, "/bin/ls=/bin/ls"}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	list := cpiotest.Run(t, out, "-it")
	for _, name := range []string{"bin/ls", "lib/" + triplet + "/libc.so.6"} {
		if !strings.Contains("\n"+list, "\n"+name+"\n") {
			t.Errorf("archive lacks %s:\n%s", name, list)
		}
	}
	if !strings.Contains(list, "ld-linux") {
		t.Errorf("archive lacks the loader:\n%s", list)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	initProg := filepath.Join(dir, "init")
	must(t, os.WriteFile(initProg, []byte("x"), 0o755))
	out := filepath.Join(dir, "out.cpio")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-init", initProg}, 2, "-o FILE is required"},
		{[]string{"-o", out}, 2, "-init FILE is required"},
		{[]string{"-o", out, "-init", initProg, "-load", "snd"}, 2, "go together"},
		{[]string{"-o", out, "-init", initProg, "bin/x=" + initProg}, 2, "absolute DEST"},
		{[]string{"-o", out, "-init", initProg, "/bin/x=" + filepath.Join(dir, "missing")}, 1, "missing"},
		{[]string{"-o", out, "-init", initProg, "-modules", dir, "-load", "snd"}, 1, "module snd not found"},
		{[]string{"-o", out, "-init", initProg, "-libroot", "/"}, 2, "-libroot ROOT and -libdirs DIRS go together"},
		{[]string{"-o", out, "-init", initProg, "-libroot", dir, "-libdirs", "/lib", "/bin/ls=/bin/ls"}, 1, "loader"},
	} {
		var stderr bytes.Buffer
		code := run(tc.args, &stderr)
		msg := stderr.String()
		if code != tc.code || !strings.Contains(msg, tc.msg) || strings.Count(msg, "\n") != 1 {
			t.Errorf("%q: exit %d, %q; want exit %d and one line with %q", tc.args, code, msg, tc.code, tc.msg)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%q: %s written despite the error", tc.args, out)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, ".mkinitramfs-*")); len(left) > 0 {
			t.Fatalf("%q: temporary files left behind: %v", tc.args, left)
		}
	}
}
