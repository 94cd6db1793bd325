package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
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
// report pipe and writes the samples on the data pipe. It returns the
// process exit code: 2 for bad input (then also reported on the pipe).
func EngineMain(stdin io.Reader, stderr io.Writer, open func(name string) (audio.Driver, error)) int {
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
	return measure(conn, drv, granted, rt, req, fail)
}

// measure runs the period loop on drv, opened as granted with the
// real-time set-up rt, until the request's duration passes or SIGTERM
// arrives: the loop puts the samples into a ring a drainer goroutine
// empties into the data pipe, so that the loop never waits on the parent.
// It says hello before the first period and bye after the last, and
// returns the process exit code; fail reports why it could not run.
func measure(conn *child.Conn, drv audio.Driver, granted audio.Granted, rt rundata.RTSetup, req engineRequest, fail func(error) int) int {
	cfg := audio.Config{Rate: granted.Rate, PeriodFrames: granted.PeriodFrames}
	// The ring holds at least 4 s of periods: 40 drain intervals.
	ring := audio.NewRing(max(1<<16, int(4e9/cfg.PeriodNS())))
	eng := audio.NewEngine(drv, cfg.PeriodNS(), audio.Options{
		CPULoad:  req.CPULoad,
		Duration: req.DurationNS,
		StallAt:  req.StallAt,
		StallFor: req.StallForNS,
	}, ring)
	eng.Calibrate()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		eng.Stop()
	}()

	if err := unix.SetNonblock(conn.DataFD(), false); err != nil {
		return fail(fmt.Errorf("engine: samples pipe: %w", err))
	}
	drainer := audio.NewDrainer(ring, conn.DataFD())
	done := make(chan struct{})
	drained := make(chan error, 1)
	go func() { drained <- drainer.Run(done) }()

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
	runErr := eng.Run()
	close(done)
	drainErr := <-drained
	bye := engineBye{Start: eng.Start(), Periods: eng.Periods(), Lost: ring.Lost()}
	if err := errors.Join(runErr, drainErr); err != nil {
		bye.Err = err.Error()
	}
	_ = conn.Send(eventBye, bye)
	if bye.Err != "" {
		return 1
	}
	return 0
}
