package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"latencytest/rundata"
)

// BadInputError is an error that is the user's to fix (a device that does
// not exist, a rate it refuses); the CLI exits 2 on it.
type BadInputError struct{ Msg string }

func (e *BadInputError) Error() string { return e.Msg }

// phaseResult is what one engine run produced.
type phaseResult struct {
	hello   engineHello
	bye     engineBye
	stopped bool // ended by the context, not by its duration
}

// runEngine runs one engine process for one phase and feeds its samples to
// sink as they arrive, until it ends or ctx is done. onHello runs once the
// stream is open.
func runEngine(ctx context.Context, exe string, req engineRequest, sink func(*rundata.Sample), onHello func(engineHello) error) (*phaseResult, error) {
	reqJSON, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("samples pipe: %w", err)
	}
	defer pr.Close()
	cmd := exec.Command(exe, EngineCommand)
	cmd.Stdin = bytes.NewReader(reqJSON)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		pw.Close()
		return nil, err
	}
	cmd.ExtraFiles = []*os.File{pw}
	// No preemption signals: they would interrupt the loop's sleeps every
	// 10 ms only to be refused (the loop is pinned, see audio.Pinnable).
	cmd.Env = append(os.Environ(), "GODEBUG=asyncpreemptoff=1")
	// Its own process group keeps the terminal's Ctrl-C away from the
	// engine (the parent stops it and keeps what it measured); Pdeathsig
	// ends it if the parent dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return nil, fmt.Errorf("start engine: %w", err)
	}
	pw.Close()

	res := &phaseResult{}
	lines := bufio.NewScanner(stdout)
	fail := func(err error) (*phaseResult, error) {
		cmd.Process.Kill()
		io.Copy(io.Discard, stdout)
		cmd.Wait()
		return nil, err
	}
	if !lines.Scan() {
		waitErr := cmd.Wait()
		msg := strings.TrimSpace(stderr.String())
		if msg == "" && waitErr != nil {
			msg = waitErr.Error()
		}
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) && ee.ExitCode() == engineExitBadDevice {
			return nil, &BadInputError{Msg: lastLine(msg)}
		}
		return nil, fmt.Errorf("engine: %s", msg)
	}
	if err := json.Unmarshal(lines.Bytes(), &res.hello); err != nil {
		return fail(fmt.Errorf("engine hello: %w", err))
	}
	if onHello != nil {
		if err := onHello(res.hello); err != nil {
			return fail(err)
		}
	}

	// Stop the engine when ctx ends; it finishes its period, hands over
	// what it measured and exits.
	var once sync.Once
	stop := func() { once.Do(func() { cmd.Process.Signal(syscall.SIGTERM) }) }
	exited := make(chan struct{})
	watched := make(chan struct{}) // res.stopped is settled
	go func() {
		defer close(watched)
		select {
		case <-ctx.Done():
			res.stopped = true
			stop()
		case <-exited:
		}
	}()

	readErr := readSamples(pr, sink)
	for lines.Scan() {
		if err := json.Unmarshal(lines.Bytes(), &res.bye); err != nil {
			res.bye.Err = "engine: " + lines.Text()
		}
	}
	waitErr := cmd.Wait()
	close(exited)
	<-watched
	switch {
	case readErr != nil:
		return res, readErr
	case res.bye.Err != "":
		return res, errors.New(res.bye.Err)
	case waitErr != nil && !res.stopped:
		return res, fmt.Errorf("engine: %v: %s", waitErr, lastLine(stderr.String()))
	}
	return res, nil
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

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// accumulator turns a phase's samples into its statistics and its samples
// file, as they arrive, so memory stays flat however long the run.
type accumulator struct {
	mu         sync.Mutex
	hist       *rundata.Histogram
	grid       *rundata.Histogram // lateness against the fitted grid, when the driver has one
	bufFrames  int64              // frames in the whole buffer
	rate       int64
	headroom   int64 // least frames queued at a wakeup; -1 before the first
	nominalDSP int64
	dspMax     int64
	dspNear    int64 // CPU loops within 100 µs of nominal
	periods    int64
	xruns      int
	xrunNS     int64
	lastLat    int64
	firstDue   int64
	lastDue    int64
	writer     *rundata.SampleWriter
	writeErr   error
	onXrun     func(s *rundata.Sample)
}

func newAccumulator(w *rundata.SampleWriter, g audioShape, onXrun func(*rundata.Sample)) *accumulator {
	return &accumulator{
		hist:      rundata.NewHistogram(rundata.DefaultHistUS),
		grid:      rundata.NewHistogram(rundata.DefaultHistUS),
		bufFrames: int64(g.PeriodFrames * g.Periods),
		rate:      int64(g.Rate),
		headroom:  -1,
		writer:    w,
		onXrun:    onXrun,
	}
}

func (a *accumulator) sample(s *rundata.Sample) {
	a.mu.Lock()
	lat := s.Latency()
	a.hist.Add(lat)
	a.lastLat = lat
	if a.periods == 0 {
		a.firstDue = s.Due
	}
	a.lastDue = s.Due
	a.periods++
	if s.Grid != 0 {
		a.grid.Add(s.Woke - s.Grid)
	}
	if q := a.bufFrames - int64(s.Avail); s.Xrun == 0 && (a.headroom < 0 || q < a.headroom) {
		a.headroom = max(q, 0)
	}
	if a.nominalDSP > 0 {
		a.dspMax = max(a.dspMax, s.DSP)
		if d := s.DSP - a.nominalDSP; d <= 100_000 && d >= -100_000 {
			a.dspNear++
		}
	}
	if s.Xrun > 0 {
		a.xruns++
		a.xrunNS += s.Xrun
	}
	if a.writer != nil && a.writeErr == nil {
		a.writeErr = a.writer.Write(s)
	}
	a.mu.Unlock()
	if s.Xrun > 0 && a.onXrun != nil {
		a.onXrun(s)
	}
}

// audioShape is the part of a granted stream the statistics need.
type audioShape struct{ Rate, PeriodFrames, Periods int }

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
	s := snapshot{periods: a.periods, xruns: a.xruns, lastDue: a.lastDue, started: a.firstDue}
	if a.hist.Count > 0 {
		s.min = float64(a.hist.MinNS) / 1000
		s.avg = a.hist.SumNS / float64(a.hist.Count) / 1000
		s.max = float64(a.hist.MaxNS) / 1000
	}
	return s
}

// fill writes the accumulated statistics into ph.
func (a *accumulator) fill(ph *rundata.Phase) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ph.Periods = a.periods
	ph.Latency = a.hist.Stats()
	ph.Overflow = a.hist.Overflow
	ph.WithinUS100 = 100 * a.hist.FractionBelow(100_000)
	ph.WithinMS1 = 100 * a.hist.FractionBelow(1_000_000)
	if a.grid.Count > 0 {
		g := a.grid.Stats()
		ph.GridLateness = &g
	}
	if a.headroom >= 0 && a.rate > 0 {
		ph.HeadroomMinUS = float64(a.headroom) * 1e6 / float64(a.rate)
	}
	ph.Xruns = a.xruns
	ph.XrunMSTotal = float64(a.xrunNS) / 1e6
	ph.CPULoop = rundata.CPULoop{NominalUS: float64(a.nominalDSP) / 1000, MaxUS: float64(a.dspMax) / 1000}
	if a.nominalDSP > 0 && a.periods > 0 {
		ph.CPULoop.Within100USPct = 100 * float64(a.dspNear) / float64(a.periods)
	}
}

// nowWall is the wall clock, for run.json's human-readable instants.
func nowWall() time.Time { return time.Now().UTC() }
