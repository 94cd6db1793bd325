package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"latencytest/internal/child"
	"latencytest/rundata"
)

// engineGrace is how long the engine may take to stop after SIGTERM: it
// ends its period, hands over its ring (at most 4 s of samples, a few
// hundred kilobytes) and says bye. One that does not is killed.
const engineGrace = 2 * time.Second

// phaseResult is what one engine run produced.
type phaseResult struct {
	hello   engineHello
	bye     engineBye
	stopped bool // ended by the context, not by its duration
	killed  bool // it did not stop within engineGrace of SIGTERM
	// capture is what the capture side kept (audio.Config.KeepFrames),
	// a WAV file the engine wrote on its stdout after the loop.
	capture bytes.Buffer
}

// runEngine runs one engine process for one phase (internal/child) and
// feeds its samples to sink as they arrive, until it ends or ctx is done.
// onHello runs once the stream is open. A capture handed over as it is
// read (audio.Config.StreamCapture) goes to stream as it comes. Bad input
// the engine reports (a device that does not exist) comes back as bad
// input.
func runEngine(ctx context.Context, cfg Config, req engineRequest, stream io.Writer, sink func(*rundata.Sample), onHello func(engineHello) error) (*phaseResult, error) {
	reqJSON, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	res := &phaseResult{}
	var stdout io.Writer // nil: /dev/null
	switch {
	case req.Config.StreamCapture:
		stdout = stream
	case req.Config.KeepFrames > 0:
		stdout = &res.capture
	}
	var byeMu sync.Mutex // the bye arrives on the pipe's reading goroutine
	p, first, err := child.Start(ctx, child.Spec{
		Name: "engine", Exe: cfg.Exe, Args: []string{EngineCommand},
		Stdin:  bytes.NewReader(reqJSON),
		Stdout: stdout,
		// No preemption signals: they would interrupt the loop's sleeps every
		// 10 ms only to be refused (the loop is pinned, see audio.Pinnable).
		Env:       []string{"GODEBUG=asyncpreemptoff=1"},
		Pdeathsig: syscall.SIGKILL,
		DataPipe:  true,
		Set:       cfg.Children,
		OnMessage: func(m child.Message) {
			if m.Event == eventBye {
				byeMu.Lock()
				defer byeMu.Unlock()
				if err := json.Unmarshal(m.Data, &res.bye); err != nil {
					res.bye.Err = "engine: bad bye: " + err.Error()
				}
			}
		},
	})
	if err != nil {
		return nil, err
	}
	samples := p.Data()
	defer samples.Close()
	if err := hello(first, &res.hello, onHello); err != nil {
		samples.Close() // its writes fail now: nothing holds it up
		p.Stop(engineGrace)
		return nil, err
	}
	watched := stopOnDone(ctx, p, res)
	readErr := readSamples(samples, sink)
	st, cleanErr := p.Wait()
	watched()
	byeMu.Lock()
	defer byeMu.Unlock()
	switch {
	case readErr != nil:
		return res, readErr
	case res.bye.Err != "":
		return res, errors.New(res.bye.Err)
	case (st == nil || !st.Success()) && !res.stopped:
		return res, fmt.Errorf("engine: %v: %s", st, p.LastStderr())
	case cleanErr != nil:
		return res, fmt.Errorf("engine: %w", cleanErr)
	}
	return res, nil
}

// hello decodes the engine's first message into h and hands it to
// onHello.
func hello(m child.Message, h *engineHello, onHello func(engineHello) error) error {
	if m.Event != eventHello {
		return fmt.Errorf("engine: said %q before hello", m.Event)
	}
	if err := json.Unmarshal(m.Data, h); err != nil {
		return fmt.Errorf("engine hello: %w", err)
	}
	if onHello == nil {
		return nil
	}
	return onHello(*h)
}

// stopOnDone stops the engine when ctx ends — it finishes its period,
// hands over what it measured and exits, or is killed after engineGrace —
// and notes it in res. The function it returns ends the watch and returns
// once res holds what happened.
func stopOnDone(ctx context.Context, p *child.Process, res *phaseResult) func() {
	end := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		select {
		case <-ctx.Done():
			res.stopped = true
			res.killed = p.Terminate(engineGrace)
		case <-end:
		}
	}()
	return func() {
		close(end)
		<-ended
	}
}

func readSamples(r io.Reader, sink func(*rundata.Sample)) error {
	br := bufio.NewReaderSize(r, 256*rundata.WireSize)
	var buf [rundata.WireSize]byte
	var s rundata.Sample
	for {
		if _, err := io.ReadFull(br, buf[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("read samples: %w", err)
		}
		rundata.GetWire(buf[:], &s)
		sink(&s)
	}
}

// accumulator is a phase's accounting while its engine runs: the
// figures (rundata.Accumulator, which recovery shares) and, live only,
// the samples file's writer and the xrun lines. The progress display and
// the periodic flush read it from goroutines of their own, hence the lock.
type accumulator struct {
	mu sync.Mutex
	rundata.Accumulator
	writer   *rundata.SampleWriter
	writeErr error
	onXrun   func(s *rundata.Sample)
	// perCPU are, under run --cpus, each CPU's histogram in --cpus
	// order: the histogram file has a column per CPU, as cyclictest's
	// has one per thread.
	perCPU []*rundata.Histogram
}

func newAccumulator(w *rundata.SampleWriter, shape rundata.SampleHeader, nominalDSP int64, onXrun func(*rundata.Sample)) *accumulator {
	return &accumulator{Accumulator: *rundata.NewAccumulator(shape, nominalDSP), writer: w, onXrun: onXrun}
}

func (a *accumulator) sample(s *rundata.Sample) {
	a.mu.Lock()
	a.Add(s)
	if a.writer != nil && a.writeErr == nil {
		a.writeErr = a.writer.Write(s)
	}
	a.mu.Unlock()
	if (s.Xrun > 0 || s.Flags&rundata.FlagPointerJump != 0) && a.onXrun != nil {
		a.onXrun(s)
	}
}

// snapshot is a consistent view for the progress display.
type snapshot struct {
	periods          int64
	min, avg, max    float64 // µs
	xruns            int
	lastDue, started int64
}

func (a *accumulator) snapshot() snapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := snapshot{periods: a.Periods(), xruns: a.Xruns()}
	s.started, s.lastDue = a.Span()
	if h := a.Hist; h.Count > 0 {
		s.min = float64(h.MinNS) / 1000
		s.avg = h.SumNS / float64(h.Count) / 1000
		s.max = float64(h.MaxNS) / 1000
	}
	return s
}

// cardDelay gives the verdict the frames the card holds beyond the buffer
// (rundata.Accumulator.CardDelay).
func (a *accumulator) cardDelay(frames int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.CardDelay(frames)
}

// fill writes the accumulated statistics into ph.
func (a *accumulator) fill(ph *rundata.Phase) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.Fill(ph)
}

// nowWall is the wall clock, for run.json's human-readable instants.
func nowWall() time.Time { return time.Now().UTC() }
