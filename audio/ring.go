package audio

import (
	"sync/atomic"

	"latencytest/rundata"
)

// Ring is a single-producer, single-consumer queue of samples. The period
// loop pushes without locking or allocating; a non-real-time thread pops.
// When the consumer falls behind and the ring is full, the sample is
// dropped and counted, never lost silently.
type Ring struct {
	buf  []rundata.Sample
	mask uint64
	head atomic.Uint64 // next slot to write; written by the producer only
	tail atomic.Uint64 // next slot to read; written by the consumer only
	lost atomic.Uint64
}

// NewRing returns a ring holding at least n samples (rounded up to a power
// of two).
func NewRing(n int) *Ring {
	size := 1
	for size < n {
		size <<= 1
	}
	r := &Ring{buf: make([]rundata.Sample, size), mask: uint64(size - 1)}
	// Touch every page now, so that the loop's first pass through the
	// ring takes no page faults (the memory is locked as it is touched).
	for i := range r.buf {
		r.buf[i].Index = -1
	}
	return r
}

// Push appends s, or counts it lost when the ring is full.
func (r *Ring) Push(s *rundata.Sample) bool {
	h := r.head.Load()
	if h-r.tail.Load() > r.mask {
		r.lost.Add(1)
		return false
	}
	r.buf[h&r.mask] = *s
	r.head.Store(h + 1)
	return true
}

// Pop removes the oldest sample into s; it reports false when empty.
func (r *Ring) Pop(s *rundata.Sample) bool {
	t := r.tail.Load()
	if t == r.head.Load() {
		return false
	}
	*s = r.buf[t&r.mask]
	r.tail.Store(t + 1)
	return true
}

// Lost is the number of samples dropped because the ring was full.
func (r *Ring) Lost() uint64 { return r.lost.Load() }
