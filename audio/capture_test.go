package audio

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer a test reads while StreamWAV writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// What the loop puts comes out as a WAV file of no known length holding
// every period in order, across the ring's wrap, converted; putting a
// period allocates nothing.
func TestCaptureRingStream(t *testing.T) {
	f := WAVFormat{Tag: 1, Channels: 2, Rate: 8000, Bits: 16, Align: 4}
	const period = 64 * 4
	ring := NewCaptureRing(5 * period) // wraps many times
	var out syncBuffer
	done := make(chan struct{})
	streamed := make(chan error, 1)
	conv := func(b []byte) {
		for i := range b {
			b[i] ^= 0xFF
		}
	}
	go func() { streamed <- StreamWAV(&out, f, ring, conv, done) }()
	var want []byte
	p := make([]byte, period)
	for k := range 200 {
		for i := range p {
			p[i] = byte(k + i)
		}
		for { // wait for room, as a loop whose parent keeps up never does
			if int(ring.put.Load()-ring.taken.Load())+period <= len(ring.buf) {
				break
			}
		}
		ring.Put(p)
		for _, b := range p {
			want = append(want, b^0xFF)
		}
	}
	close(done)
	if err := <-streamed; err != nil {
		t.Fatal(err)
	}
	got, err := streamedData(out.b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%d bytes handed over, want the %d put, in order", len(got), len(want))
	}
	if n := testing.AllocsPerRun(100, func() { ring.Put(p); ring.Take(make([]byte, 0)) }); n != 0 {
		t.Errorf("Put allocates %v times", n)
	}
}

// streamedData is the data of a streamed WAV file: the header says
// 0xFFFFFFFF for its sizes.
func streamedData(b []byte) ([]byte, error) {
	f, size, err := ReadWAVHeader(bytes.NewReader(b))
	if err != nil || size != 0xFFFFFFFF || f.Check() != nil {
		return nil, err
	}
	return b[44:], nil
}

// A ring the reader does not keep up with breaks: the periods before are
// handed over whole, none after, and the stream says so.
func TestCaptureRingBreaks(t *testing.T) {
	f := WAVFormat{Tag: 1, Channels: 1, Rate: 8000, Bits: 16, Align: 2}
	ring := NewCaptureRing(100)
	for k := range 4 {
		ring.Put(bytes.Repeat([]byte{byte(k)}, 40)) // the third does not fit
	}
	var out bytes.Buffer
	err := StreamWAV(&out, f, ring, nil, make(chan struct{}))
	if err == nil || !strings.Contains(err.Error(), "full") {
		t.Errorf("%v, want the ring full said", err)
	}
	if got := out.Bytes()[44:]; !bytes.Equal(got, append(bytes.Repeat([]byte{0}, 40), bytes.Repeat([]byte{1}, 40)...)) {
		t.Errorf("handed over %v, want the two periods before", got)
	}
}
