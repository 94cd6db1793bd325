package stress

import (
	"context"
	"flag"
	"latencytest/internal/badinput"
	"runtime"
	"sync"
)

// cpuStressor keeps N threads busy with integer arithmetic.
type cpuStressor struct{}

func (cpuStressor) Name() string { return "cpu" }
func (cpuStressor) Description() string {
	return "N busy threads (--threads, default one per CPU); million operations/s"
}

type cpuLoad struct {
	threads int
	flag    flagPrefix
}

func (cpuStressor) Flags(fs *flag.FlagSet, prefix string) Load {
	c := &cpuLoad{flag: flagPrefix(prefix)}
	fs.IntVar(&c.threads, c.flag.def("threads"), runtime.NumCPU(), "busy threads")
	return c
}

func (c *cpuLoad) Check() error {
	if c.threads < 1 || c.threads > 4096 {
		return badinput.Errorf("%s %d: want 1 to 4096", c.flag.name("threads"), c.threads)
	}
	return nil
}

// cpuBatch is how many operations a thread does between looks at ctx.
const cpuBatch = 1 << 20

func (c *cpuLoad) Run(ctx context.Context, m *Meter) error {
	m.Unit("Mops", 1e6)
	m.Set("threads", c.threads)
	if c.threads > runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(c.threads) // our own process: every thread may run at once
	}
	m.Ready()
	var wg sync.WaitGroup
	for i := 0; i < c.threads; i++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			runtime.LockOSThread()
			x := seed | 1
			for ctx.Err() == nil {
				x = spin(x, cpuBatch)
				m.Add(cpuBatch)
			}
			runtime.KeepAlive(x)
		}(uint64(i) + 0x9e3779b97f4a7c15)
	}
	wg.Wait()
	return nil
}

// spin does n rounds of xorshift, work the compiler cannot skip.
func spin(x uint64, n int) uint64 {
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}
