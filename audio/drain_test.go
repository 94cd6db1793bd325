package audio_test

import (
	"os"
	"testing"
	"time"

	"latencytest/audio"
	"latencytest/rundata"
)

// Everything pushed reaches the pipe, in order, including what is pushed
// after the drainer went idle and just before done is closed.
func TestDrainerHandsOverEverything(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ring := audio.NewRing(1 << 12)
	push := func(from, to int) {
		for i := from; i < to; i++ {
			ring.Push(&rundata.Sample{Index: int64(i), Due: int64(i) * 1000})
		}
	}
	push(0, 1000)
	done := make(chan struct{})
	ran := make(chan error, 1)
	go func() { ran <- audio.NewDrainer(int(w.Fd()), ring).Run(done); w.Close() }()
	time.Sleep(2 * audio.DrainInterval * time.Nanosecond) // idle by now
	push(1000, 1500)
	close(done)
	got := make(chan []rundata.Sample, 1)
	go func() { got <- readWire(r) }()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	ss := <-got
	if len(ss) != 1500 {
		t.Fatalf("%d samples through the pipe, want 1500", len(ss))
	}
	for i, s := range ss {
		if s.Index != int64(i) || s.Due != int64(i)*1000 {
			t.Fatalf("sample %d arrived as %+v", i, s)
		}
	}
}

func readFull(f *os.File, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := f.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// With a ring per CPU's loop, every sample reaches the pipe marked with
// its ring's index, each ring's in order, however their pushes interleave.
func TestDrainerMarksEachRingsSamples(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rings := []*audio.Ring{audio.NewRing(1 << 12), audio.NewRing(1 << 12), audio.NewRing(1 << 12)}
	want := []int{700, 0, 300} // the second loop measured nothing
	for i, n := range want {
		for k := range n {
			rings[i].Push(&rundata.Sample{Index: int64(k), Due: int64(i)})
		}
	}
	done := make(chan struct{})
	close(done)
	ran := make(chan error, 1)
	go func() { ran <- audio.NewDrainer(int(w.Fd()), rings...).Run(done); w.Close() }()
	got := make([]int, len(rings))
	for _, s := range readWire(r) {
		if int64(s.Loop) != s.Due || s.Index != int64(got[s.Loop]) {
			t.Fatalf("sample %+v: pushed to ring %d as its period %d", s, s.Due, got[s.Loop])
		}
		got[s.Loop]++
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("ring %d: %d samples through the pipe, want %d", i, got[i], want[i])
		}
	}
}

// readWire reads the samples the drainer wrote to r until it is closed.
func readWire(r *os.File) []rundata.Sample {
	var ss []rundata.Sample
	var b [rundata.WireSize]byte
	for {
		if _, err := readFull(r, b[:]); err != nil {
			return ss
		}
		var s rundata.Sample
		rundata.GetWire(b[:], &s)
		ss = append(ss, s)
	}
}
