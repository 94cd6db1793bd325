//go:build linux

// Command vminit is the /init of the virtual machine scripts/vmtest boots
// to test latencytest against a real kernel's ALSA (this machine's kernel,
// and CI's, have no sound).
//
// It mounts proc, sys, devtmpfs and a tmpfs on /tmp, /dev/shm and /run
// (as a Debian system has it: the record of kernel settings a run changes
// lives in /run/latencytest), loads the kernel modules listed in
// /lib/modules/load.order with finit_module,
// waits for the PCM device nodes, runs every /tests/*.test binary with
// -test.v (streaming its output to the serial console), prints one line
// "VMTEST RESULT: PASS" or "VMTEST RESULT: FAIL (...)", and powers the
// machine off. Whatever goes wrong, including a panic, it still prints a
// FAIL line and powers off: a VM that hangs would only be caught by the
// host's timeout, minutes later and without a reason.
//
// The host passes options in /etc/vmtest.json (see config) rather than on
// the kernel command line, so a -run regular expression needs no quoting;
// "vminit -check-config FILE" checks such a file on the host (exit 2 and
// one line if it is bad). That is all vminit does when it is not pid 1.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Marker starts the result line the host looks for.
const Marker = "VMTEST RESULT: "

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-check-config" {
		// scripts/vmtest checks its options on the host before booting.
		if _, err := readConfig(os.Args[2]); err != nil {
			fmt.Fprintf(os.Stderr, "vminit: %v\n", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	if os.Getpid() != 1 {
		// Everything below mounts filesystems and powers the machine off;
		// that must never happen to the developer's own machine.
		fmt.Fprintln(os.Stderr, "vminit: this is the test VM's /init and runs only as pid 1; see scripts/vmtest")
		os.Exit(2)
	}
	out := os.Stdout
	failures := safeRun(out, run)
	fmt.Fprint(out, resultLine(failures))
	powerOff(out)
}

// safeRun calls run (which runs the tests) and turns a panic into a
// failure.
func safeRun(out io.Writer, run func(io.Writer) []string) (failures []string) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(out, "vminit: panic: %v\n%s", r, debug.Stack())
			failures = append(failures, fmt.Sprintf("vminit panic: %v", r))
		}
	}()
	return run(out)
}

// resultLine is the marker line. It starts with a newline because the
// last test may have left the console in the middle of a line.
func resultLine(failures []string) string {
	if len(failures) == 0 {
		return "\n" + Marker + "PASS\n"
	}
	return "\n" + Marker + "FAIL (" + strings.Join(failures, "; ") + ")\n"
}

func run(out io.Writer) []string {
	if err := mountAll(); err != nil {
		fmt.Fprintf(out, "vminit: %v\n", err)
		return []string{err.Error()}
	}
	if err := loopbackUp(); err != nil {
		fmt.Fprintf(out, "vminit: %v\n", err)
		return []string{err.Error()}
	}
	if up, err := os.ReadFile("/proc/uptime"); err == nil {
		fmt.Fprintf(out, "vminit: kernel up after %s s\n", strings.Fields(string(up))[0])
	}
	cfg, err := readConfig(configFile)
	if err != nil {
		fmt.Fprintf(out, "vminit: %v\n", err)
		return []string{err.Error()}
	}
	for k, v := range map[string]string{"PATH": "/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "VMTEST": "1"} {
		os.Setenv(k, v)
	}
	for k, v := range cfg.Env {
		os.Setenv(k, v)
	}
	if err := loadModules(out, moduleOrderFile); err != nil {
		fmt.Fprintf(out, "vminit: %v\n", err)
		return []string{err.Error()}
	}
	if err := waitPCMNodes(out, "/proc/asound", "/dev/snd", 20*time.Second); err != nil {
		fmt.Fprintf(out, "vminit: %v\n", err)
		return []string{err.Error()}
	}
	return runTests(out, testsDir, cfg, func(name string) { cleanUp(out, name) })
}

// mountAll mounts what tests expect of a Linux system.
func mountAll() error {
	for _, m := range []struct {
		fstype, target, data string
	}{
		{"proc", "/proc", ""},
		{"sysfs", "/sys", ""},
		{"devtmpfs", "/dev", ""},
		{"tmpfs", "/tmp", "mode=1777"},
		{"tmpfs", "/dev/shm", "mode=1777"},
		{"tmpfs", "/run", "mode=0755"},
	} {
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			return fmt.Errorf("mount %s: %w", m.target, err)
		}
		if err := unix.Mount(m.fstype, m.target, m.fstype, unix.MS_NOSUID, m.data); err != nil && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("mount %s on %s: %w", m.fstype, m.target, err)
		}
	}
	return nil
}

// loopbackUp brings up lo, which a booted system has and a kernel alone
// leaves down: the net stressor talks to itself over 127.0.0.1.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("lo: socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("lo: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo: SIOCGIFFLAGS: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo: SIOCSIFFLAGS: %w", err)
	}
	return nil
}

// powerOff waits until the console has sent everything (the result line
// must reach the host) and powers off. If that fails, exiting makes the
// kernel panic, and panic=-1 with qemu's -no-reboot ends the VM too.
func powerOff(out *os.File) {
	unix.Sync()
	// TCSBRK with a non-zero argument is tcdrain(3).
	_ = unix.IoctlSetInt(int(out.Fd()), unix.TCSBRK, 1)
	err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	fmt.Fprintf(out, "vminit: power off: %v\n", err)
	os.Exit(1)
}
