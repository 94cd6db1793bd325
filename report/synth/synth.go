// Package synth writes synthetic results directories: run.json and samples
// files shaped like real measurements (a quiet idle phase, a hackbench phase
// with a long tail and a few xruns), so that the report, its tests and its
// benchmark have realistic input without a measurement.
package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"latencytest/rundata"
)

// Phase describes the latency distribution of one synthetic phase: a
// log-normal body, occasional exponential spikes and rare long stalls.
type Phase struct {
	Name, Stressor string
	Skipped        string // the phase did not run, and why

	MedianUS  float64 // median wakeup latency
	Sigma     float64 // log-normal shape of the body
	SpikeProb float64 // probability of a spike per period
	SpikeUS   float64 // mean extra latency of a spike
	StallProb float64 // probability of a stall per period
	StallUS   float64 // maximum extra latency of a stall (uniform in [StallUS/4, StallUS])
	// ApartUS makes the phase a duplex stream (0: playback only) whose
	// capture side becomes due about this long (exponentially) before
	// the playback side, so the two sides' wakeups are two humps.
	ApartUS float64
	// Poll makes every period record a poll wait (an ALSA driver's).
	Poll bool

	StressorStats map[string]any

	// CPUs makes the phase one of run --cpus: a thread per CPU, each
	// with its own distribution (the fields above, its Name unused) and
	// samples file, on CPU CPU; the phase's own figures are of them all.
	CPUs []Phase
	CPU  int
}

// Idle is a quiet machine: a tight body around 6 µs and a thin tail.
func Idle() Phase {
	return Phase{Name: "idle", MedianUS: 6, Sigma: 0.3, SpikeProb: 2e-4, SpikeUS: 40}
}

// Hackbench is a scheduler storm: a wider body, a fat tail and rare stalls
// longer than the buffer, which the virtual buffer turns into xruns.
func Hackbench() Phase {
	return Phase{Name: "hackbench", Stressor: "hackbench", MedianUS: 18, Sigma: 0.6,
		SpikeProb: 2e-3, SpikeUS: 250, StallProb: 2e-4, StallUS: 6000,
		StressorStats: map[string]any{"loops_per_s": 812.5, "groups": 4}}
}

// Classic returns the seven phases of the classic latencytest run.
func Classic() []Phase {
	mk := func(name, stressor string, med, sigma, sp, sus, st, stus float64, stats map[string]any) Phase {
		return Phase{Name: name, Stressor: stressor, MedianUS: med, Sigma: sigma, SpikeProb: sp, SpikeUS: sus,
			StallProb: st, StallUS: stus, StressorStats: stats}
	}
	return []Phase{
		Idle(),
		mk("x11", "x11", 9, 0.4, 5e-4, 80, 0, 0, map[string]any{"redraws_per_s": 1450.0}),
		mk("proc", "proc", 11, 0.45, 8e-4, 120, 0, 0, map[string]any{"reads_per_s": 90210.0}),
		mk("disk-write", "disk-write", 12, 0.5, 1e-3, 200, 5e-6, 4000, map[string]any{"MB_per_s": 412.3}),
		mk("disk-copy", "disk-copy", 13, 0.5, 1e-3, 220, 5e-6, 4000, map[string]any{"MB_per_s": 198.0}),
		mk("disk-read", "disk-read", 10, 0.45, 6e-4, 150, 0, 0, map[string]any{"MB_per_s": 1520.7}),
		Hackbench(),
	}
}

// Config is the shape of a synthetic run.
type Config struct {
	Rate, Frames, Periods int
	CPULoad               int           // percent of a period the simulated DSP work takes
	PhaseLength           time.Duration // per phase
	Phases                []Phase
	Seed                  uint64
	Hostname, Device      string
	Command               []string
	Interrupted           bool
}

// Default is 64 frames at 48 kHz, two periods, 20 % CPU load, 10 s per
// phase, idle then hackbench.
func Default() Config {
	return Config{Rate: 48000, Frames: 64, Periods: 2, CPULoad: 20, PhaseLength: 10 * time.Second,
		Phases: []Phase{Idle(), Hackbench()}, Seed: 1, Hostname: "synth", Device: "timer",
		Command: []string{"latencytest", "run", "-driver", "timer"}}
}

