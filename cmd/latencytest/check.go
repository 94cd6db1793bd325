package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"latencytest/check"
	"latencytest/internal/held"
	"latencytest/ktrace"
	"latencytest/rundata"
)

// checkDoc is check's help besides its flags.
func checkDoc() cmdDoc {
	return cmdDoc{
		synopsis: []string{"latencytest check [-v] [--prio N] [--affinity LIST]", "latencytest check --restore"},
		about: `Checks this machine's real-time configuration and lists its real-time
threads, flagging ('!') those that can run before an audio thread at
--prio on the CPUs of --affinity.`,
		examples: []string{"latencytest check", "latencytest check -v --prio 90 --affinity 2", "latencytest check --restore"},
	}
}

// checkSettings are what check's flags set, once its flag set is parsed.
type checkSettings struct {
	verbose, restore bool
	prio             int
	affinity         string
}

// checkFlagSet defines check's flags: the one definition its parsing,
// its -h, its man page and its completion are made from.
func checkFlagSet() (*flag.FlagSet, *checkSettings) {
	fset := flag.NewFlagSet("check", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	s := &checkSettings{}
	fset.BoolVar(&s.verbose, "v", false, "also explain the findings that are OK")
	fset.IntVar(&s.prio, "prio", 80, "the audio thread's SCHED_FIFO priority `N`: 1-99, or 0 for SCHED_OTHER")
	fset.StringVar(&s.affinity, "affinity", "", "the CPUs it runs on, a `LIST` such as 1 or 0,2-3 (default: all)")
	fset.BoolVar(&s.restore, "restore", false, "only put back what runs killed while they held it left changed (as root): the "+
		"kernel settings recorded in "+held.Dir+" whose holders are all gone, the trace instances of runs that are gone")
	return fset, s
}

// checkMain prints this machine's real-time configuration, one finding a
// line; a warning is followed by why it matters and its fix; then the
// real-time threads. It exits 0 whatever it finds: the findings are
// advice, not a failure.
func checkMain(args []string, stdout, stderr io.Writer) int {
	fset, s := checkFlagSet()
	verbose, prio, affinity, restore := &s.verbose, &s.prio, &s.affinity, &s.restore
	const allowed = "allowed: -v, --prio N, --affinity LIST, --restore"
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeHelp(stdout, checkDoc(), fset)
			return 0
		}
		fmt.Fprintf(stderr, "latencytest check: %v; %s\n", err, allowed)
		return 2
	}
	if fset.NArg() > 0 {
		fmt.Fprintf(stderr, "latencytest check: unexpected argument %q; %s\n", fset.Arg(0), allowed)
		return 2
	}
	if *prio < 0 || *prio > 99 {
		fmt.Fprintf(stderr, "latencytest check: --prio %d: allowed 0 (SCHED_OTHER) or 1 to 99 (SCHED_FIFO)\n", *prio)
		return 2
	}
	if *restore {
		return restoreMain(stdout, stderr)
	}
	cpus, err := parseCPUList(*affinity)
	if err != nil {
		fmt.Fprintf(stderr, "latencytest check: %v\n", err)
		return 2
	}
	o := check.Options{Prio: *prio, CPUs: cpus}
	fs, ts := check.Audit(o) // one walk of /proc for both
	writeFindings(stdout, fs, *verbose)
	writeRTTasks(stdout, ts)
	return 0
}

// restoreMain is check --restore: it puts back the settings whose
// holders are all gone and removes the trace instances of runs that are
// gone, one line each, and says which settings are still held.
func restoreMain(stdout, stderr io.Writer) int {
	store, err := held.OpenKernel()
	var rs []held.Recovered
	if err == nil {
		rs, err = store.Recover()
	}
	for _, r := range rs {
		if r.Put == nil {
			fmt.Fprintf(stdout, "%s: held by a running latencytest (pid %d): left to it\n", r.Name, r.By)
			continue
		}
		var ws []string
		for _, w := range r.Put {
			ws = append(ws, w.Path+" "+strings.TrimSpace(w.Value))
		}
		fmt.Fprintf(stdout, "%s: put back (%s)\n", r.Name, strings.Join(ws, ", "))
	}
	var insts []string
	var ierr error
	if store != nil {
		insts, ierr = ktrace.RemoveStale(store)
	}
	for _, n := range insts {
		fmt.Fprintf(stdout, "trace instance %s: removed (its run is gone)\n", n)
	}
	if err = errors.Join(err, ierr); err != nil {
		fmt.Fprintf(stderr, "latencytest check --restore: %v\n", err)
		return 1
	}
	if len(rs)+len(insts) == 0 {
		fmt.Fprintln(stdout, "nothing to put back")
	}
	return 0
}

func writeFindings(w io.Writer, fs []rundata.Finding, verbose bool) {
	count := map[string]int{}
	for _, f := range fs {
		count[f.Status]++
		fmt.Fprintf(w, "%-4s  %-30s %s\n", f.Status, f.Name, f.Value)
		if f.Status == check.OK && !verbose {
			continue
		}
		if f.Why != "" {
			fmt.Fprintf(w, "      why: %s\n", f.Why)
		}
		if f.Fix != "" && f.Status != check.OK {
			fmt.Fprintf(w, "      fix: %s\n", f.Fix)
		}
	}
	fmt.Fprintf(w, "%d OK, %d WARN, %d INFO\n", count[check.OK], count[check.WARN], count[check.INFO])
}

// writeRTTasks lists the real-time threads, '!' marking those that can run
// before the audio thread.
func writeRTTasks(w io.Writer, ts []rundata.RTTask) {
	fmt.Fprintf(w, "\nreal-time threads (%d; ! can run before the audio thread):\n", len(ts))
	fmt.Fprintf(w, "  %7s %7s  %-14s %4s  %-10s %s\n", "TID", "PID", "POLICY", "PRIO", "CPUS", "COMMAND")
	for _, t := range ts {
		mark := " "
		if t.Preempts {
			mark = "!"
		}
		var tags []string
		if t.Kernel {
			tags = append(tags, "kernel")
		}
		if t.SoundIRQ {
			tags = append(tags, "soundcard IRQ")
		}
		tag := ""
		if len(tags) > 0 {
			tag = " [" + strings.Join(tags, ", ") + "]"
		}
		fmt.Fprintf(w, "%s %7d %7d  %-14s %4d  %-10s %s%s\n", mark, t.TID, t.PID, t.Policy, t.Priority, t.CPUs, t.Comm, tag)
	}
}
