package stress

import (
	"context"
	"flag"
	"latencytest/internal/badinput"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// memoryStressor maps anonymous memory, touches every page (a page fault
// each) and unmaps it again, over a bounded size: page-fault and
// allocation churn for the kernel's memory manager.
type memoryStressor struct{}

func (memoryStressor) Name() string { return "memory" }
func (memoryStressor) Description() string {
	return "map, fault in and unmap --size of memory in a loop (never more than half the available memory); MB/s faulted"
}

type memoryLoad struct {
	size  size
	bytes int64
	flag  flagPrefix
}

const defaultMemory = 256 << 20

func (memoryStressor) Flags(fs *flag.FlagSet, prefix string) Load {
	l := &memoryLoad{size: size{bytes: defaultMemory}, flag: flagPrefix(prefix)}
	fs.Var(&l.size, l.flag.def("size"), "memory to churn, a `size` such as 256M (never more than half the available memory)")
	return l
}

func (l *memoryLoad) Check() error {
	avail := memAvailable()
	l.bytes = l.size.bytes
	if avail > 0 && l.bytes > avail/2 {
		if l.size.set {
			return badinput.Errorf("%s %s: more than half the available memory (%s)", l.flag.name("size"), l.size.String(), humanSize(avail))
		}
		l.bytes = avail / 2
	}
	page := int64(os.Getpagesize())
	l.bytes = l.bytes / page * page
	if l.bytes < page {
		return badinput.Errorf("%s %s: want at least one page", l.flag.name("size"), l.size.String())
	}
	return nil
}

// memAvailable is MemAvailable from /proc/meminfo in bytes (0: unknown).
func memAvailable() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// memoryChunk is mapped at a time: the churn touches --size per pass
// but the ctx check comes every chunk.
const memoryChunk = 16 << 20

func (l *memoryLoad) Run(ctx context.Context, m *Meter) error {
	m.Unit("MB", 1e6)
	m.Set("size_bytes", l.bytes)
	m.Ready()
	page := os.Getpagesize()
	for ctx.Err() == nil {
		mem, err := unix.Mmap(-1, 0, int(l.bytes), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return err
		}
		for off := 0; off < len(mem) && ctx.Err() == nil; off += memoryChunk {
			end := min(off+memoryChunk, len(mem))
			for p := off; p < end; p += page {
				mem[p] = byte(p)
			}
			m.Add(int64(end - off))
		}
		if err := unix.Munmap(mem); err != nil {
			return err
		}
	}
	return nil
}