// Write creates run.json and one samples file per phase in dir and returns
// the run it wrote.
func Write(dir string, c Config) (*rundata.Run, error) {
	periodNS := int64(c.Frames) * 1e9 / int64(c.Rate)
	periodUS := float64(periodNS) / 1000
	start := time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)
	r := &rundata.Run{
		Schema: rundata.SchemaVersion, Tool: "synth", Command: c.Command, Start: start,
		Interrupted: c.Interrupted,
		System: rundata.System{Hostname: c.Hostname, KernelRelease: "6.1.0-rt-amd64",
			KernelVersion: "#1 SMP PREEMPT_RT Debian 6.1.0", Cmdline: "BOOT_IMAGE=/vmlinuz threadirqs quiet",
			Preempt: "PREEMPT_RT", CPUModel: "Synthetic CPU @ 3.0GHz", CPUs: 4},
		Driver: "timer", Device: c.Device, Rate: c.Rate, Channels: 2, PeriodFrames: c.Frames, Periods: c.Periods,
		PeriodUS: periodUS, BufferUS: periodUS * float64(c.Periods), CPULoad: c.CPULoad, Simulated: true,
		RT: rundata.RTSetup{
			Asked:    rundata.RTParams{Policy: "SCHED_FIFO", Priority: 80, Mlockall: true, DMALatency: true},
			Obtained: rundata.RTParams{Policy: "SCHED_FIFO", Priority: 80, Mlockall: true, DMALatency: true},
		},
		Checks: []rundata.Finding{
			{Name: "rtprio limit", Status: "OK", Value: "unlimited"},
			{Name: "cpu governor", Status: "WARN", Value: "powersave", Why: "frequency changes stall the CPU", Fix: "cpupower frequency-set -g performance"},
		},
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x5eed))
	n := int64(c.PhaseLength / time.Duration(periodNS))
	mono := int64(1_000_000_000_000)
	wall := start
	for i, ps := range c.Phases {
		p := rundata.Phase{Name: ps.Name, Stressor: ps.Stressor, Skipped: ps.Skipped}
		if ps.Skipped == "" {
			var err error
			if len(ps.CPUs) > 0 {
				r.CPUs = nil
				for _, cs := range ps.CPUs {
					r.CPUs = append(r.CPUs, cs.CPU)
				}
				err = writeCPUs(dir, i, &p, ps, c, rng, mono, n, periodNS)
			} else {
				p.SamplesFile = fmt.Sprintf("phase%d.samples", i)
				err = writePhase(filepath.Join(dir, p.SamplesFile), &p, ps, c, rng, mono, n, periodNS, nil)
			}
			if err != nil {
				return nil, err
			}
			p.StartMonoNS, p.EndMonoNS = mono, mono+n*periodNS
			p.StartWall, p.EndWall = wall, wall.Add(time.Duration(n*periodNS))
			p.StressorStats = ps.StressorStats
			mono += n*periodNS + 1e9
			wall = wall.Add(time.Duration(n*periodNS) + time.Second)
		}
		r.Phases = append(r.Phases, p)
	}
	r.End = wall
	if err := rundata.WriteRun(dir, r); err != nil {
		return nil, err
	}
	return r, nil
}

// writeCPUs writes a phase of run --cpus: each CPU's samples file and
// figures, and the phase's over all of them, as the run has them.
func writeCPUs(dir string, i int, p *rundata.Phase, ps Phase, c Config, rng *rand.Rand, mono, n, periodNS int64) error {
	hdr := rundata.NewSampleHeader(c.Rate, c.Frames, c.Periods)
	all := rundata.NewAccumulator(hdr, periodNS*int64(c.CPULoad)/100)
	for _, cs := range ps.CPUs {
		cp := rundata.CPUPhase{CPU: cs.CPU, TID: 1000 + cs.CPU, Phase: rundata.Phase{Name: p.Name, Stressor: p.Stressor}}
		cp.RT.Obtained = rundata.RTParams{Policy: "SCHED_FIFO", Priority: 80, Affinity: []int{cs.CPU}}
		cp.RT.Asked = cp.RT.Obtained
		cp.SamplesFile = fmt.Sprintf("phase%d-cpu%d.samples", i, cs.CPU)
		if err := writePhase(filepath.Join(dir, cp.SamplesFile), &cp.Phase, cs, c, rng, mono, n, periodNS, all); err != nil {
			return err
		}
		cp.StartMonoNS, cp.EndMonoNS = mono, mono+n*periodNS
		p.CPUs = append(p.CPUs, cp)
	}
	p.FromCPUs(all.Hist)
	return nil
}

// writePhase writes one thread's samples file and fills p with its
// figures; every sample also goes to also, if not nil.
func writePhase(path string, p *rundata.Phase, ps Phase, c Config, rng *rand.Rand, mono, n, periodNS int64, also *rundata.Accumulator) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	hdr := rundata.NewSampleHeader(c.Rate, c.Frames, c.Periods)
	w := rundata.NewSampleWriter(f, hdr)
	nominal := periodNS * int64(c.CPULoad) / 100
	acc := rundata.NewAccumulator(hdr, nominal)
	// An xrun happens when the thread wakes too late to refill the buffer
	// before the hardware drains what is left of it.
	slack := periodNS * int64(c.Periods-1)
	bufFrames := int64(c.Frames * c.Periods)
	var s rundata.Sample
	for i := range n {
		lat := ps.MedianUS * math.Exp(ps.Sigma*rng.NormFloat64())
		if ps.SpikeProb > 0 && rng.Float64() < ps.SpikeProb {
			lat += rng.ExpFloat64() * ps.SpikeUS
		}
		if ps.StallProb > 0 && rng.Float64() < ps.StallProb {
			lat += ps.StallUS * (0.25 + 0.75*rng.Float64())
		}
		latNS := int64(lat * 1000)
		dsp := nominal + int64(rng.NormFloat64()*2000)
		if rng.Float64() < ps.SpikeProb/2 {
			dsp += int64(rng.ExpFloat64() * ps.SpikeUS * 1000)
		}
		dsp = max(dsp, 0)
		// As the timer driver's virtual buffer: a period free at the
		// deadline, and one more for every period of lateness.
		free := int64(c.Frames) + latNS*int64(c.Rate)/1e9
		s = rundata.Sample{Index: i, Due: mono + i*periodNS, DSP: dsp, Avail: int32(min(free, bufFrames))}
		s.Woke = s.Due + latNS
		if ps.ApartUS > 0 {
			s.PlaybackDue = s.Due
			s.CaptureDue = s.Due - int64(rng.ExpFloat64()*ps.ApartUS*1000)
		}
		if ps.Poll {
			// The previous period's work done, the loop sleeps until this one.
			s.PollNS = max(periodNS-nominal, 1)
		}
		if latNS > slack {
			s.Xrun = latNS - slack
			s.Flags = rundata.FlagSimulated
		}
		if err := w.Write(&s); err != nil {
			return err
		}
		acc.Add(&s)
		if also != nil {
			also.Add(&s)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	acc.Fill(p)
	return nil
}
