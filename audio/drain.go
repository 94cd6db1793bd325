package audio

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"latencytest/rundata"
)

// Drainer moves samples from the ring to a file descriptor (the pipe to the
// parent process) in the wire form. It runs on an ordinary goroutine and
// does not allocate either: the period loop shares the process with it, and
// any allocation could end in a runtime pause the loop would measure.
type Drainer struct {
	ring  *Ring
	fd    int
	buf   []byte
	sleep Sleeper
	s     rundata.Sample
}

// DrainInterval is how long the drainer sleeps when the ring is empty, ns.
const DrainInterval = 100e6

// drainBatch is how many samples one write carries at most.
const drainBatch = 256

// NewDrainer returns a drainer from ring to fd.
func NewDrainer(ring *Ring, fd int) *Drainer {
	return &Drainer{ring: ring, fd: fd, buf: make([]byte, drainBatch*rundata.WireSize)}
}

// Run drains until done is closed and the ring is empty. It polls every
// DrainInterval when idle: the latency of the hand-over does not matter,
// only that the loop never waits for it, and fewer wakeups cost the
// machine less CPU per period. The ring must hold several intervals.
func (d *Drainer) Run(done <-chan struct{}) error {
	for {
		n := 0
		for n < drainBatch && d.ring.Pop(&d.s) {
			rundata.PutWire(d.buf[n*rundata.WireSize:], &d.s)
			n++
		}
		if n > 0 {
			if err := d.write(d.buf[:n*rundata.WireSize]); err != nil {
				return err
			}
			continue
		}
		select {
		case <-done:
			if d.ring.Pop(&d.s) { // a last push raced the check
				rundata.PutWire(d.buf, &d.s)
				if err := d.write(d.buf[:rundata.WireSize]); err != nil {
					return err
				}
				continue
			}
			return nil
		default:
		}
		d.sleep.For(DrainInterval)
	}
}

func (d *Drainer) write(b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(d.fd, b)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			if errors.Is(err, unix.EAGAIN) {
				d.sleep.For(1e6)
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
