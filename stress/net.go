package stress

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"latencytest/internal/badinput"
	"net"
	"sync"
)

// netStressor floods TCP connections over 127.0.0.1: the network stack's
// softirq and copy work without any traffic leaving the machine.
type netStressor struct{}

func (netStressor) Name() string { return "net" }
func (netStressor) Description() string {
	return "TCP flood over 127.0.0.1 only (--conns connections); MB/s"
}

type netLoad struct {
	conns int
	block size
	flag  flagPrefix
}

func (netStressor) Flags(fs *flag.FlagSet, prefix string) Load {
	l := &netLoad{block: size{bytes: 64 << 10}, flag: flagPrefix(prefix)}
	fs.IntVar(&l.conns, l.flag.def("conns"), 2, "connections")
	fs.Var(&l.block, l.flag.def("block"), "`size` of each write")
	return l
}

func (l *netLoad) Check() error {
	if l.conns < 1 || l.conns > 256 {
		return badinput.Errorf("%s %d: want 1 to 256", l.flag.name("conns"), l.conns)
	}
	if l.block.bytes > 16<<20 {
		return badinput.Errorf("%s %s: want at most 16M", l.flag.name("block"), l.block.String())
	}
	return nil
}

func (l *netLoad) Run(ctx context.Context, m *Meter) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen on 127.0.0.1: %w", err)
	}
	m.Unit("MB", 1e6)
	m.Set("conns", l.conns)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	var errs []error
	track := func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		conns = append(conns, c)
	}
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() == nil {
			errs = append(errs, err)
		}
	}
	wg.Add(1)
	go func() { // the receiving side
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			track(c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := io.Copy(io.Discard, c); err != nil && !errors.Is(err, net.ErrClosed) {
					fail(err)
				}
			}()
		}
	}()
	var d net.Dialer
	for i := 0; i < l.conns; i++ {
		c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
		if err != nil {
			ln.Close()
			wg.Wait()
			return fmt.Errorf("connect to %s: %w", ln.Addr(), err)
		}
		track(c)
		wg.Add(1)
		go func() { // a sender
			defer wg.Done()
			buf := make([]byte, l.block.bytes)
			for ctx.Err() == nil {
				n, err := c.Write(buf)
				m.Add(int64(n))
				if err != nil {
					fail(err)
					return
				}
			}
		}()
	}
	m.Ready()
	<-ctx.Done()
	// Closing everything ends every blocked read and write.
	ln.Close()
	mu.Lock()
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
	return errors.Join(errs...)
}
