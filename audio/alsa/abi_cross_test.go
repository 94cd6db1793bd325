//go:build linux && (amd64 || arm64 || arm || 386) && !vm

package alsa

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The layout checks for architectures other than the one running: the Go
// side is this package's test binary built for the other GOARCH and run
// with layoutDumpEnv set (TestMain prints layoutChecks and exits), the C
// side is the same expressions compiled by Debian's cross gcc. Both run
// directly when the kernel can (386 on an amd64 kernel with IA32
// emulation, or a binfmt_misc handler), else under qemu-user.

const layoutDumpEnv = "ALSA_LAYOUT_DUMP"

// time32Mark starts a dumped expression of time32Checks: C builds it
// without the time64 flags.
const time32Mark = "time32: "

func TestMain(m *testing.M) {
	if os.Getenv(layoutDumpEnv) == "1" {
		for _, c := range layoutChecks() {
			fmt.Printf("%d\t%s\n", c.goVal, c.c)
		}
		for _, c := range time32Checks() {
			fmt.Printf("%d\t%s%s\n", c.goVal, time32Mark, c.c)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// cTarget is how to build and run C for one GOARCH.
type cTarget struct {
	triple string   // gcc -dumpmachine, and the cross compiler's prefix
	qemu   string   // the qemu-user binary that runs it on another host
	pkgs   string   // the Debian packages of the cross compiler
	flags  []string // 32-bit: the time64 ABI, as the Go side (abi_32.go)
}

var time64 = []string{"-D_TIME_BITS=64", "-D_FILE_OFFSET_BITS=64"}

var cTargets = map[string]cTarget{
	"amd64": {"x86_64-linux-gnu", "qemu-x86_64", "gcc-x86-64-linux-gnu libc6-dev-amd64-cross", nil},
	"arm64": {"aarch64-linux-gnu", "qemu-aarch64", "gcc-aarch64-linux-gnu libc6-dev-arm64-cross", nil},
	"arm":   {"arm-linux-gnueabihf", "qemu-arm", "gcc-arm-linux-gnueabihf libc6-dev-armhf-cross", time64},
	"386":   {"i686-linux-gnu", "qemu-i386", "gcc-i686-linux-gnu libc6-dev-i386-cross", time64},
}

// cLayout prints each C expression over <sound/asound.h> as compiled for
// arch: with the machine's gcc when it targets arch, else with the cross
// gcc, statically (run under qemu-user if need be).
func cLayout(t *testing.T, arch string, exprs []string) []uint64 {
	t.Helper()
	return cLayoutWith(t, arch, exprs, cTargets[arch].flags)
}

// cLayoutWith is cLayout with the C compiler's flags given (nil for the
// 32-bit time_t records on 32-bit).
func cLayoutWith(t *testing.T, arch string, exprs, flags []string) []uint64 {
	t.Helper()
	tgt := cTargets[arch]
	var src bytes.Buffer
	src.WriteString("#include <stddef.h>\n#include <stdio.h>\n#include <time.h>\n#include <sys/ioctl.h>\n#include <sound/asound.h>\nint main(void) {\n")
	for _, e := range exprs {
		fmt.Fprintf(&src, "\tprintf(\"%%llu\\n\", (unsigned long long)(%s));\n", e)
	}
	src.WriteString("\treturn 0;\n}\n")
	dir := t.TempDir()
	cfile, bin := filepath.Join(dir, "layout.c"), filepath.Join(dir, "layout")
	if err := os.WriteFile(cfile, src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var build, run *exec.Cmd
	foreign := "" // the arch to emulate if the kernel cannot run the program
	args := append(append([]string{}, flags...), "-o", bin, cfile)
	if m, err := exec.Command("gcc", "-dumpmachine").Output(); err == nil && strings.TrimSpace(string(m)) == tgt.triple {
		if _, err := os.Stat("/usr/include/sound/asound.h"); err != nil {
			t.Fatal("install linux-libc-dev for <sound/asound.h> (scripts/setup test)")
		}
		build, run = exec.Command("gcc", args...), exec.Command(bin)
	} else {
		cc, err := exec.LookPath(tgt.triple + "-gcc")
		if err != nil {
			t.Fatalf("install %s to check the %s layout (scripts/setup test)", tgt.pkgs, arch)
		}
		build, run = exec.Command(cc, append([]string{"-static"}, args...)...), exec.Command(bin)
		foreign = arch
	}
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build.Path, err, out)
	}
	out := runForeign(t, run, foreign)
	var vals []uint64
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		v, err := strconv.ParseUint(sc.Text(), 10, 64)
		if err != nil {
			t.Fatalf("layout program line %d: %v", len(vals)+1, err)
		}
		vals = append(vals, v)
	}
	if len(vals) != len(exprs) {
		t.Fatalf("layout program printed %d values for %d expressions", len(vals), len(exprs))
	}
	return vals
}

// runForeign runs cmd, a static binary for arch ("" when it is the
// machine's own), and returns its output. A binary the kernel cannot
// execute (ENOEXEC) is run again under qemu-user. A failure shows the
// program's stderr: a runtime's fatal error is the only clue to it.
func runForeign(t *testing.T, cmd *exec.Cmd, arch string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Env = append(os.Environ(), layoutDumpEnv+"=1")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if errors.Is(err, syscall.ENOEXEC) && arch != "" {
		q := cTargets[arch].qemu
		qemu, lerr := exec.LookPath(q)
		if lerr != nil {
			t.Fatalf("install qemu-user (%s) to run %s binaries (scripts/setup test)", q, arch)
		}
		cmd = exec.Command(qemu, cmd.Args...)
		cmd.Env = append(os.Environ(), layoutDumpEnv+"=1")
		if arch == "386" {
			// qemu-i386 (7.2, Debian 12's) kills a Go 386 program at
			// the first signal its runtime's handler takes ("morestack
			// on gsignal", "bad g in signal handler"), and the runtime
			// signals itself to preempt goroutines: with that off, the
			// dump takes no signal (docs/arm.md).
			cmd.Env = append(cmd.Env, "GODEBUG=asyncpreemptoff=1")
		}
		stderr.Reset()
		cmd.Stderr = &stderr
		out, err = cmd.Output()
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.Bytes())
	}
	return out
}

