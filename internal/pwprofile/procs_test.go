//go:build pipewire || vm

package pwprofile

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The children of the tests that run a PipeWire server: the host's
// (pipewire_test.go) and the VM's (pwprofile_vm_test.go).

// testEnv is this process's environment with env set and without what
// would point a PipeWire client at another server or a session bus.
func testEnv(env []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PIPEWIRE_REMOTE", "PIPEWIRE_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY":
			continue
		}
		out = append(out, kv)
	}
	return append(out, env...)
}

// proc is a child of the test: its stdout and stderr kept, lines of
// either seen by waitLine.
type proc struct {
	cmd  *exec.Cmd
	name string
	mu   sync.Mutex
	out  strings.Builder
	line chan string
	done chan struct{}
}

func start(t *testing.T, name string, env []string, dir string, argv ...string) *proc {
	t.Helper()
	p := &proc{name: name, line: make(chan string, 1024), done: make(chan struct{})}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = testEnv(env)
	p.cmd.Dir = dir
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	r, w := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.line <- sc.Text():
			default:
			}
		}
	}()
	go func() { p.cmd.Wait(); w.Close(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitLine waits for a line of the child's that begins with prefix.
func (p *proc) waitLine(t *testing.T, prefix string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l := <-p.line:
			if strings.HasPrefix(l, prefix) {
				return
			}
		case <-p.done:
			t.Fatalf("%s exited before it said %q:\n%s", p.name, prefix, p.output())
		case <-deadline:
			t.Fatalf("%s did not say %q in %v:\n%s", p.name, prefix, timeout, p.output())
		}
	}
}

// waitSocket waits up to d for the server started with runtime directory
// rt to make its socket, failing t if it exits or makes none.
func waitSocket(t *testing.T, server *proc, rt string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if _, err := os.Stat(filepath.Join(rt, "pipewire-0")); err == nil {
			return
		}
		select {
		case <-server.done:
			t.Fatalf("pipewire exited:\n%s", server.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pipewire made no socket in %s in %v:\n%s", rt, d, server.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
