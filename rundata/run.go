package rundata

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"latencytest/internal/atomicfile"
)

// SchemaVersion is the version of run.json and of the samples files. It
// changes when a reader written for the old version would misread the new.
const SchemaVersion = 1

// RunFile is the name of the run document inside a results directory.
const RunFile = "run.json"

// Run is run.json: everything about one invocation of `latencytest run`.
type Run struct {
	Schema  int      `json:"schema"`
	Tool    string   `json:"tool_version"`
	Command []string `json:"command"`
	// Label names the run where it is compared (run --label, e.g. "with
	// patch"); compare's default label for it.
	Label       string    `json:"label,omitempty"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	Interrupted bool      `json:"interrupted"`
	// Incomplete is true from the first write of run.json until the run
	// writes its end: a run.json that still says so belongs to a run that
	// was killed (or whose machine stopped) before it could finish.
	Incomplete bool `json:"incomplete,omitempty"`

	System System `json:"system"`

	Driver string `json:"driver"`
	Device string `json:"device"`
	Stream string `json:"stream,omitempty"`
	Format string `json:"format,omitempty"`
	Access string `json:"access,omitempty"` // ALSA: mmap or rw
	// Card is the sound card an ALSA run opened (nil for the other
	// drivers): what a reader needs to know which hardware and driver the
	// figures are of.
	Card *Card `json:"card,omitempty"`
	// CaptureCard, CaptureChannels and CaptureFormat are a duplex
	// stream's capture side (ALSA), which may be another card
	// (--capture-device) and take other channels and another format than
	// the playback's (Card, Channels, Format): an interface with 2
	// inputs and 4 outputs. Absent for one side, and in files before
	// 6 Dec 2026, whose duplex sides had one shape.
	CaptureCard     *Card   `json:"capture_card,omitempty"`
	CaptureChannels int     `json:"capture_channels,omitempty"`
	CaptureFormat   string  `json:"capture_format,omitempty"`
	Rate            int     `json:"rate"`
	Channels        int     `json:"channels"`
	PeriodFrames    int     `json:"period_frames"`
	Periods         int     `json:"periods"`
	PeriodUS        float64 `json:"period_us"`
	BufferUS        float64 `json:"buffer_us"`
	CPULoad         int     `json:"cpu_load"`
	// Repeat is how many times the list of phases ran (run --repeat);
	// 0 when once.
	Repeat int `json:"repeat,omitempty"`
	// Loops is run --loops: each phase ended after this many periods (as
	// cyclictest -l), or at its duration if that came first; 0: none.
	Loops int64 `json:"loops,omitempty"`
	// BreakAboveNS is run --break-above: the run ended at the first
	// wakeup later than this (as cyclictest -b), the phase that had it
	// saying where (Phase.Break); 0: none.
	BreakAboveNS int64    `json:"break_above_ns,omitempty"`
	Simulated    bool     `json:"xruns_simulated"` // the driver has no hardware buffer; xruns come from a virtual one
	DriverNotes  []string `json:"driver_notes,omitempty"`

	RT RTSetup `json:"rt"`
	// CPUs is run --cpus: the CPUs measured at once, a thread pinned to
	// each (each phase's CPUs has each thread's set-up and figures).
	// Absent for a run of one thread.
	CPUs []int `json:"cpus,omitempty"`
	// OwnCPUs is where latencytest's own work ran (its parent process,
	// the engine's threads but the audio thread, the tracer's reader):
	// the CPUs it may use less the audio thread's (rt.affinity), so that
	// none of it runs where the audio thread waits. Empty when the audio
	// thread was not pinned, or no other CPU was allowed. The stressors
	// ran anywhere (the load is what is measured against).
	OwnCPUs []int `json:"own_cpus,omitempty"`
	// RTBudget says whether run --lift-rt-budget lifted the kernel's
	// real-time budget for the run, and what it was.
	RTBudget *RTBudget `json:"rt_budget,omitempty"`

	Phases []Phase `json:"phases"`

	// Checks holds the findings of `latencytest check` made at the start.
	Checks []Finding `json:"checks,omitempty"`
	// RTTasks is the real-time task audit made at the start: every
	// SCHED_FIFO/RR/DEADLINE thread, flagged where it can run before the
	// audio thread.
	RTTasks []RTTask `json:"rt_tasks,omitempty"`
	// Trace says whether the causes of spikes were recorded (run --trace;
	// the spikes are in spikes.json).
	Trace *Trace `json:"trace,omitempty"`
}

// Break is the wakeup later than run --break-above that ended a run, as
// cyclictest -b reports its break value.
type Break struct {
	Period    int64 `json:"period"`     // its index in the phase
	LatencyNS int64 `json:"latency_ns"` // woke − due
}

// Broke reports whether a phase of the run ended at a wakeup later than
// run --break-above, which ends the run (and a --period list's).
func (r *Run) Broke() bool {
	for i := range r.Phases {
		if r.Phases[i].Break != nil {
			return true
		}
	}
	return false
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
	// Context is what besides the kernel changes the figures.
	Context Context `json:"context"`
}

// Context is what, besides the kernel and its configuration, changes a
// machine's latency figures, as the run found it.
type Context struct {
	UptimeS float64 `json:"uptime_s,omitempty"`
	// Tainted is /proc/sys/kernel/tainted, TaintFlags its letters (P: a
	// proprietary module, O: an out-of-tree one, E: unsigned, …).
	Tainted    uint64 `json:"tainted,omitempty"`
	TaintFlags string `json:"taint_flags,omitempty"`
	// Governors are the CPUs' cpufreq governors (powersave lets a CPU
	// sleep deep and wake slowly); none without cpufreq.
	Governors []string `json:"governors,omitempty"`
	// Virtual names the hypervisor's machine ("QEMU Standard PC …") when
	// the CPU reports one: then a wakeup can wait for the host, and each
	// phase's steal time says how much.
	Virtual string `json:"virtual,omitempty"`
}

// Card names a sound card as the kernel knows it, and what its driver
// said of the stream.
type Card struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`                  // /proc/asound/cardN/id
	Driver   string `json:"driver"`              // ALSA's name of the card's driver, e.g. "HDA-Intel", "USB-Audio"
	Name     string `json:"name"`                //
	LongName string `json:"long_name,omitempty"` // e.g. "HDA Intel at 0xfebf0000 irq 11"
	Module   string `json:"module,omitempty"`    // the kernel module bound to the card's device, e.g. "snd_hda_intel"
	Bus      string `json:"bus,omitempty"`       // the card's device: "pci 0000:00:04.0", "usb 1-1:1.0"
	// Controller is, for a card behind a bus of its own (USB), the
	// host controller its transfers go through: "xhci_hcd 0000:00:05.0".
	Controller string `json:"controller,omitempty"`
	// IRQs are the /proc/interrupts lines of the interrupts the card (or
	// its controller) raises, as they stood when the stream opened.
	IRQs []string `json:"irqs,omitempty"`
	// Flags are the SNDRV_PCM_INFO_* flags the driver set for the
	// stream (asound.h's names without the prefix): how its pointer
	// moves (BATCH, BLOCK_TRANSFER), what it needs of the application
	// (SYNC_APPLPTR) and which audio timestamps it offers (HAS_LINK_*).
	Flags []string `json:"flags"`
	// Timestamp says what dated the run's periods: the grid fitted to the
	// card's pointer updates, for how many of them, and the update's own
	// timestamp for the rest (CardTimestamp), as the run ended.
	Timestamp string `json:"timestamp,omitempty"`
}