// TestLayoutOtherArchs checks the Go transcription for arm64, arm and 386
// from an amd64 machine (the project's test host), each against asound.h
// compiled for that architecture.
func TestLayoutOtherArchs(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("run on amd64, which checks every architecture; TestLayoutMatchesAsoundH checks this one")
	}
	gobin, err := exec.LookPath("go") // go test puts its own toolchain first on PATH
	if err != nil {
		t.Fatal("no go command on PATH")
	}
	for _, arch := range []string{"arm64", "arm", "386"} {
		t.Run(arch, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "alsa.test")
			build := exec.Command(gobin, "test", "-c", "-o", bin, ".")
			build.Env = append(os.Environ(), "GOARCH="+arch, "GOARM=7", "CGO_ENABLED=0")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go test -c for %s: %v\n%s", arch, err, out)
			}
			out := runForeign(t, exec.Command(bin), arch)
			// The time64 records, then the old ones (time32Mark).
			var exprs [2][]string
			var goVals [2][]uint64
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				v, e, ok := strings.Cut(line, "\t")
				n, err := strconv.ParseUint(v, 10, 64)
				if !ok || err != nil {
					t.Fatalf("%s dump: bad line %q", arch, line)
				}
				k := 0
				if c, old := strings.CutPrefix(e, time32Mark); old {
					k, e = 1, c
				}
				exprs[k], goVals[k] = append(exprs[k], e), append(goVals[k], n)
			}
			if arch != "arm64" && len(exprs[1]) == 0 {
				t.Errorf("%s: no checks of the 32-bit time_t records", arch)
			}
			for k, flags := range [2][]string{cTargets[arch].flags, nil} {
				if len(exprs[k]) == 0 {
					continue
				}
				want := cLayoutWith(t, arch, exprs[k], flags)
				for i, e := range exprs[k] {
					if goVals[k][i] != want[i] {
						t.Errorf("%s: %s (C flags %q): C says %d (%#x), Go has %d (%#x)", arch, e, flags, want[i], want[i], goVals[k][i], goVals[k][i])
					}
				}
				if !t.Failed() {
					t.Logf("%s: %d sizes, offsets and constants match asound.h built with %q", arch, len(exprs[k]), flags)
				}
			}
		})
	}
}
