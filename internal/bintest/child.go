package bintest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Output runs cmd and returns its standard output. When the child fails,
// the error carries what it wrote to standard error: an *exec.ExitError's
// own message is only "exit status N", and a test that fails with that
// alone says nothing about why.
func Output(cmd *exec.Cmd) ([]byte, error) {
	var se bytes.Buffer
	cmd.Stderr = &se
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s: %w%s", strings.Join(cmd.Args, " "), err, stderrNote(se.String()))
	}
	return out, nil
}

// Within runs the command to its end, or for at most d: a child that
// blocks (on a FIFO, a device) fails the test instead of hanging it, and
// the error says what it had written to standard error by then, which is
// where it tells what it was waiting for. The exit code of a child that
// ended is in the Result, not an error.
func Within(d time.Duration, name string, args ...string) (Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	// A grandchild that keeps the pipes open must not keep Wait waiting
	// past the deadline.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	r := Result{Stdout: so.String(), Stderr: se.String()}
	if ctx.Err() != nil {
		return r, fmt.Errorf("%s %s: still running after %v%s", name, strings.Join(args, " "), d, stderrNote(r.Stderr))
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.Code = ee.ExitCode()
	} else if err != nil {
		return r, fmt.Errorf("%s: %w%s", name, err, stderrNote(r.Stderr))
	}
	return r, nil
}

// stderrNote is a child's standard error for an error message, or
// nothing when it wrote none.
func stderrNote(stderr string) string {
	if s := strings.TrimSpace(stderr); s != "" {
		return "; its stderr: " + s
	}
	return "; nothing on its stderr"
}