// CardTimestamp says what dated r's periods (Card.Timestamp): their end on
// the card's clock, a grid fitted to its pointer updates' kernel
// timestamps, for the periods of every phase that had one
// (Phase.OnCardClock), and the pointer update's own kernel timestamp for
// the others (after a restart, before a fit, a card too far off its rate,
// duplex); and, where the card's link clock was read beside them
// (Phase.LinkBeforeDue), for how many periods, since it dated none. ""
// without periods.
func (r *Run) CardTimestamp() string {
	var on, all, link int64
	for _, ph := range r.Phases {
		on += ph.OnCardClock
		all += ph.Periods
		if ph.LinkBeforeDue != nil {
			link += ph.LinkBeforeDue.Periods
		}
	}
	var s string
	switch {
	case all == 0:
		return ""
	case on == all:
		s = fmt.Sprintf("the card's clock for all %d periods: each period's end on a grid fitted to the kernel's timestamps of its pointer updates", all)
	case on == 0:
		s = fmt.Sprintf("the pointer update for all %d periods: the kernel's timestamp of the update that reported each (no grid: after restarts, before a fit, a card too far off its rate, or duplex)", all)
	default:
		s = fmt.Sprintf("the card's clock for %d of %d periods (each period's end on a grid fitted to the kernel's timestamps of its pointer updates); the pointer update's own timestamp for the other %d (after a restart or an xrun, before a fit)", on, all, all-on)
	}
	if link > 0 {
		s += fmt.Sprintf("; the card's link clock (its audio timestamp) read beside them for %d periods, dating none: the phases' link_before_due_ns", link)
	}
	return s
}

