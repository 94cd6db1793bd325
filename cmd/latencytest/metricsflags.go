package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"latencytest/metrics"
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
// and spikes, and starts the server and the file. stop ends both, the file
// written a last time. The server's address is said on stderr (--listen
// with port 0 takes a free one). Bad input: the address cannot be bound, the file's
// directory is not writable.
func (m *metricsFlags) start(cfg *runner.Config, stderr io.Writer) (set *metrics.Set, stop func() error, err error) {
	stop = func() error { return nil }
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
	cfg.OnSample, cfg.OnSpike = set.Sample, set.Spike
	stopServer, stopFile := func() {}, func() error { return nil }
	if ln != nil {
		stopServer = set.Serve(ln)
		fmt.Fprintf(stderr, "metrics: http://%s/metrics\n", ln.Addr())
	}
	if m.file != "" {
		stopFile = set.KeepFile(m.file)
	}
	return set, func() error {
		stopServer()
		return stopFile()
	}, nil
}

// checkMetricsFile refuses a --metrics-file that cannot be written: its
// directory must exist and be writable, and the name not be a directory.
func checkMetricsFile(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return badFlag("--metrics-file %s: %s is not an existing directory", path, dir)
	}
	if err := checkWritable("--metrics-file", dir); err != nil {
		return err
	}
	if st, err := os.Lstat(path); err == nil && st.IsDir() {
		return badFlag("--metrics-file %s: a directory; give a file name", path)
	}
	return nil
}
