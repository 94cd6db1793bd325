package stress

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/internal/badinput"
)

// fsImmutableFL is FS_IMMUTABLE_FL of <linux/fs.h> (chattr +i).
const fsImmutableFL = 0x10

// unwritableDir returns a directory nobody may create files in, root
// included: an immutable directory when we are root, a read-only one
// otherwise.
func unwritableDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(d, 0o555); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		return d
	}
	f, err := os.Open(d)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		t.Fatalf("FS_IOC_GETFLAGS: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags|fsImmutableFL)); err != nil {
		t.Fatalf("make %s immutable (needs a filesystem with chattr +i): %v", d, err)
	}
	t.Cleanup(func() {
		if f, err := os.Open(d); err == nil {
			unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags&^fsImmutableFL))
			f.Close()
		}
	})
	return d
}

func TestValidate(t *testing.T) {
	r := NewRegistry()
	noXvfb := t.TempDir()
	ro := unwritableDir(t)
	cases := []struct {
		name string
		args []string
		path string // PATH for the case ("": unchanged)
		want string // in the error; "" means valid
	}{
		{"hackbench", []string{"-g", "6", "-l", "100"}, "", ""},
		{"hackbench", []string{"-T", "-p", "-s", "512", "-f", "4"}, "", ""},
		{"disk-write", []string{"--size", "64M"}, "", ""},
		{"exec", []string{"--cmd", "make -j4"}, "", ""},
		{"nope", nil, "", `unknown stressor "nope"; allowed: cpu, disk-copy`},
		{"disk-write", []string{"--size", "abc"}, "", `invalid value "abc" for flag --size: want a positive size`},
		{"disk-write", []string{"--size", "-1G"}, "", "--size"},
		{"disk-write", []string{"--size", "100000T"}, "", "--size"},
		{"disk-read", []string{"--size", "1000T"}, "", "more than half the free space"},
		{"disk-copy", []string{"--dir", "/nonexistent/x"}, "", "--dir /nonexistent/x: no such file or directory"},
		{"disk-copy", []string{"--dir", "/etc/hostname"}, "", "not a directory"},
		{"disk-write", []string{"--dir", ro}, "", "--dir " + ro + ": not writable"},
		{"x11", []string{"--display", ""}, noXvfb, "no X server ($DISPLAY is not set) and no Xvfb"},
		{"x11", []string{"--xvfb"}, noXvfb, "--xvfb: no Xvfb found"},
		{"hackbench", []string{"-g", "0"}, "", "--groups 0: want 1 or more"},
		{"hackbench", []string{"-T", "-P"}, "", "exclude each other"},
		{"hackbench", []string{"-g", "1000", "-f", "1000"}, "", "tasks; at most"},
		{"hackbench", []string{"--bogus"}, "", "unknown flag --bogus"},
		{"hackbench", []string{"6", "6"}, "", `unexpected argument "6": the number of groups is given once`},
		{"hackbench", []string{"six"}, "", "a bare argument is the number of groups"},
		{"hackbench", []string{"0"}, "", "--groups 0: want 1 or more"},
		{"cpu", []string{"--threads", "0"}, "", "--threads 0"},
		{"exec", nil, "", "--cmd is required"},
		{"fork", []string{"extra"}, "", `unexpected argument "extra"`},
		{"memory", []string{"--size", "1000T"}, "", "more than half the available memory"},
		{"proc", []string{"--duration", "-1s"}, "", "--duration -1s"},
	}
	for _, c := range cases {
		t.Run(c.name+" "+strings.Join(c.args, " "), func(t *testing.T) {
			if c.path != "" {
				t.Setenv("PATH", c.path)
			}
			err := r.validate(c.name, c.args)
			if c.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate: %v, want an error containing %q", err, c.want)
			}
			if !badinput.Is(err) || strings.Contains(err.Error(), "\n") {
				t.Errorf("want a one-line usage error, got %q", err)
			}
			// `latencytest stress` says the same in one line and exits 2.
			var stdout, stderr bytes.Buffer
			if code := Main("latencytest", append([]string{c.name}, c.args...), &stdout, &stderr); code != 2 {
				t.Errorf("Main exit code %d, want 2", code)
			}
			if lines := strings.Count(stderr.String(), "\n"); lines != 1 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("Main stderr = %q, want one line containing %q", stderr.String(), c.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("Main wrote to stdout on bad input: %q", stdout.String())
			}
		})
	}
}

func TestMainList(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main("latencytest", []string{"-list"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, n := range NewRegistry().Names() {
		if !strings.Contains(stdout.String(), "\n"+n+" ") && !strings.HasPrefix(stdout.String(), n+" ") {
			t.Errorf("-list does not list %s:\n%s", n, stdout.String())
		}
	}
	if code := Main("latencytest", nil, &stdout, &stderr); code != 2 {
		t.Errorf("no arguments: exit %d, want 2", code)
	}
}

// FlagSet, which latencytest's man page and completion are made from,
// defines the flags `latencytest stress NAME -h` lists: the same set
// parse reads, so that neither can drift from the other.
func TestFlagSetIsWhatHelpLists(t *testing.T) {
	for _, n := range NewRegistry().Names() {
		fs, ok := NewRegistry().FlagSet(n)
		if !ok {
			t.Fatalf("FlagSet(%q): no such stressor", n)
		}
		var help bytes.Buffer
		if code := Main("latencytest", []string{n, "-h"}, &help, io.Discard); code != 0 {
			t.Fatalf("stress %s -h: exit %d", n, code)
		}
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(help.String(), "\n  -"+f.Name+" ") && !strings.Contains(help.String(), "\n  -"+f.Name+"\t") &&
				!strings.Contains(help.String(), "\n  -"+f.Name+"\n") {
				t.Errorf("stress %s -h does not list -%s:\n%s", n, f.Name, help.String())
			}
		})
		if strings.Count(help.String(), "\n  -") != countFlags(fs) {
			t.Errorf("stress %s -h lists %d flags, its FlagSet %d", n, strings.Count(help.String(), "\n  -"), countFlags(fs))
		}
	}
	if _, ok := NewRegistry().FlagSet("nope"); ok {
		t.Error(`FlagSet("nope"): ok`)
	}
}