// RTSetup records the real-time setup that was asked for and what the
// kernel granted, so a figure is never read without knowing its conditions.
type RTSetup struct {
	Asked    RTParams `json:"asked"`
	Obtained RTParams `json:"obtained"`
	// Refused lists, one line each, the steps that were not obtained and why.
	Refused []string `json:"refused,omitempty"`
}

// RTBudget is run --lift-rt-budget's record.
type RTBudget struct {
	Lifted bool   `json:"lifted"`
	Was    string `json:"was,omitempty"`  // sched_rt_runtime_us before the run, put back after it
	Note   string `json:"note,omitempty"` // why it was not lifted
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
	Name string `json:"name"`
	// Repeat is the repetition the phase belongs to, from 1, when the
	// run repeated its phases (Run.Repeat); 0 otherwise.
	Repeat   int    `json:"repeat,omitempty"`
	Stressor string `json:"stressor,omitempty"`
	// Skipped says why the phase did not run; the other fields are then zero.
	Skipped string `json:"skipped,omitempty"`
	// Incomplete marks a phase that started but whose end was never
	// written (the run was killed): its figures are zero in run.json and
	// readers recover them from the samples file (Accumulator).
	Incomplete bool `json:"incomplete,omitempty"`
	// CutShort marks a phase the run stopped before its duration (Ctrl-C,
	// SIGTERM): its figures are of the time it ran, and it did not hold.
	CutShort bool `json:"cut_short,omitempty"`
	// Break is the wakeup that ended the run under run --break-above:
	// this phase's last period (absent otherwise).
	Break *Break `json:"break,omitempty"`
	// LoadAvg is the one-minute load average as the phase started, and
	// StealPct the share of the CPUs' time the hypervisor gave to others
	// during it (a virtual machine's; 0 on bare metal).
	LoadAvg  float64 `json:"load_avg,omitempty"`
	StealPct float64 `json:"steal_pct,omitempty"`

	StartMonoNS int64     `json:"start_mono_ns"`
	EndMonoNS   int64     `json:"end_mono_ns"`
	StartWall   time.Time `json:"start_wall"`
	EndWall     time.Time `json:"end_wall"`

	Periods     int64        `json:"periods"`
	Latency     LatencyStats `json:"latency_us"`
	WithinUS100 float64      `json:"wakeups_within_100us_pct"`
	WithinMS1   float64      `json:"wakeups_within_1ms_pct"`
	// UpdateDelay and AfterUpdate split Latency where it runs from the
	// period's end on the card's clock (Sample.UpdateSplit; ALSA): from
	// that end to the pointer update that reported it (the interrupt's
	// delay), and from the update to the wakeup (what the latency was
	// before the card's clock was its start). A phase recovered from its
	// samples file has neither (the file keeps the period's end only).
	UpdateDelay *LatencyStats `json:"update_delay_us,omitempty"`
	AfterUpdate *LatencyStats `json:"after_update_us,omitempty"`
	// OnCardClock counts the periods whose latency ran from their end on
	// the card's clock (those UpdateDelay splits); the others ran from
	// their pointer update (Card.Timestamp).
	OnCardClock int64 `json:"periods_on_card_clock,omitempty"`
	// LinkBeforeDue is, where the card offers a link timestamp (HD-Audio's
	// wall clock: HAS_LINK_ATIME) and the driver read it, how long before
	// the instant that dated each period (its grid point, else its pointer
	// update) the card's link clock says it ended, in ns: the link clock
	// beside the grid (Sample.LinkBefore). It dates no period. Absent
	// without a link timestamp, in duplex, and when recovered from the
	// samples file (which does not keep it).
	LinkBeforeDue *LinkStats `json:"link_before_due_ns,omitempty"`
	// For a duplex stream (SideStats): the wakeup latency against each
	// side's own due instant (Latency is against the later side's, since
	// the period is there only when both are), and the distribution of
	// capture due − playback due (negative: capture first). A card may
	// raise separate capture and playback interrupts, and the wakeup
	// after each is its own distribution. Absent when not duplex.
	PlaybackLatency      *LatencyStats `json:"playback_latency_us,omitempty"`
	CaptureLatency       *LatencyStats `json:"capture_latency_us,omitempty"`
	CapturePlaybackApart *LatencyStats `json:"capture_playback_apart_us,omitempty"`
	// PollWait is how long each period waited in poll (the time jackd
	// spends in poll, as jack-test measured it), for drivers that poll
	// (ALSA); absent for the others.
	PollWait *LatencyStats `json:"poll_wait_us,omitempty"`
	// HeadroomMinUS is the least audio still queued at any wakeup: how
	// close the phase came to an xrun without having one.
	HeadroomMinUS float64 `json:"headroom_min_us"`
	Xruns         int     `json:"xruns"`
	XrunMSTotal   float64 `json:"xrun_ms_total"`
	// XrunsWorkLate counts the xruns whose period's wakeup came within
	// the period but whose write, after the DSP work, came past the
	// buffer's deadline (Sample.WorkLate): the thread woke in time and its
	// work was held up, which the worst wakeup alone does not show.
	XrunsWorkLate int `json:"xruns_work_late,omitempty"`
	// PointerJumps counts wakeups at which the hardware pointer had lost
	// whole buffers against the clock fitted to it without the kernel
	// reporting an xrun (rundata.FlagPointerJump): not xruns.
	PointerJumps int `json:"pointer_jumps,omitempty"`
	// ClockHz is the card's frame rate measured on the system clock
	// (CLOCK_MONOTONIC) over the phase's longest stretch without an xrun
	// or a pointer jump, of 1 s or more (absent without one): a card
	// whose crystal runs slow or fast plays its periods longer or
	// shorter than the nominal rate says (ClockOff).
	ClockHz float64 `json:"clock_hz,omitempty"`
	// CaughtUp counts periods that were already due when the period
	// before them woke: after a stall the loop writes every period the
	// buffer needs, each late, where cyclictest skips the deadlines that
	// passed and measures one wakeup. The maximum is the same; counts
	// and percentiles differ by these.
	CaughtUp int64 `json:"caught_up,omitempty"`
	// RTThrottled counts the spikes the tracer found RT throttling in
	// (CauseThrottled: the real-time budget used up, the audio thread
	// stopped by the kernel), and RTThrottledNS the time it took from
	// them; only with run --trace.
	RTThrottled   int     `json:"rt_throttled,omitempty"`
	RTThrottledNS int64   `json:"rt_throttled_ns,omitempty"`
	CPULoop       CPULoop `json:"cpu_loop"`
	// Safe is the buffer verdict: the smallest number of periods at this
	// period size in which every period would have been written in time
	// (wakeup latency plus the DSP work measured), with its margin;
	// SafeAtDefaultLoad the same with the default 80 % DSP load in place
	// of the measured one. An estimate for buffers other than the one
	// measured (docs/method.md, "The buffer verdict").
	Safe              *Safe `json:"safe,omitempty"`
	SafeAtDefaultLoad *Safe `json:"safe_at_default_load,omitempty"`
	// Lost counts periods the engine measured but could not hand over
	// (its ring was full); they are in the figures of no statistic.
	Lost int64 `json:"lost,omitempty"`
	// Server is the sound server's account of the phase's late cycles,
	// when it ran through one (--driver jack; Server).
	Server *Server `json:"server,omitempty"`
	// Overflow counts latencies beyond the histogram's range (≥ 100 ms);
	// they are in Max, and a percentile whose rank falls among them reads
	// the range's edge (see LatencyStats). Underflow counts those below
	// −100 ms; they are in Min.
	Overflow  uint64 `json:"histogram_overflow,omitempty"`
	Underflow uint64 `json:"histogram_underflow,omitempty"`

	// CardReported is the delay the card's driver reports beyond the
	// buffer, at the phase's end (ALSA; absent when the stream had
	// stopped). Beside Sound.CardDelay it says how much of the path the
	// sound took the drivers account for.
	CardReported *ReportedDelay `json:"card_reported_delay,omitempty"`

	SamplesFile   string         `json:"samples_file,omitempty"` // relative to the results directory
	StressorStats map[string]any `json:"stressor_stats,omitempty"`

	// Sound is what a loopback run heard (run --loopback): the round
	// trips and the glitches in the captured sine (docs/method.md, "The
	// sound").
	Sound *Sound `json:"sound,omitempty"`

	// CPUs are, under run --cpus, each CPU's measuring thread and its
	// figures, in the order asked; the phase's own figures are then of
	// every CPU's periods together (FromCPUs), and its samples are
	// in each CPU's file, none in the phase's. Absent otherwise.
	CPUs []CPUPhase `json:"cpus,omitempty"`
}

