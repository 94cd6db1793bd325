package rundata

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// SchemaVersion is the version of run.json and of the samples files. It
// changes when a reader written for the old version would misread the new.
const SchemaVersion = 1

// RunFile is the name of the run document inside a results directory.
const RunFile = "run.json"

// Run is run.json: everything about one invocation of `latencytest run`.
type Run struct {
	Schema      int       `json:"schema"`
	Tool        string    `json:"tool_version"`
	Command     []string  `json:"command"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	Interrupted bool      `json:"interrupted"`

	System System `json:"system"`

	Driver       string   `json:"driver"`
	Device       string   `json:"device"`
	Stream       string   `json:"stream,omitempty"`
	Format       string   `json:"format,omitempty"`
	Rate         int      `json:"rate"`
	Channels     int      `json:"channels"`
	PeriodFrames int      `json:"period_frames"`
	Periods      int      `json:"periods"`
	PeriodUS     float64  `json:"period_us"`
	BufferUS     float64  `json:"buffer_us"`
	CPULoad      int      `json:"cpu_load"`
	Simulated    bool     `json:"xruns_simulated"` // the driver has no hardware buffer; xruns come from a virtual one
	DriverNotes  []string `json:"driver_notes,omitempty"`

	RT RTSetup `json:"rt"`

	Phases []Phase `json:"phases"`

	// Checks holds the findings of `latencytest check` made at the start.
	Checks []Finding `json:"checks,omitempty"`
}

// System describes the machine measured.
type System struct {
	Hostname      string `json:"hostname"`
	KernelRelease string `json:"kernel_release"`
	KernelVersion string `json:"kernel_version"`
	Cmdline       string `json:"cmdline"`
	Preempt       string `json:"preempt"`
	CPUModel      string `json:"cpu_model"`
	CPUs          int    `json:"cpus"`
}

// RTSetup records the real-time setup that was asked for and what the
// kernel granted, so a figure is never read without knowing its conditions.
type RTSetup struct {
	Asked    RTParams `json:"asked"`
	Obtained RTParams `json:"obtained"`
	// Refused lists, one line each, the steps that were not obtained and why.
	Refused []string `json:"refused,omitempty"`
}

// RTParams is one side of RTSetup.
type RTParams struct {
	Policy     string `json:"policy"` // "SCHED_FIFO" or "SCHED_OTHER"
	Priority   int    `json:"priority"`
	Mlockall   bool   `json:"mlockall"`
	Affinity   []int  `json:"affinity,omitempty"` // CPUs; empty means all
	DMALatency bool   `json:"cpu_dma_latency_0"`  // /dev/cpu_dma_latency held at 0
}

// Phase is one test of the run: a stressor (or none) and the latencies
// measured while it ran.
type Phase struct {
	Name     string `json:"name"`
	Stressor string `json:"stressor,omitempty"`
	// Skipped says why the phase did not run; the other fields are then zero.
	Skipped string `json:"skipped,omitempty"`

	StartMonoNS int64     `json:"start_mono_ns"`
	EndMonoNS   int64     `json:"end_mono_ns"`
	StartWall   time.Time `json:"start_wall"`
	EndWall     time.Time `json:"end_wall"`

	Periods     int64        `json:"periods"`
	Latency     LatencyStats `json:"latency_us"`
	WithinUS100 float64      `json:"wakeups_within_100us_pct"`
	WithinMS1   float64      `json:"wakeups_within_1ms_pct"`
	// GridLateness is the wakeup measured against the ideal period grid
	// fitted to the soundcard's clock (rundata.Sample.Grid), for drivers
	// that have one; it separates the thread's lateness from the jitter
	// of the interrupt itself.
	GridLateness *LatencyStats `json:"grid_lateness_us,omitempty"`
	// HeadroomMinUS is the least audio still queued at any wakeup: how
	// close the phase came to an xrun without having one.
	HeadroomMinUS float64 `json:"headroom_min_us"`
	Xruns         int     `json:"xruns"`
	XrunMSTotal   float64 `json:"xrun_ms_total"`
	// PointerJumps counts wakeups at which the hardware pointer had lost
	// whole buffers against the clock fitted to it without the kernel
	// reporting an xrun (rundata.FlagPointerJump): not xruns.
	PointerJumps int     `json:"pointer_jumps,omitempty"`
	CPULoop      CPULoop `json:"cpu_loop"`
	// Lost counts periods the engine measured but could not hand over
	// (its ring was full); they are in the figures of no statistic.
	Lost int64 `json:"lost,omitempty"`
	// Overflow counts latencies beyond the histogram's range; they are in
	// Max and in every percentile they reach.
	Overflow uint64 `json:"histogram_overflow,omitempty"`

	SamplesFile   string         `json:"samples_file,omitempty"` // relative to the results directory
	StressorStats map[string]any `json:"stressor_stats,omitempty"`
}

// LatencyStats is a phase's wakeup-latency distribution, in µs.
type LatencyStats struct {
	Min   float64 `json:"min"`
	Avg   float64 `json:"avg"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	P9999 float64 `json:"p9999"`
	Max   float64 `json:"max"`
}

// CPULoop summarises the simulated DSP work of a phase.
type CPULoop struct {
	NominalUS      float64 `json:"nominal_us"`
	MaxUS          float64 `json:"max_us"`
	Within100USPct float64 `json:"within_100us_pct"`
}

// Finding is one result of the system check.
type Finding struct {
	Name   string `json:"name"`
	Status string `json:"status"` // "OK", "WARN" or "INFO" (could not be read)
	Value  string `json:"value"`
	Why    string `json:"why,omitempty"`
	Fix    string `json:"fix,omitempty"`
}

// WriteRun writes run.json into dir atomically: a reader never sees half a
// document, and an interrupted write leaves the previous one.
func WriteRun(dir string, r *Run) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode run.json: %w", err)
	}
	return WriteFileAtomic(filepath.Join(dir, RunFile), append(b, '\n'))
}

// ReadRun reads dir/run.json.
func ReadRun(dir string) (*Run, error) {
	b, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		return nil, err
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, RunFile), err)
	}
	if r.Schema > SchemaVersion {
		return nil, fmt.Errorf("%s: schema %d is newer than this latencytest reads (%d)", filepath.Join(dir, RunFile), r.Schema, SchemaVersion)
	}
	return &r, nil
}

// WriteFileAtomic writes data to a temporary file beside path and renames it
// into place, removing the temporary file on any failure.
func WriteFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
