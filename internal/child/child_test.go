package child

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"latencytest/internal/badinput"
)

// The test binary doubles as the child: `TESTBIN child-helper MODE`.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "child-helper" {
		os.Exit(helper(os.Args[2]))
	}
	if len(os.Args) > 1 && os.Args[1] == "as-pid1" {
		os.Exit(asPID1())
	}
	os.Exit(m.Run())
}

type helloData struct {
	Pid  int    `json:"pid"`
	Temp string `json:"temp"`
	Text string `json:"text"`
}

func helper(mode string) int {
	c, err := Attach()
	if err != nil || c == nil {
		fmt.Fprintln(os.Stderr, "attach:", c, err)
		return 1
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	switch mode {
	case "bad":
		c.Fail(badinput.New("--rate 5: allowed 8000 to 768000 Hz"))
		return 2
	case "dies":
		fmt.Fprintln(os.Stderr, "first line\nthe reason it died")
		return 1
	case "never-ready": // a slow start that ignores SIGTERM
		signal.Ignore(syscall.SIGTERM)
		os.WriteFile(os.Getenv("STARTED"), nil, 0o600)
		select {}
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		c.Send("ready", nil)
		select {}
	case "grandchild": // leaves a process in its group
		sleep := exec.Command("sleep", "1000")
		if err := sleep.Start(); err != nil {
			return 1
		}
		c.Send("ready", helloData{Pid: sleep.Process.Pid})
		<-term
		return 0
	case "plant": // files in its directory, and a path outside sent as its own
		os.WriteFile(filepath.Join(c.TempDir(), "junk"), []byte("x"), 0o600)
		c.Send("ready", helloData{Temp: c.TempDir(), Text: os.Getenv("TMPDIR")})
		c.Send("file", helloData{Temp: os.Getenv("VICTIM")})
		<-term
		return 0
	case "fds": // what a command it runs finds open
		out, _ := exec.Command("/bin/sh", "-c", "exec ls -l /proc/self/fd/").Output()
		own, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", ReportFD))
		c.Send("ready", helloData{Text: string(out), Temp: own})
		<-term
		return 0
	}
	c.Send("ready", helloData{Pid: os.Getpid(), Temp: c.TempDir()})
	<-term
	c.Send("bye", helloData{Text: "stopped"})
	return 0
}

func spec(mode string) Spec {
	return Spec{Name: "helper " + mode, Exe: os.Args[0], Args: []string{"child-helper", mode}, Pdeathsig: syscall.SIGKILL}
}

func decode(t *testing.T, m Message) helloData {
	t.Helper()
	var h helloData
	if err := json.Unmarshal(m.Data, &h); err != nil {
		t.Fatalf("message %+v: %v", m, err)
	}
	return h
}

// gone checks that no live process is left in group pgid (a zombie is
// dead: its parent, init, reaps it when it gets to it), allowing one that
// was killed a moment to exit.
func gone(t *testing.T, pgid int) {
	t.Helper()
	var live []ProcStat
	for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		procs, _ := Processes()
		live = live[:0]
		for _, p := range procs {
			if p.Pgrp == pgid && p.State != "Z" {
				live = append(live, p)
			}
		}
		if len(live) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, p := range live {
		t.Errorf("process %d (%s) left in group %d", p.Pid, p.State, pgid)
	}
}

func TestStartMessagesStop(t *testing.T) {
	var got []Message
	s := spec("ready")
	s.OnMessage = func(m Message) { got = append(got, m) }
	p, first, err := Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if first.Event != "ready" || decode(t, first).Pid != p.Pid() {
		t.Errorf("first message %+v, child %d", first, p.Pid())
	}
	st, err := p.Stop(5 * time.Second)
	if err != nil || !st.Success() {
		t.Errorf("Stop: %v, %v", st, err)
	}
	if len(got) != 1 || got[0].Event != "bye" {
		t.Errorf("messages after the first: %+v", got)
	}
	gone(t, p.Pid())
	if err := p.Signal(syscall.SIGTERM); !errors.Is(err, ErrReaped) {
		t.Errorf("Signal after the reap = %v, want ErrReaped", err)
	}
}

// Bad input crosses the process boundary as bad input, with its one line.
func TestBadInputCrosses(t *testing.T) {
	_, _, err := Start(context.Background(), spec("bad"))
	if !badinput.Is(err) || err.Error() != "--rate 5: allowed 8000 to 768000 Hz" {
		t.Fatalf("err = %v (bad input %v)", err, badinput.Is(err))
	}
	_, _, err = Start(context.Background(), spec("dies"))
	if err == nil || badinput.Is(err) || !strings.HasSuffix(err.Error(), ": the reason it died") {
		t.Fatalf("a child that dies: err = %v", err)
	}
}

// PR_SET_PDEATHSIG follows the thread that forked: a child started from a
// goroutine locked to a thread that then ends must live on.
func TestChildOutlivesStartingThread(t *testing.T) {
	type res struct {
		p   *Process
		err error
	}
	ch := make(chan res)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends when we return
		p, _, err := Start(context.Background(), spec("ready"))
		ch <- res{p, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	time.Sleep(300 * time.Millisecond)
	select {
	case <-r.p.Exited():
		st, _ := r.p.Wait()
		t.Fatalf("the child died with the thread that called Start: %v", st)
	default:
	}
	r.p.Stop(5 * time.Second)
}

// Calling a start off (Ctrl-C while Xvfb starts) ends a child that ignores
// SIGTERM within a second.
func TestStartCalledOff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := filepath.Join(t.TempDir(), "started")
	var cancelled time.Time
	go func() { // once the child runs and ignores SIGTERM
		for {
			if _, err := os.Stat(started); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancelled = time.Now()
		cancel()
	}()
	s := spec("never-ready")
	s.Env = []string{"STARTED=" + started}
	_, _, err := Start(ctx, s)
	took := time.Since(cancelled)
	t.Logf("Start returned %v after the cancel", took)
	if took > time.Second {
		t.Errorf("Start returned %v after the cancel", took)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// A child that ignores SIGTERM gets SIGKILL after the grace period.
func TestStubbornChildKilled(t *testing.T) {
	p, _, err := Start(context.Background(), spec("stubborn"))
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	st, err := p.Stop(300 * time.Millisecond)
	if took := time.Since(began); took > 2*time.Second || took < 300*time.Millisecond {
		t.Errorf("Stop took %v", took)
	}
	if err == nil || !strings.Contains(err.Error(), "killed") || st.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("Stop: %v, %v", st, err)
	}
	gone(t, p.Pid())
}

// What the child leaves in its group is ended before the leader is reaped.
func TestGroupCleared(t *testing.T) {
	p, first, err := Start(context.Background(), spec("grandchild"))
	if err != nil {
		t.Fatal(err)
	}
	sleep := decode(t, first).Pid
	if _, err := p.Stop(5 * time.Second); err != nil {
		t.Error(err)
	}
	gone(t, p.Pid())
	if err := syscall.Kill(sleep, 0); err == nil {
		// Reparented to init (or to us if we are PID 1): dead, maybe not
		// yet reaped by it.
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", sleep))
		if !strings.Contains(string(b), ") Z ") {
			t.Errorf("the child's sleep %d is still running: %s", sleep, b)
		}
	}
}

// The parent removes the child's own directory, whatever the child says.
func TestTempDirOnly(t *testing.T) {
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := t.TempDir()
	s := spec("plant")
	s.TempIn = in
	s.Env = []string{"VICTIM=" + victim}
	p, first, err := Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	h := decode(t, first)
	if filepath.Dir(h.Temp) != in || h.Text != h.Temp {
		t.Errorf("child's directory %q (TMPDIR %q), want one in %s", h.Temp, h.Text, in)
	}
	_, err = p.Stop(5 * time.Second)
	if err == nil || !strings.Contains(err.Error(), "left junk behind") {
		t.Errorf("Stop: %v, want the leftover named", err)
	}
	if ents, _ := os.ReadDir(in); len(ents) != 0 {
		t.Errorf("%s holds %v", in, ents)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("the file the child named was touched: %v", err)
	}
}

// A killed run's directory (nobody holds its lock) goes; one in use stays.
func TestStaleTempDirs(t *testing.T) {
	in := t.TempDir()
	stale := filepath.Join(in, tempPrefix+"stale")
	if err := os.MkdirAll(filepath.Join(stale, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	busy, err := newTempDir(in)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.remove()
	fresh, err := newTempDir(in)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.remove()
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale directory kept: %v", err)
	}
	if _, err := os.Stat(busy.path); err != nil {
		t.Errorf("directory in use removed: %v", err)
	}
}

// Nothing a child runs inherits the report pipe.
func TestNoPipeLeaks(t *testing.T) {
	p, first, err := Start(context.Background(), spec("fds"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(5 * time.Second)
	h := decode(t, first)
	if !strings.HasPrefix(h.Temp, "pipe:") || !strings.Contains(h.Text, "/dev/null") {
		t.Fatalf("report pipe %q, the command's descriptors %q", h.Temp, h.Text)
	}
	if strings.Contains(h.Text, h.Temp) {
		t.Errorf("the command has the report pipe %s open:\n%s", h.Temp, h.Text)
	}
}

// KillAll ends every child at once and removes their directories.
func TestKillAll(t *testing.T) {
	var set Set
	in := t.TempDir()
	var ps []*Process
	for _, mode := range []string{"stubborn", "ready"} {
		s := spec(mode)
		s.Set, s.TempIn = &set, in
		p, _, err := Start(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	began := time.Now()
	set.KillAll()
	if took := time.Since(began); took > time.Second {
		t.Errorf("KillAll took %v", took)
	}
	for _, p := range ps {
		select {
		case <-p.Exited():
		default:
			t.Errorf("child %d still running", p.Pid())
		}
		p.Wait()
	}
	if ents, _ := os.ReadDir(in); len(ents) != 0 {
		t.Errorf("%s holds %v", in, ents)
	}
}

// A held command is signalled as a group until it is reaped, never after;
// how it ended is known before the reap.
func TestHeld(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 100 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	h, err := StartHeld(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.SignalGroup(syscall.SIGKILL); err != nil {
		t.Fatalf("SignalGroup while running: %v", err)
	}
	<-h.Exited()
	if !h.Signaled() {
		t.Error("killed, but Signaled() is false")
	}
	if cmd.ProcessState != nil {
		t.Error("reaped before Reap")
	}
	if st := h.Reap(); st == nil || st.Success() {
		t.Errorf("Reap: %v", st)
	}
	if err := h.SignalGroup(syscall.SIGTERM); !errors.Is(err, ErrReaped) {
		t.Errorf("SignalGroup after Reap = %v, want ErrReaped", err)
	}
	gone(t, h.Pid())
}

// asPID1 is the parent as PID 1 of a PID namespace: it starts a child that
// leaves a process in its group, and stops it. The orphan is reparented to
// us, and only we can reap it.
func asPID1() int {
	if os.Getpid() != 1 {
		fmt.Println("not PID 1")
		return 1
	}
	p, _, err := Start(context.Background(), spec("grandchild"))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	began := time.Now()
	_, err = p.Stop(5 * time.Second)
	fmt.Printf("stopped in %v: %v\n", time.Since(began).Round(time.Millisecond), err)
	procs, _ := Processes()
	for _, pr := range procs {
		if pr.Pid != 1 {
			fmt.Printf("left: %+v\n", pr)
		}
	}
	if err != nil || len(procs) != 1 {
		return 1
	}
	return 0
}

// As PID 1 the supervisor reaps what its child's group leaves to it.
func TestAsPID1(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test needs root (unshare --pid)")
		}
		t.Skip("needs root (unshare --pid)")
	}
	out, err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", os.Args[0], "as-pid1").CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("as PID 1: %v", err)
	}
}
