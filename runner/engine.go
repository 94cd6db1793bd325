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
)

// samplesFD is the descriptor on which the engine process writes samples;
// the parent passes the pipe as its first extra file.
const samplesFD = 3

// EngineMain is the engine process: it reads an engineRequest on stdin,
// opens the driver by name with open, and runs the period loop on its
// locked main thread until the duration passes or SIGTERM arrives. It
// returns the process exit code.
func EngineMain(stdin io.Reader, stdout, stderr io.Writer, open func(name string) (audio.Driver, error)) int {
	// Nothing here may pause the loop: no garbage collector, a P for the
	// other goroutines besides the loop's, one locked thread.
	audio.RuntimeSetup()
	runtime.LockOSThread()
	// The parent may have died before we got here; Pdeathsig covers only
	// a death after the fork.
	if os.Getppid() == 1 {
		return 1
	}

	var req engineRequest
	if err := json.NewDecoder(stdin).Decode(&req); err != nil {
		fmt.Fprintf(stderr, "engine: bad request: %v\n", err)
		return 1
	}
	drv, err := open(req.Driver)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return engineExitBadDevice
	}
	rt, release := audio.RTSetup(req.RT)
	defer release()
	granted, err := drv.Open(req.Config)
	if err != nil {
		fmt.Fprintln(stderr, err)
		var bad *audio.ErrBadDevice
		if errors.As(err, &bad) {
			return engineExitBadDevice
		}
		return 1
	}
	defer drv.Close()

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

	if err := unix.SetNonblock(samplesFD, false); err != nil {
		fmt.Fprintf(stderr, "engine: samples pipe: %v\n", err)
		return 1
	}
	drainer := audio.NewDrainer(ring, samplesFD)
	done := make(chan struct{})
	drained := make(chan error, 1)
	go func() { drained <- drainer.Run(done) }()

	enc := json.NewEncoder(stdout)
	if err := enc.Encode(engineHello{Granted: granted, RT: rt, NominalDSP: eng.NominalDSP()}); err != nil {
		return 1
	}
	runErr := eng.Run()
	close(done)
	drainErr := <-drained
	bye := engineBye{Start: eng.Start(), Periods: eng.Periods(), Lost: ring.Lost()}
	if err := errors.Join(runErr, drainErr); err != nil {
		bye.Err = err.Error()
	}
	enc.Encode(bye)
	if bye.Err != "" {
		return 1
	}
	return 0
}
