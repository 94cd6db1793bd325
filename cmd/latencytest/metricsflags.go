package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"

	"latencytest/internal/atomicfile"
	"latencytest/metrics"
	"latencytest/rundata"
	"latencytest/runner"
	"latencytest/sysinfo"
)

// metricsFlags are --listen and --metrics-file, which `run` and `monitor`
// share: the measurement as Prometheus metrics (package metrics), served
// or written for node_exporter's textfile collector, only when asked.
type metricsFlags struct {
	listen, file string
}

func newMetricsFlags(fs *flag.FlagSet) *metricsFlags {
	m := &metricsFlags{}
	fs.StringVar(&m.listen, "listen", "", "serve Prometheus metrics at http://ADDR/metrics; ADDR is HOST:PORT, and :PORT or PORT alone binds localhost (127.0.0.1) only: give 0.0.0.0:PORT to let other machines scrape it (default: no server)")
	fs.StringVar(&m.file, "metrics-file", "", "write the Prometheus metrics to this file every 5 s, atomically, for node_exporter's textfile collector (a .prom file in its --collector.textfile.directory)")
	return m
}

func (m *metricsFlags) on() bool { return m.listen != "" || m.file != "" }

// start checks the flags and, when either is given, makes the metrics,
// labelled with cfg's driver, device and period, feeds them cfg's samples
// and spikes (and with --loopback its round trip and glitches), and starts the server and the file. stop ends both; with
// measured, the file is written a last time, without (bad input: the
// driver refused the device) a file this start created is removed, so
// that nothing is left. Bad input here: the address cannot be bound, the
// file's directory is not writable. The server's address is said on
// stderr once the first period is measured (a refused device is then
// still one line); --listen with port 0 takes a free port.
func (m *metricsFlags) start(cfg *runner.Config, stderr io.Writer) (set *metrics.Set, stop func(measured bool) error, err error) {
	stop = func(bool) error { return nil }
	if !m.on() {
		return nil, stop, nil
	}
	if m.file != "" {
		if err := checkMetricsFile(m.file); err != nil {
			return nil, nil, err
		}
	}
	var ln net.Listener
	if m.listen != "" {
		addr, err := metrics.ListenAddr(m.listen)
		if err != nil {
			return nil, nil, badFlag("--listen %q: %v; allowed HOST:PORT, :PORT or PORT (localhost)", m.listen, err)
		}
		if ln, err = net.Listen("tcp", addr); err != nil {
			return nil, nil, badFlag("--listen %s: %v", addr, err)
		}
	}
	sys := sysinfo.Read()
	set = metrics.New(metrics.Labels{
		Driver: cfg.Driver, Device: cfg.Audio.Device, PeriodFrames: cfg.Audio.PeriodFrames,
		Kernel: sys.KernelRelease, Host: sys.Hostname,
	})
	var said sync.Once
	cfg.OnSample = func(s *rundata.Sample) {
		set.Sample(s)
		if ln != nil {
			said.Do(func() { fmt.Fprintf(stderr, "metrics: http://%s/metrics\n", ln.Addr()) })
		}
	}
	cfg.OnSpike = set.Spike
	if cfg.Audio.Loopback {
		set.Loopback()
		cfg.OnRoundTrip, cfg.OnGlitch = set.RoundTrip, set.Glitch
	}
	stopServer, stopFile := func() {}, func(bool) error { return nil }
	if ln != nil {
		stopServer = set.Serve(ln)
	}
	if m.file != "" {
		_, statErr := os.Lstat(m.file)
		keep := set.KeepFile(m.file)
		stopFile = func(measured bool) error {
			err := keep(measured)
			if !measured && errors.Is(statErr, fs.ErrNotExist) {
				os.Remove(m.file)
			}
			return err
		}
	}
	return set, func(measured bool) error {
		stopServer()
		return stopFile(measured)
	}, nil
}

// checkMetricsFile refuses a --metrics-file that cannot be written: its
// directory must exist and be writable, and the name be new, a regular
// file, a character device or a FIFO (atomicfile.Check).
func checkMetricsFile(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return badFlag("--metrics-file %s: %s is not an existing directory", path, dir)
	}
	if err := checkWritable("--metrics-file", dir); err != nil {
		return err
	}
	return atomicfile.Check("--metrics-file", path)
}
