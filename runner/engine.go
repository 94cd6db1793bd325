package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"

	"latencytest/audio"
	"latencytest/internal/badinput"
	"latencytest/internal/child"
	"latencytest/rundata"
)

// EngineMain is the engine process, a child of `latencytest run`
// (internal/child): it reads an engineRequest on stdin, opens the driver by
// name with open, and runs the period loop on its locked main thread until
// the duration passes or SIGTERM arrives. It says hello and bye on the
// report pipe and writes the samples on the data pipe; what its capture
// side kept (audio.Keeper), as a WAV file, goes to stdout once the loop is
// over, or, for a capture handed over as it is read (a monitor's
// loopback, audio.Streamer), as the loop reads it. It returns the process exit code: 2 for bad input (then also
// reported on the pipe).
func EngineMain(stdin io.Reader, stdout, stderr io.Writer, open func(name string) (audio.Driver, error)) int {
	// Nothing here may pause the loop: no garbage collector, a P for the
	// other goroutines besides the loop's, one locked thread.
	audio.RuntimeSetup()
	runtime.LockOSThread()
	conn, err := child.Attach()
	if err != nil {
		fmt.Fprintf(stderr, "engine: %v\n", err)
		return 1
	}
	if conn.DataFD() < 0 {
		fmt.Fprintf(stderr, "engine: for `latencytest run` only\n")
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, err)
		_ = conn.Fail(err)
		if badinput.Is(err) {
			return 2
		}
		return 1
	}
	var req engineRequest
	if err := json.NewDecoder(stdin).Decode(&req); err != nil {
		return fail(fmt.Errorf("engine: bad request: %w", err))
	}
	if len(req.CPUs) > 0 {
		return measurePerCPU(conn, open, req, stdout, fail)
	}
	drv, err := open(req.Driver)
	if err != nil {
		return fail(err)
	}
	rt, release := audio.RTSetup(req.RT)
	defer release()
	granted, err := drv.Open(req.Config)
	if err != nil {
		return fail(err)
	}
	defer drv.Close()
	return measure(conn, drv, granted, rt, req, stdout, fail)
}

// measure runs the period loop on drv, opened as granted with the
// real-time set-up rt, until the request's duration passes or SIGTERM
// arrives: the loop puts the samples into a ring a drainer goroutine
// empties into the data pipe, so that the loop never waits on the parent.
// It says hello before the first period and bye after the last, and
// returns the process exit code; fail reports why it could not run. What
// the capture side kept goes to stdout, before bye.
func measure(conn *child.Conn, drv audio.Driver, granted audio.Granted, rt rundata.RTSetup, req engineRequest, stdout io.Writer, fail func(error) int) int {
	ring := newRing(granted, 1)
	eng := audio.NewEngine(drv, periodOf(granted), engineOptions(req, -1), ring)
	eng.Calibrate()
	stopOnSignal(eng)
	drained, err := startDrain(conn, ring)
	if err != nil {
		return fail(err)
	}
	hello := engineHello{TID: unix.Gettid(), Granted: granted, RT: rt, NominalDSP: eng.NominalDSP()}
	if _, ok := drv.(audio.CallbackDriver); ok {
		hello.TID, hello.Comm = 0, audio.CallbackThreadName
	}
	if err := conn.Send(eventHello, hello); err != nil {
		return 1
	}
	if hello.TID != 0 { // the audio thread is this one, not a driver's
		audio.SlackOthers()
	}
	stopStream := streamCapture(drv, req, stdout)
	runErr := eng.Run()
	// Read while the stream still runs: the last write left about a
	// period queued, and waiting for the drainer first could let a small
	// buffer run dry (AC97 at 2×256 in the VM: no delay to report).
	reported := reportedDelay(drv)
	drainErr := drained()
	if err := stopStream(); err != nil {
		// Not the measurement's failure: the parent hears no more of
		// the capture, and the periods go on being measured.
		fmt.Fprintf(os.Stderr, "engine: %v\n", err)
	}
	tb := byeOf(eng, ring)
	bye := engineBye{Start: tb.Start, Periods: tb.Periods, Lost: tb.Lost, Broke: tb.Broke, Reported: reported}
	return sayBye(conn, bye, runErr, drainErr, handOver(drv, stdout))
}