// CPUPhase is one CPU's measuring thread in a phase of run --cpus: the
// thread as set up (its policy, priority and affinity read back from the
// kernel once it ran there) and the same figures a phase of one thread
// has, of its periods alone, with its own samples file.
type CPUPhase struct {
	CPU int     `json:"cpu"`
	TID int     `json:"tid,omitempty"`
	RT  RTSetup `json:"rt"`
	// ActUS is the thread's last wakeup latency, cyclictest's Act.
	ActUS float64 `json:"act_us"`
	Phase
}

// Sound is one phase's capture through a loopback, analysed: the MLS of
// its second channel read for the round trip at each repetition, the sine
// of its first channel searched for glitches.
type Sound struct {
	CaptureFile string  `json:"capture_file"`   // the capture, a WAV file relative to the results directory
	Rate        int     `json:"rate,omitempty"` // the capture's frames per second
	ToneHz      float64 `json:"tone_hz"`
	// CardDelay is the capture's lag behind the playback in stream
	// frames (the path outside the application's buffers: the card's own
	// delay, or snd-aloop's), over the repetitions read before the sound
	// first broke (RoundTripsBeforeBreak; over all of them when none was):
	// an xrun's restart puts its own offset between the sides. RoundTrips
	// counts the repetitions read and RoundTripsMissing those the MLS was
	// not found in.
	CardDelay             *FrameStats `json:"card_delay_frames,omitempty"`
	RoundTrips            int         `json:"round_trips"`
	RoundTripsBeforeBreak int         `json:"round_trips_before_break"`
	RoundTripsMissing     int         `json:"round_trips_missing"`
	// BufferFrames is the playback buffer a written frame waits behind
	// (periods × period); RoundTripMS is from the application's write of
	// a frame to its read of it: the buffer plus the median card delay,
	// to within a period (a captured frame waits for its period's end).
	BufferFrames int     `json:"buffer_frames"`
	RoundTripMS  float64 `json:"round_trip_ms,omitempty"`
	// RoundTripFollowed is the round trip over the whole phase: every
	// repetition read (RoundTripsFollowed of them: those across a restart's
	// seam are not), the offset each xrun's restart put between the sides
	// taken off (docs/method.md, "The sound"), so that one that grows
	// under load shows. RoundTripPerSecond is its median in each second
	// of the phase, from the first period; null where none was read.
	RoundTripFollowed  *MSStats  `json:"round_trip_followed_ms,omitempty"`
	RoundTripsFollowed int       `json:"round_trips_followed"`
	RoundTripPerSecond PerSecond `json:"round_trip_ms_per_second,omitempty"`
	// Glitches are the stretches where the captured sine broke, in
	// capture order; Judged says whether the sine could be judged at all
	// and, when not, Note says why.
	Glitches []Glitch `json:"glitches"`
	Judged   bool     `json:"judged"`
	Note     string   `json:"note,omitempty"`
	// The glitches lined up with the xruns (CaptureMap.LineUp): the
	// xruns whose seam in the capture broke the sine and those it did
	// not break, and the glitches that came with neither an xrun nor a
	// pointer jump, the breaks nothing else reported. An xrun before the
	// first period of capture kept (the stream's start) left no seam and
	// is in neither count.
	XrunsHeard    int `json:"xruns_heard"`
	XrunsNotHeard int `json:"xruns_not_heard"`
	GlitchesAlone int `json:"glitches_alone"`
}

