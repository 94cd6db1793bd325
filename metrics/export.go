package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"golang.org/x/net/netutil"

	"latencytest/internal/atomicfile"
)

// fileEvery is how often KeepFile rewrites the metrics file: node_exporter
// reads it at each of its own scrapes.
const fileEvery = 5 * time.Second

// ListenAddr is the address --listen ADDR binds: HOST:PORT, or :PORT or
// PORT alone for localhost only (127.0.0.1). Serving every interface is
// asked for by name (0.0.0.0:PORT or [::]:PORT): the metrics say what the
// machine runs, and not everyone on the network need see that.
func ListenAddr(addr string) (string, error) {
	if _, err := strconv.Atoi(addr); err == nil {
		addr = ":" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("not HOST:PORT")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("port %q: allowed 1 to 65535 (0: any free port)", port)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// serveLimits bound what clients of the metrics server may hold: the
// server runs for days beside a measurement (monitor), often on an
// address others reach, so neither a client that stops sending nor one
// that opens connections by the thousand may keep its resources.
type serveLimits struct {
	read  time.Duration // to read a request, headers and body
	write time.Duration // to write a response (a scrape renders in milliseconds)
	idle  time.Duration // a keep-alive connection between requests
	conns int           // connections open at once; more wait to be accepted
}

// defaultLimits: Prometheus scrapes every 15 s to 1 min, over one
// connection per server; a few servers and a curl need a few connections.
func defaultLimits() serveLimits {
	return serveLimits{read: 10 * time.Second, write: 10 * time.Second, idle: 2 * time.Minute, conns: 16}
}

// Serve serves the metrics on ln at /metrics until stop, which closes ln
// and waits for the requests in flight (at most a second). A request must
// come within 10 s, its response go within 10 s, an idle keep-alive
// connection is closed after 2 minutes, and at most 16 connections are
// open at once (netutil.LimitListener).
func (s *Set) Serve(ln net.Listener) (stop func()) { return s.serve(ln, defaultLimits()) }

func (s *Set) serve(ln net.Listener, l serveLimits) (stop func()) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: l.read, ReadTimeout: l.read, WriteTimeout: l.write,
		IdleTimeout: l.idle, MaxHeaderBytes: 16 << 10}
	ln = netutil.LimitListener(ln, l.conns)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln) // ends with ErrServerClosed at stop
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		<-done
	}
}

// WriteFile writes the metrics to path in the text format through
// atomicfile, the one place that decides what an output path may be: a
// regular file is replaced whole (a new file beside it, created
// exclusively, renamed over path, which replaces a symlink there rather
// than writing through it), a character device or a FIFO is written
// through, anything else is bad input. prometheus.WriteToTextfile is not
// used: it renames over whatever path is, /dev/null included.
func (s *Set) WriteFile(path string) error {
	mfs, err := s.reg.Gather()
	if err != nil {
		return fmt.Errorf("metrics file: %w", err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			return fmt.Errorf("metrics file: %w", err)
		}
	}
	if err := atomicfile.WriteFile(path, b.Bytes()); err != nil {
		return fmt.Errorf("metrics file: %w", err)
	}
	return nil
}

// KeepFile rewrites the metrics file every fileEvery until stop. stop(true)
// writes it a last time, with everything counted until then; stop(false)
// does not (nothing was measured). It returns the first error of any write.
func (s *Set) KeepFile(path string) (stop func(last bool) error) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var errs []error
	wg.Go(func() {
		t := time.NewTicker(fileEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if err := s.WriteFile(path); err != nil && len(errs) == 0 {
					errs = append(errs, err)
				}
			case <-done:
				return
			}
		}
	})
	return func(last bool) error {
		close(done)
		wg.Wait()
		if last {
			errs = append(errs, s.WriteFile(path))
		}
		return errors.Join(errs...)
	}
}
