package stress

import (
	"context"
	"flag"
	"os"

	"golang.org/x/sys/unix"
)

// procStressor is the load of top and ps: it reads stat, status, cmdline
// and statm of every process, and the system-wide /proc files top shows,
// in a loop.
type procStressor struct{}

func (procStressor) Name() string { return "proc" }
func (procStressor) Description() string {
	return "read every process's /proc stat, status, cmdline and statm and /proc/{stat,meminfo,interrupts,loadavg}, as top does; files/s"
}

type procLoad struct{}

func (procStressor) Flags(*flag.FlagSet, string) Load { return procLoad{} }

func (procLoad) Check() error { return nil }

var (
	procSystemFiles = []string{"/proc/stat", "/proc/meminfo", "/proc/interrupts", "/proc/loadavg"}
	procPerProcess  = []string{"stat", "status", "cmdline", "statm"}
)

func (procLoad) Run(ctx context.Context, m *Meter) error {
	m.Unit("files", 1)
	m.Ready()
	buf := make([]byte, 64<<10)
	for ctx.Err() == nil {
		for _, p := range procSystemFiles {
			if readAll(p, buf) {
				m.Add(1)
			}
		}
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return err
		}
		for _, e := range ents {
			if ctx.Err() != nil {
				break
			}
			if c := e.Name()[0]; c < '0' || c > '9' {
				continue
			}
			for _, f := range procPerProcess {
				if readAll("/proc/"+e.Name()+"/"+f, buf) {
					m.Add(1)
				}
			}
		}
	}
	return nil
}

// readAll reads a whole file into buf, over and over if it is larger,
// as a reader of /proc does; false if it could not be read (the process
// ended meanwhile).
func readAll(path string, buf []byte) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Read(fd, buf)
		if err != nil {
			return false
		}
		if n == 0 {
			return true
		}
	}
}
