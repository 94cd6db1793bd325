// Package proctest gives tests processes to name with procfile.Proc: one
// that runs, one that is gone, and a holder killed with SIGKILL while it
// holds something (the test binary itself, run again).
package proctest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"latencytest/internal/procfile"
)

// Running is a process that runs until the test ends.
func Running(t *testing.T) procfile.Proc {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	p, err := procfile.ProcOf(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Gone is a process that ran and has been reaped.
func Gone(t *testing.T) procfile.Proc {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p, err := procfile.ProcOf(cmd.Process.Pid)
	cmd.Process.Kill()
	cmd.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Hold is the holder's side, in TestMain of the test binary run by
// KillHolder: with err nil it says "held" and waits to be killed.
func Hold(err error) {
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("held")
	time.Sleep(time.Minute)
	os.Exit(0)
}

// KillHolder runs the test binary with env added to its environment
// (which its TestMain reads to call Hold), waits for it to hold, and
// kills it with SIGKILL.
func KillHolder(t *testing.T, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	cmd.Process.Kill()
	cmd.Wait()
	if line != "held\n" {
		t.Fatalf("holder: %q", line)
	}
}
