package audio

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// A CaptureRing carries what a capture side reads from the period loop
// to a goroutine that writes it out as it comes (Streamer, a monitor's
// loopback): the loop copies each period in (Put: no allocation, no
// wait, no lock), the goroutine copies it out (Take). Its memory is taken
// and touched when it is made. A period that finds it full breaks it:
// that period and every one after it are dropped, so that what was
// handed over is the capture up to there, whole, never a capture with a
// hole the parent could not place.
type CaptureRing struct {
	buf    []byte
	put    atomic.Uint64 // bytes put
	taken  atomic.Uint64 // bytes taken
	broken atomic.Bool
}

// NewCaptureRing makes a ring of n bytes.
func NewCaptureRing(n int) *CaptureRing {
	c := &CaptureRing{buf: make([]byte, n)}
	for i := 0; i < n; i += 4096 {
		c.buf[i] = 1
	}
	return c
}

// Put copies b in, unless it does not fit (then the ring is broken) or
// the ring is broken. The period loop's only writer.
func (c *CaptureRing) Put(b []byte) {
	if c.broken.Load() {
		return
	}
	w := c.put.Load()
	if int(w-c.taken.Load())+len(b) > len(c.buf) {
		c.broken.Store(true)
		return
	}
	at := int(w % uint64(len(c.buf)))
	n := copy(c.buf[at:], b)
	copy(c.buf, b[n:])
	c.put.Store(w + uint64(len(b)))
}

// Take copies out what was put and not yet taken, up to len(dst), and
// says how many bytes. The one reader.
func (c *CaptureRing) Take(dst []byte) int {
	r := c.taken.Load()
	n := min(int(c.put.Load()-r), len(dst))
	at := int(r % uint64(len(c.buf)))
	k := copy(dst[:n], c.buf[at:])
	copy(dst[k:n], c.buf)
	c.taken.Store(r + uint64(n))
	return n
}

// Broken says whether a period found the ring full: nothing was put
// since.
func (c *CaptureRing) Broken() bool { return c.broken.Load() }

// captureInterval is how often StreamWAV looks for what the loop put.
const captureInterval = 50 * time.Millisecond

// StreamWAV writes what ring carries to w as a WAV file of format f and
// of no known length (its sizes 0xFFFFFFFF, as a file written while
// streaming), each piece as it comes, converted by conv (nil: none),
// until done is closed and the ring is empty, or the ring broke (then it
// errs, once what was put before is written). Its buffer is taken before
// it starts: it runs beside the period loop, in a process whose
// allocations would pause the loop.
func StreamWAV(w io.Writer, f WAVFormat, ring *CaptureRing, conv func([]byte), done <-chan struct{}) error {
	h := WAVHeader(f, 0)
	binary.LittleEndian.PutUint32(h[4:], 0xFFFFFFFF)
	binary.LittleEndian.PutUint32(h[40:], 0xFFFFFFFF)
	if _, err := w.Write(h); err != nil {
		return fmt.Errorf("the capture: %w", err)
	}
	buf := make([]byte, max(f.Align, 1)*f.Rate/4)
	clear(buf)
	tick := time.NewTimer(captureInterval)
	defer tick.Stop()
	for {
		n := ring.Take(buf)
		if n > 0 {
			if conv != nil {
				conv(buf[:n])
			}
			if _, err := w.Write(buf[:n]); err != nil {
				return fmt.Errorf("the capture: %w", err)
			}
			continue
		}
		if ring.Broken() {
			return fmt.Errorf("the capture: its ring of %d bytes was full (the parent did not read it): not handed over since", len(ring.buf))
		}
		select {
		case <-done:
			if ring.put.Load() == ring.taken.Load() {
				return nil
			}
		case <-tick.C:
			tick.Reset(captureInterval)
		}
	}
}