// FrameStats is the spread of a figure counted in frames.
type FrameStats struct {
	Min    int `json:"min"`
	Median int `json:"median"`
	Max    int `json:"max"`
}

// MSStats is the spread of a figure in milliseconds.
type MSStats struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// ReportedDelay is the delay a card's driver reports beyond the buffer,
// per side, in frames: ALSA's runtime->delay (STATUS's delay less the
// frames in the buffer), which a driver sets to the frames between its
// DMA pointer and the converter (a USB card's queued transfers, an HDA
// codec's). It is read from the running stream once the loop is over. A
// driver that reports none reads 0: snd-aloop does, whose own lag is
// real all the same.
type ReportedDelay struct {
	PlaybackFrames int64 `json:"playback_frames"`
	CaptureFrames  int64 `json:"capture_frames"`
}

// Glitch is one break in the captured sine: where (ms from the capture's
// first frame, and the phase's period it fell in: the samples' and the
// spikes' period, an xrun's own for the seam it left) and how long, and
// what came with it: GlitchXrun, GlitchPointerJump or GlitchAlone.
type Glitch struct {
	AtMS     float64 `json:"at_ms"`
	Period   int64   `json:"period"`
	LengthMS float64 `json:"length_ms"`
	With     string  `json:"with"`
	// AtNS is when its first broken frame was captured, on
	// CLOCK_MONOTONIC, the clock of the samples and of the spikes'
	// windows (CaptureMap.At); absent where the samples do not say.
	AtNS int64 `json:"at_ns,omitempty"`
	// Trace is what the kernel's tracer had at the glitch (run --trace;
	// LineUpTrace): the spike window it fell in and its culprit, or why
	// there is none. Absent without --trace.
	Trace *GlitchTrace `json:"trace,omitempty"`
}

