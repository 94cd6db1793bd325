package audio

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/rundata"
)

// Drainer moves samples from the rings of one or more period loops to a
// file descriptor (the pipe to the parent process) in the wire form, each
// sample marked with its ring's index (Sample.Loop) so that the parent
// tells the loops of run --cpus apart on one pipe. It runs on an ordinary
// goroutine and does not allocate after its start either: the period
// loops share the process with it, and any allocation could end in a
// runtime pause a loop would measure.
type Drainer struct {
	rings []*Ring
	fd    int
	buf   []byte
	s     rundata.Sample
}

// DrainInterval is how long the drainer waits when the ring is empty, ns.
const DrainInterval = 100e6

// drainBatch is how many samples one write carries at most.
const drainBatch = 256

// NewDrainer returns a drainer from rings to fd; a sample of rings[i]
// goes out with Loop i.
func NewDrainer(fd int, rings ...*Ring) *Drainer {
	d := &Drainer{rings: rings, fd: fd, buf: make([]byte, drainBatch*rundata.WireSize)}
	clear(d.buf) // present before the run, like the ring
	return d
}

// Run drains until done is closed and the ring is empty. It polls every
// DrainInterval when idle: the latency of the hand-over does not matter,
// only that the loop never waits for it, and fewer wakeups cost the
// machine less CPU per period. The ring must hold several intervals.
//
// It waits in the scheduler, not in a raw sleep, so that its P is free
// while it waits: the engine has two Ps, one held by the pinned loop for
// the whole run, and the goroutine that handles SIGTERM needs the other.
func (d *Drainer) Run(done <-chan struct{}) error {
	idle := time.NewTimer(DrainInterval)
	defer idle.Stop()
	for {
		n, err := d.batch()
		if err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		select {
		case <-done:
			// A last push may have raced the check.
			for {
				n, err := d.batch()
				if n == 0 || err != nil {
					return err
				}
			}
		case <-idle.C:
			idle.Reset(DrainInterval)
		}
	}
}

// batch writes up to drainBatch samples from each ring in turn and says
// how many in all: a busy ring does not hold up the others' hand-over.
func (d *Drainer) batch() (int, error) {
	all := 0
	for i, r := range d.rings {
		n := 0
		for n < drainBatch && r.Pop(&d.s) {
			d.s.Loop = int32(i)
			rundata.PutWire(d.buf[n*rundata.WireSize:], &d.s)
			n++
		}
		if n == 0 {
			continue
		}
		if err := d.write(d.buf[:n*rundata.WireSize]); err != nil {
			return all, err
		}
		all += n
	}
	return all, nil
}

func (d *Drainer) write(b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(d.fd, b)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			if errors.Is(err, unix.EAGAIN) {
				time.Sleep(time.Millisecond)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("write samples: %w", err)
		}
		b = b[n:]
	}
	return nil
}
