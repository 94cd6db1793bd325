// Package check inspects this machine's real-time configuration: the
// limits, kernel options and device settings that decide whether an audio
// thread can wake up in time. Each check says OK or WARN with why it matters
// and a one-line fix; a fact that cannot be read is reported as INFO saying
// so, never guessed.
//
// Checks only read (files under /proc and /sys, resource limits, access
// permissions), need no root to not fail, and finish well under a second.
// Each lives in a file of its own and parses file contents with a function
// of its own, so fixtures test the parsing.
package check

import (
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"latencytest/internal/procfile"
	"latencytest/rundata"
	"latencytest/sysinfo"
)

// Statuses of a finding.
const (
	OK   = "OK"
	WARN = "WARN"
	INFO = "INFO"
)

// env is what the checks read: the file system from / (a fixture in
// tests) and the few facts that come from system calls.
type env struct {
	fsys     fs.FS // rooted at /; paths without the leading slash
	rtprio   limit
	memlock  limit
	diskDir  string // where the disk phases write: the current directory, absolute
	sys      rundata.System
	writable func(path string) bool // may this process open path for writing?
	// The audio thread the checks judge against: its SCHED_FIFO priority
	// (0: SCHED_OTHER) and CPUs (nil: every CPU).
	audioPrio int
	cpus      []int
	// tasks is the real-time task list for audioPrio and cpus, once
	// walked (rtTasks).
	tasks []rundata.RTTask
	// config is the kernel's configuration and where it was read, once
	// read (kernelConfig): three checks consult it.
	config *configFile
	// sound is the soundcard's interrupts and their threads, once read
	// (soundIRQ): the IRQ check and the sound server's consult them.
	sound *soundIRQs
}

// Options name the audio thread the checks judge the machine for.
type Options struct {
	Prio int   // its SCHED_FIFO priority; 0: SCHED_OTHER
	CPUs []int // the CPUs it may run on; nil: every CPU
}

// limit is a resource limit's soft value; unlimited is RLIM_INFINITY.
type limit struct {
	cur       uint64
	unlimited bool
	err       error
}

// checker is one check; it returns one finding, or several for checks that
// cover more than one fact.
type checker func(e *env) []rundata.Finding

// checks is the fixed list of checks, in the order they are reported.
var checks = []checker{
	checkRTPrio,
	checkMemlock,
	checkPreempt,
	checkThreadIRQs,
	checkHighRes,
	checkNoHZ,
	checkGovernor,
	checkSMT,
	checkDMALatency,
	checkSoundIRQ,
	checkMitigations,
	checkSwappiness,
	checkTempFS,
	checkRTThrottle,
	checkRTTasks,
	checkSoundServer,
}

// Run inspects this machine's real-time configuration for an audio thread
// at latencytest's default priority on any CPU.
func Run() []rundata.Finding {
	return RunFor(Options{Prio: wantRTPrio})
}

// RunFor inspects this machine's real-time configuration for the audio
// thread o describes.
func RunFor(o Options) []rundata.Finding {
	e := systemEnv()
	e.audioPrio, e.cpus = o.Prio, o.CPUs
	return run(e)
}

// RTTasks lists this machine's real-time threads, highest priority first,
// flagging those that can run instead of the audio thread o describes.
func RTTasks(o Options) []rundata.RTTask {
	e := systemEnv()
	return e.rtTasks(o.Prio, o.CPUs)
}

// Audit is RunFor and RTTasks from one walk of /proc: a run records both
// as it starts, and a walk of every thread is most of the check's cost.
func Audit(o Options) ([]rundata.Finding, []rundata.RTTask) {
	e := systemEnv()
	e.audioPrio, e.cpus = o.Prio, o.CPUs
	fs := run(e)
	return fs, e.rtTasks(o.Prio, o.CPUs)
}

func run(e *env) []rundata.Finding {
	var out []rundata.Finding
	for _, c := range checks {
		out = append(out, c(e)...)
	}
	return out
}

func systemEnv() *env {
	return &env{
		fsys:    procfile.Dir("/"),
		rtprio:  getLimit(unix.RLIMIT_RTPRIO),
		memlock: getLimit(unix.RLIMIT_MEMLOCK),
		diskDir: currentDir(),
		sys:     sysinfo.Read(),
		writable: func(path string) bool {
			return unix.Access(path, unix.W_OK) == nil
		},
	}
}

// currentDir is the directory run starts in, where its disk phases write
// by default; "." when it cannot tell.
func currentDir() string {
	d, err := os.Getwd()
	if err != nil {
		return "."
	}
	return d
}

func getLimit(res int) limit {
	var r unix.Rlimit
	if err := unix.Getrlimit(res, &r); err != nil {
		return limit{err: err}
	}
	return limit{cur: r.Cur, unlimited: r.Cur == unix.RLIM_INFINITY}
}

// read returns the contents of an absolute path in e's file system.
func (e *env) read(path string) (string, error) {
	b, err := fs.ReadFile(e.fsys, strings.TrimPrefix(path, "/"))
	return string(b), err
}

// glob returns the absolute paths matching pattern.
func (e *env) glob(pattern string) []string {
	ms, _ := fs.Glob(e.fsys, strings.TrimPrefix(pattern, "/"))
	for i := range ms {
		ms[i] = "/" + ms[i]
	}
	return ms
}

// threads returns every thread's /proc/PID/task/TID directory. It reads
// only the directories it needs: fs.Glob of /proc/[0-9]*/task/[0-9]* lists
// each /proc/PID as well to find its task entry, and the kernel makes a
// directory entry for each of the fifty-odd files there (a third of the
// check's CPU time).
func (e *env) threads() []string {
	procs, _ := fs.ReadDir(e.fsys, "proc")
	var out []string
	for _, p := range procs {
		if !allDigits(p.Name()) {
			continue
		}
		dir := "proc/" + p.Name() + "/task"
		ts, _ := fs.ReadDir(e.fsys, dir)
		for _, t := range ts {
			if allDigits(t.Name()) {
				out = append(out, "/"+dir+"/"+t.Name())
			}
		}
	}
	return out
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// cmdlineHas reports whether the kernel command line holds word, alone or
// as word=value.
func cmdlineHas(cmdline, word string) (value string, ok bool) {
	for _, f := range strings.Fields(cmdline) {
		if f == word {
			return "", true
		}
		if v, found := strings.CutPrefix(f, word+"="); found {
			return v, true
		}
	}
	return "", false
}

func finding(name, status, value, why, fix string) rundata.Finding {
	return rundata.Finding{Name: name, Status: status, Value: value, Why: why, Fix: fix}
}

func statFS(e *env, path string) (fs.FileInfo, error) {
	return fs.Stat(e.fsys, strings.TrimPrefix(path, "/"))
}