// LatencyStats is a phase's wakeup-latency distribution, in µs. Min, Avg
// and Max are exact; a percentile is the nearest-rank value read off 1 µs
// bins (Histogram.Percentile). A percentile ≥ RangeUS fell among the
// values beyond the histogram's range: it means "at least that", the
// bins cannot say how much more (see Beyond).
type LatencyStats struct {
	Min   float64 `json:"min"`
	Avg   float64 `json:"avg"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	P9999 float64 `json:"p9999"`
	Max   float64 `json:"max"`
	// RangeUS is the edge of the histogram the percentiles were read from
	// (100000); 0 in run.json files written before it was recorded.
	RangeUS float64 `json:"range_us,omitempty"`
}

// CPULoop summarises the simulated DSP work of a phase. MinUS is its
// shortest period: an interruption only lengthens a loop, so one that ran
// shorter than the nominal shows a calibration made while the CPU ran
// slower (a VM's emulator, a busy host), and one whose shortest is longer
// shows a CPU that slowed after it (frequency scaling); see Miscalibrated.
type CPULoop struct {
	NominalUS      float64 `json:"nominal_us"`
	MinUS          float64 `json:"min_us"`
	MaxUS          float64 `json:"max_us"`
	Within100USPct float64 `json:"within_100us_pct"`
}

// miscalibration is how far the shortest loop may lie from the nominal
// before the load is said to differ from what was asked: a fifth, well
// beyond the spin loop's own spread on an idle CPU.
const miscalibration = 0.2

// Miscalibrated says whether the loop's shortest period lies more than a
// fifth from the nominal, and their ratio: the load the run put on the
// CPU, as a share of what --cpu-load asked.
func (c CPULoop) Miscalibrated() (ratio float64, off bool) {
	if c.NominalUS <= 0 || c.MinUS <= 0 {
		return 0, false
	}
	ratio = c.MinUS / c.NominalUS
	return ratio, ratio < 1-miscalibration || ratio > 1+miscalibration
}

// FindingSoundIRQCPUs names the check's finding of the CPUs the
// soundcard's interrupts are handled on, which the verdict of run --cpus
// sets beside its best CPU for audio.
const FindingSoundIRQCPUs = "soundcard IRQ CPUs"

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
	b, err := MarshalRun(r)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, RunFile), b)
}

// WriteRunIn is WriteRun for a results directory opened as a root, so
// that no symlink planted in it is followed.
func WriteRunIn(root *os.Root, r *Run) error {
	b, err := MarshalRun(r)
	if err != nil {
		return err
	}
	return atomicfile.WriteIn(root, RunFile, b)
}

// MarshalRun encodes r as run.json's text.
func MarshalRun(r *Run) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode run.json: %w", err)
	}
	return append(b, '\n'), nil
}

// ReadRun reads dir/run.json. Its errors name the file.
func ReadRun(dir string) (*Run, error) {
	path := filepath.Join(dir, RunFile)
	b, err := ReadFileLimited(path, MaxRunFileBytes)
	if err != nil {
		return nil, err
	}
	r, err := parseRun(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// runShape bounds run.json's values before it is decoded (jsonShape):
// MaxPhases phases, and a real run's figures with room to spare (a
// stressor's series is at most 10000 values). Decoding a run.json of
// MaxRunFileBytes then allocates at most about 30 MB, whatever it holds.
func runShape() *jsonShape {
	return &jsonShape{maxValues: 1 << 17, maxArray: 1 << 14, keyArray: map[string]int{"phases": MaxPhases}}
}

// parseRun decodes and checks a run.json document: a newer schema, more
// than MaxPhases phases, or figures no run can produce are refused.
func parseRun(b []byte) (*Run, error) {
	if err := runShape().check(b); err != nil {
		return nil, err
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	if r.Schema > SchemaVersion || r.Schema < 1 {
		return nil, fmt.Errorf("schema %d: this latencytest reads 1 to %d", r.Schema, SchemaVersion)
	}
	if len(r.Phases) > MaxPhases {
		return nil, fmt.Errorf("%d phases: at most %d", len(r.Phases), MaxPhases)
	}
	// The period and buffer scale the figures' axes: up to 10 s.
	for _, v := range []float64{r.PeriodUS, r.BufferUS} {
		if v < 0 || v > 1e7 {
			return nil, fmt.Errorf("period_us %g, buffer_us %g: want 0 to 10 s", r.PeriodUS, r.BufferUS)
		}
	}
	for i := range r.Phases {
		if r.Phases[i].Periods < 0 {
			return nil, fmt.Errorf("phase %d: %d periods", i+1, r.Phases[i].Periods)
		}
	}
	return &r, nil
}