// measurePerCPU is measure for run --cpus: a driver, an engine and a ring
// per CPU, each loop on a thread of its own pinned to its CPU
// (audio.RunPerCPU), one drainer for every ring. The first CPU's loop
// runs the driver asked; with a card (or the RTC), whose stream is one,
// the others run the timer driver at the stream's granted shape: timer
// threads watching the other CPUs. This thread takes the process-wide
// steps of the set-up (mlockall, /dev/cpu_dma_latency) and keeps
// SCHED_OTHER: it only waits. The threads' timer slack is left as
// inherited (audio.SlackOthers would coarsen the loops' own).
func measurePerCPU(conn *child.Conn, open func(string) (audio.Driver, error), req engineRequest, stdout io.Writer, fail func(error) int) int {
	process, release := audio.RTSetup(rundata.RTParams{Policy: "SCHED_OTHER", Mlockall: req.RT.Mlockall, DMALatency: req.RT.DMALatency})
	defer release()
	engines := make([]*audio.Engine, len(req.CPUs))
	rings := make([]*audio.Ring, len(req.CPUs))
	var granted audio.Granted
	var stream audio.Driver // the first CPU's: the one whose stream is the run's
	for i, cpu := range req.CPUs {
		name, cfg := req.Driver, req.Config
		if i > 0 {
			name, cfg = "timer", timerLike(granted)
		}
		drv, err := open(name)
		if err != nil {
			return fail(err)
		}
		g, err := drv.Open(cfg)
		if err != nil {
			return fail(fmt.Errorf("CPU %d: %w", cpu, err))
		}
		defer drv.Close()
		if i == 0 {
			granted, stream = g, drv
		}
		rings[i] = newRing(g, len(req.CPUs))
		engines[i] = audio.NewEngine(drv, periodOf(g), engineOptions(req, cpu), rings[i])
	}
	stopOnSignal(engines...)
	drained, err := startDrain(conn, rings...)
	if err != nil {
		return fail(err)
	}
	ready := make(chan audio.CPUThread, len(engines))
	ran := make(chan error, 1)
	go func() { ran <- audio.RunPerCPU(engines, req.CPUs, req.RT, func(th audio.CPUThread) { ready <- th }) }()
	threads := make([]engineThread, len(engines))
	for range engines {
		th := <-ready // each thread says it before its loop, whatever follows
		i := slices.Index(req.CPUs, th.CPU)
		threads[i] = engineThread{CPU: th.CPU, TID: th.TID, RT: th.Setup, NominalDSP: engines[i].NominalDSP()}
	}
	hello := engineHello{TID: threads[0].TID, Granted: granted, RT: threadsRT(req.RT, process, threads), NominalDSP: threads[0].NominalDSP, Threads: threads}
	if err := conn.Send(eventHello, hello); err != nil {
		for _, e := range engines {
			e.Stop()
		}
		<-ran
		return 1
	}
	runErr := <-ran
	bye := engineBye{Reported: reportedDelay(stream)} // while the stream runs, as measure does
	drainErr := drained()
	for i, e := range engines {
		tb := byeOf(e, rings[i])
		if i == 0 {
			bye.Start = tb.Start
		}
		bye.Periods += tb.Periods
		bye.Lost += tb.Lost
		if tb.Broke != nil && bye.Broke == nil {
			bye.Broke = tb.Broke
		}
		bye.Threads = append(bye.Threads, tb)
	}
	return sayBye(conn, bye, runErr, drainErr, handOver(stream, stdout))
}

// reportedDelay is the delay drv's card reports, once its loop is over
// (audio.DelayReporter), or nil.
func reportedDelay(drv audio.Driver) *rundata.ReportedDelay {
	if dr, ok := drv.(audio.DelayReporter); ok {
		if d, ok := dr.ReportedDelay(); ok {
			return &d
		}
	}
	return nil
}

// timerLike is the timer driver's stream of g's shape, for the timer
// threads beside a card's stream under run --cpus: the same rate, period
// and buffer, so that every CPU is measured at the card's period.
func timerLike(g audio.Granted) audio.Config {
	return audio.Config{Rate: g.Rate, Channels: g.Channels, PeriodFrames: g.PeriodFrames, Periods: g.Periods}
}

