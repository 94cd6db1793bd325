package child

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/internal/badinput"
)

// Conn is a child's end of what Start set up: the report pipe, the data
// pipe, the temporary directory. A nil *Conn is a child run by hand from a
// shell: it sends nothing.
type Conn struct {
	mu     sync.Mutex
	enc    *json.Encoder
	parent int
	data   int // -1: none
	temp   string
}

// ErrParentGone is Attach's error when the process that started the child
// is no longer its parent.
var ErrParentGone = errors.New("the parent process is gone")

// Attach is what a child does first. It returns nil when the process was
// not started by Start. Otherwise it checks that its parent is still the
// process that started it: PR_SET_PDEATHSIG was set before the exec, so a
// parent that dies from then on is covered, and one that died before shows
// here as another parent (init, a subreaper). The check compares with the
// pid the parent passed, not with 1, so it holds when the parent is PID 1
// itself (a container, a PID namespace).
//
// It marks the pipes close-on-exec and clears the environment that names
// them, so that nothing the child runs (a user's command, Xvfb) can write
// to the parent.
func Attach() (*Conn, error) {
	ps, ok := os.LookupEnv(envParent)
	if !ok {
		return nil, nil
	}
	c := &Conn{data: -1, temp: os.Getenv(envTemp)}
	fd, err1 := strconv.Atoi(os.Getenv(envReport))
	parent, err2 := strconv.Atoi(ps)
	if d := os.Getenv(envData); d != "" {
		c.data, _ = strconv.Atoi(d)
	}
	for _, k := range []string{envParent, envReport, envData, envTemp} {
		os.Unsetenv(k)
	}
	if err1 != nil || err2 != nil || fd < 3 {
		return nil, fmt.Errorf("bad %s/%s in the environment", envParent, envReport)
	}
	if os.Getppid() != parent {
		return nil, ErrParentGone
	}
	c.parent = parent
	unix.CloseOnExec(fd)
	if c.data >= 3 {
		unix.CloseOnExec(c.data)
	}
	c.enc = json.NewEncoder(os.NewFile(uintptr(fd), "report"))
	return c, nil
}

// Send writes one message with event and data (nil: none). It is safe for
// concurrent use; a parent that stopped listening is the parent watch's
// business, so errors are only returned.
func (c *Conn) Send(event string, data any) error {
	if c == nil {
		return nil
	}
	m := Message{Event: event}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			return err
		}
		m.Data = b
	}
	return c.send(m)
}

// Fail says why the child cannot run or failed: one line, bad input if err
// is.
func (c *Conn) Fail(err error) error {
	if c == nil {
		return nil
	}
	return c.send(Message{Event: EventError, Error: err.Error(), BadInput: badinput.Is(err)})
}

func (c *Conn) send(m Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.enc.Encode(m)
}

// DataFD is the descriptor of the data pipe, -1 if there is none.
func (c *Conn) DataFD() int {
	if c == nil {
		return -1
	}
	return c.data
}

// TempDir is the private temporary directory the parent made for the
// child ("" : none). The parent removes it, with all in it.
func (c *Conn) TempDir() string {
	if c == nil {
		return ""
	}
	return c.temp
}

// WatchParent calls gone, once, when the process that started the child
// is no longer its parent — the second line of defence after
// PR_SET_PDEATHSIG, should the signal be missed — until ctx ends.
func (c *Conn) WatchParent(ctx context.Context, gone func()) {
	if c == nil {
		return
	}
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			if os.Getppid() != c.parent {
				gone()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}