// countFlags is how many flags fs defines.
func countFlags(fs *flag.FlagSet) int {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n
}

func TestRunFlags(t *testing.T) {
	r := NewRegistry()
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.Duration("duration", 0, "run's own flag")
	loads := r.RunFlags(fs)
	// 64M in a temporary directory: Check(disk-copy) wants twice the size
	// free there, and the ARM VMs' file systems are tmpfs of under 500M.
	dir := t.TempDir()
	err := fs.Parse([]string{"--hackbench-groups", "6", "--disk-size", "64M", "--disk-dir", dir, "--disk-drop-caches",
		"--exec-cmd", "make -j4", "--fork-parallel", "3", "--duration", "5s"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"hackbench":  {"--groups=6"},
		"disk-write": {"--dir=" + dir, "--size=64M"},
		"disk-copy":  {"--dir=" + dir, "--size=64M"},
		"disk-read":  {"--dir=" + dir, "--drop-caches=true", "--size=64M"},
		"exec":       {"--cmd=make -j4"},
		"fork":       {"--parallel=3"},
		"proc":       nil,
		"x11":        nil,
	}
	for name, w := range want {
		got := loads.Args(name)
		slices.Sort(got)
		if !slices.Equal(got, w) {
			t.Errorf("args(%s) = %q, want %q", name, got, w)
		}
	}
	// The arguments are what `latencytest stress NAME` accepts.
	if err := r.validate("hackbench", loads.Args("hackbench")); err != nil {
		t.Errorf("validate(hackbench, %q): %v", loads.Args("hackbench"), err)
	}
	for _, name := range []string{"hackbench", "disk-copy", "exec", "fork"} {
		if err := loads.Check(name); err != nil {
			t.Errorf("Check(%s): %v", name, err)
		}
	}
	if fs.Lookup("hackbench-g") != nil || fs.Lookup("hackbench-duration") != nil {
		t.Errorf("short aliases or the duration flag leaked into run's flags")
	}

	bad := flag.NewFlagSet("run", flag.ContinueOnError)
	bad.SetOutput(new(bytes.Buffer))
	r.RunFlags(bad)
	if err := bad.Parse([]string{"--disk-size", "huge"}); err == nil || !strings.Contains(err.Error(), "disk-size") {
		t.Errorf("bad --disk-size: err = %v, want one naming the flag", err)
	}
}

// A load's check within run names run's flag, as the user typed it, and
// a flag the disk stressors share reaches each of them.
func TestRunFlagsCheckInRunsWords(t *testing.T) {
	cases := []struct {
		args []string
		name string
		want string
	}{
		{[]string{"--hackbench-groups", "0"}, "hackbench", "stress hackbench: --hackbench-groups 0: want 1 or more"},
		{[]string{"--hackbench-threads", "--hackbench-process"}, "hackbench", "stress hackbench: --hackbench-threads and --hackbench-process exclude each other"},
		{[]string{"--exec-cmd", ""}, "exec", "stress exec: --exec-cmd is required, e.g. --exec-cmd 'make -j4'"},
		{[]string{"--cpu-threads", "0"}, "cpu", "stress cpu: --cpu-threads 0: want 1 to 4096"},
		{[]string{"--disk-dir", "/nonexistent/x"}, "disk-write", "stress disk-write: --disk-dir /nonexistent/x: no such file or directory"},
		{[]string{"--disk-dir", "/nonexistent/x"}, "disk-copy", "stress disk-copy: --disk-dir /nonexistent/x: no such file or directory"},
		{[]string{"--disk-dir", "/nonexistent/x"}, "disk-read", "stress disk-read: --disk-dir /nonexistent/x: no such file or directory"},
		{[]string{"--x11-area", "8"}, "x11", "stress x11: --x11-area 8: want 16 to 4096 pixels"},
	}
	for _, c := range cases {
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		loads := NewRegistry().RunFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		err := loads.Check(c.name)
		if err == nil || err.Error() != c.want || !badinput.Is(err) {
			t.Errorf("%q: Check(%s) = %v, want bad input %q", c.args, c.name, err, c.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1": 1, "4096": 4096, "64k": 64 << 10, "512M": 512 << 20, "1G": 1 << 30, "1GiB": 1 << 30,
		"2gb": 2 << 30, "1.5G": 3 << 29, "1T": 1 << 40,
	} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "abc", "0", "-5M", "1.5", "G", "1X", "99999999T"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
	for _, n := range []int64{1, 1000, 64 << 10, 512 << 20, 3 << 30} {
		if got, err := parseSize(formatSize(n)); err != nil || got != n {
			t.Errorf("parseSize(formatSize(%d)=%q) = %d, %v", n, formatSize(n), got, err)
		}
	}
}

// `latencytest stress hackbench 6 -l 20`: a bare number is the number of
// groups, as rt-tests' hackbench takes it, and the flags after it count.
func TestHackbenchGroupsBare(t *testing.T) {
	c, err := NewRegistry().parse("hackbench", []string{"6", "-l", "20", "--duration", "2s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if h := c.load.(*hackbench); h.groups != 6 || h.loops != 20 || c.duration != 2*time.Second {
		t.Errorf("groups %d, loops %d, duration %v; want 6, 20, 2s", h.groups, h.loops, c.duration)
	}
}