// threadsRT is the set-up of a run --cpus as run.json's rt says it: the
// process-wide steps as this thread took them, the policy and priority
// the threads obtained (the lowest, should they differ), and every
// thread's refusals, named by its CPU. Each thread's affinity is in its
// own record, not here.
func threadsRT(asked rundata.RTParams, process rundata.RTSetup, threads []engineThread) rundata.RTSetup {
	rt := rundata.RTSetup{Asked: asked, Obtained: process.Obtained, Refused: process.Refused}
	for i, th := range threads {
		o := th.RT.Obtained
		if i == 0 || o.Priority < rt.Obtained.Priority {
			rt.Obtained.Policy, rt.Obtained.Priority = o.Policy, o.Priority
		}
		for _, r := range th.RT.Refused {
			rt.Refused = append(rt.Refused, fmt.Sprintf("CPU %d: %s", th.CPU, r))
		}
	}
	return rt
}

// newRing is the ring of one of n loops: at least 4 s of its periods,
// 40 drain intervals, and the n rings 1<<16 samples at least in all (as
// one loop's alone): the rings are touched, and so locked, whole before
// the loops start, and 64 rings of 1<<16 would lock 370 MB.
func newRing(g audio.Granted, n int) *audio.Ring {
	return audio.NewRing(max(1<<16/n, int(4e9/periodOf(g))))
}

// periodOf is the granted stream's period, ns.
func periodOf(g audio.Granted) int64 {
	cfg := audio.Config{Rate: g.Rate, PeriodFrames: g.PeriodFrames}
	return cfg.PeriodNS()
}

// engineOptions is the loop's options for the request; cpu is the loop's
// CPU under run --cpus (-1: the one loop), which has the request's stall
// if it is the CPU the stall is for.
func engineOptions(req engineRequest, cpu int) audio.Options {
	o := audio.Options{
		CPULoad:    req.CPULoad,
		Duration:   req.DurationNS,
		Loops:      req.Loops,
		BreakAbove: req.BreakAbove,
		StallAt:    req.StallAt,
		StallFor:   req.StallForNS,
		Glitches:   req.Glitches,
	}
	if cpu >= 0 && req.StallCPU >= 0 && cpu != req.StallCPU {
		o.StallAt = -1
	}
	return o
}

// stopOnSignal stops every engine at SIGTERM or SIGINT.
func stopOnSignal(engines ...*audio.Engine) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		for _, e := range engines {
			e.Stop()
		}
	}()
}

// startDrain starts the drainer of rings into the data pipe; the
// function it returns, called once the loops have ended, waits for the
// last samples to be handed over.
func startDrain(conn *child.Conn, rings ...*audio.Ring) (drained func() error, err error) {
	if err := unix.SetNonblock(conn.DataFD(), false); err != nil {
		return nil, fmt.Errorf("engine: samples pipe: %w", err)
	}
	drainer := audio.NewDrainer(conn.DataFD(), rings...)
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() { errc <- drainer.Run(done) }()
	return func() error {
		close(done)
		return <-errc
	}, nil
}

// byeOf is how eng's loop, whose samples went through ring, ended.
func byeOf(eng *audio.Engine, ring *audio.Ring) threadBye {
	b := threadBye{Start: eng.Start(), Periods: eng.Periods(), Lost: ring.Lost()}
	if i, lat, ok := eng.Broke(); ok {
		b.Broke = &rundata.Break{Period: i, LatencyNS: lat}
	}
	return b
}

// sayBye sends bye with errs joined into it and returns the process's
// exit code.
func sayBye(conn *child.Conn, bye engineBye, errs ...error) int {
	if err := errors.Join(errs...); err != nil {
		bye.Err = err.Error()
	}
	_ = conn.Send(eventBye, bye)
	if bye.Err != "" {
		return 1
	}
	return 0
}

// streamCapture starts handing what drv's capture side reads over to w
// as it reads it (audio.Streamer, a monitor's loopback), on a goroutine
// beside the loop, when the request asks; the function it returns stops
// it once the loop is over, with everything the loop read written, and
// says why the hand-over stopped early if it did (its ring was full).
func streamCapture(drv audio.Driver, req engineRequest, w io.Writer) (stop func() error) {
	st, ok := drv.(audio.Streamer)
	if !ok || !req.Config.StreamCapture {
		return func() error { return nil }
	}
	done, errc := make(chan struct{}), make(chan error, 1)
	go func() { errc <- st.StreamCapture(w, done) }()
	return func() error {
		close(done)
		return <-errc
	}
}

// handOver writes what drv's capture side kept (audio.Keeper), if
// anything, to w as a WAV file.
func handOver(drv audio.Driver, w io.Writer) error {
	k, ok := drv.(audio.Keeper)
	if !ok {
		return nil
	}
	if b := k.KeptWAV(); b != nil {
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("engine: the capture: %w", err)
		}
	}
	return nil
}
