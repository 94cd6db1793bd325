package initramfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"latencytest/internal/bintest"
)

// hostDirs is the loader's search path on a Debian host of this
// architecture, as scripts/vmtest gives it.
func hostDirs(t *testing.T) []string {
	triplet := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[runtime.GOARCH]
	if triplet == "" {
		t.Skipf("no Debian triplet known for %s", runtime.GOARCH)
	}
	return []string{"/lib/" + triplet, "/usr/lib/" + triplet, "/lib64", "/lib", "/usr/lib"}
}

// What Needs finds for a dynamic executable of the host is what ldd, the
// reference, lists: the same files (symbolic links resolved), at the paths
// ldd names. So for a plugin a program dlopens (a shared library with no
// loader of its own), PipeWire's client-node module, whose DT_RUNPATH
// finds the protocol module it needs in PipeWire's module directory.
func TestNeedsIsLdd(t *testing.T) {
	dirs := hostDirs(t)
	const plugin = "/usr/lib/x86_64-linux-gnu/pipewire-0.3/libpipewire-module-client-node.so"
	for _, bin := range []string{"/bin/ls", "/usr/bin/aplay", plugin} {
		if _, err := os.Stat(bin); err != nil {
			if bin == "/bin/ls" {
				t.Fatal(err)
			}
			continue // aplay, PipeWire: where scripts/setup has installed alsa-utils, pipewire
		}
		out, err := bintest.Output(exec.Command("ldd", bin))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
				want = append(want, f[2])
			case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
				want = append(want, f[0])
			}
		}
		got, err := Needs("/", bin, dirs)
		if err != nil {
			t.Fatal(err)
		}
		same := func(ps []string) []string {
			var real []string
			for _, p := range ps {
				r, err := filepath.EvalSymlinks(p)
				if err != nil {
					t.Fatal(err)
				}
				real = append(real, r)
			}
			slices.Sort(real)
			return real
		}
		var dests, srcs []string
		for _, c := range got {
			dests, srcs = append(dests, c.Dest), append(srcs, c.Src)
			if real, _ := filepath.EvalSymlinks(c.Dest); real != c.Src {
				t.Errorf("%s: %s from %s, which is %s on the host", bin, c.Dest, c.Src, real)
			}
		}
		if g, w := same(srcs), same(want); !slices.Equal(g, w) {
			t.Errorf("%s: Needs found\n%v\nldd lists\n%v", bin, g, w)
		}
		if bin == plugin {
			if len(got) < 2 || got[0].Dest != "/usr/lib/x86_64-linux-gnu/pipewire-0.3/libpipewire-module-protocol-native.so" {
				t.Errorf("%s: %v, want the protocol module from its run path first", bin, got)
			}
		} else if len(got) < 2 || !strings.Contains(got[0].Dest, "ld-linux") {
			t.Errorf("%s: %v, want the loader first and a library", bin, got)
		}
		t.Logf("%s: %d files, as ldd", bin, len(got))
	}
}

// A root's links are followed inside it: an absolute target is the
// root's, ".." stops at the root, a loop ends, and a directory is not a
// library.
func TestRootPath(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "usr/lib/x"), 0o755))
	must(os.WriteFile(filepath.Join(root, "usr/lib/x/libc.so.6"), []byte("c"), 0o644))
	must(os.Symlink("usr/lib", filepath.Join(root, "lib")))
	must(os.Symlink("/usr/lib/x/libc.so.6", filepath.Join(root, "usr/lib/x/libabs.so")))
	must(os.Symlink("../../../../../../usr/lib/x/libc.so.6", filepath.Join(root, "usr/lib/x/libup.so")))
	must(os.Symlink("/etc/passwd", filepath.Join(root, "usr/lib/x/libhost.so")))
	must(os.Symlink("libloop2.so", filepath.Join(root, "usr/lib/x/libloop1.so")))
	must(os.Symlink("libloop1.so", filepath.Join(root, "usr/lib/x/libloop2.so")))
	want := filepath.Join(root, "usr/lib/x/libc.so.6")
	for _, p := range []string{"/lib/x/libc.so.6", "/lib/x/libabs.so", "/lib/x/libup.so", "/usr/lib/../lib/x/libc.so.6"} {
		if got, err := RootPath(root, p); err != nil || got != want {
			t.Errorf("RootPath(%s) = %q, %v; want %s", p, got, err, want)
		}
	}
	for _, p := range []string{"/lib/x/libhost.so", "/lib/x/libloop1.so", "/lib/x", "/lib/x/libnone.so"} {
		if got, err := RootPath(root, p); err == nil {
			t.Errorf("RootPath(%s) = %q, want an error", p, got)
		}
	}
}
