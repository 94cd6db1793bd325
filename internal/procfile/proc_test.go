package procfile

import (
	"os"
	"os/exec"
	"testing"
)

// This process is alive; the same pid with another start time (a reused
// pid), a process that has exited and been reaped, and one of another PID
// namespace are not taken as alive, the last not known either way.
func TestProcAlive(t *testing.T) {
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if self.PID != os.Getpid() || self.Start == 0 || self.NS == 0 {
		t.Fatalf("Self() = %+v", self)
	}
	if alive, known := self.Alive(); !alive || !known {
		t.Errorf("this process: alive %v, known %v", alive, known)
	}
	reused := self
	reused.Start++
	if alive, known := reused.Alive(); alive || !known {
		t.Errorf("its pid with another start time: alive %v, known %v; want dead", alive, known)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	gone, err := ProcOf(cmd.Process.Pid)
	if err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	if alive, known := gone.Alive(); !alive || !known {
		t.Errorf("a running child: alive %v, known %v", alive, known)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if alive, known := gone.Alive(); alive || !known {
		t.Errorf("an exited process: alive %v, known %v; want dead", alive, known)
	}
	other := self
	other.NS++
	if alive, known := other.Alive(); alive || known {
		t.Errorf("another namespace's: alive %v, known %v; want not known", alive, known)
	}
}
