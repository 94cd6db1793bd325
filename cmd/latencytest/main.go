// Command latencytest measures how late a real-time audio thread wakes up
// on this machine, under which load, and when the sound breaks.
//
// Usage:
//
//	latencytest run [flags]        measure, phase by phase, and render the report
//	latencytest monitor [flags]    measure without end (days), rotating results; Prometheus metrics
//	latencytest report DIR         render DIR/index.html again from DIR/run.json
//	latencytest compare A B ...    put several runs side by side
//	latencytest devices            list the devices the built-in drivers can open
//	latencytest check              check the real-time configuration of this machine
//	latencytest stress NAME        run one load by hand
//	latencytest version            print the version and the built-in drivers
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// command is one subcommand. Its main gets the arguments after the
// subcommand's name and returns the process exit code: 0 success, 1 a
// failure while working, 2 bad input.
type command struct {
	summary string
	main    func(args []string, stdout, stderr io.Writer) int
	hidden  bool
	// doc and flags are a visible command's help and its flag set as its
	// main defines them, for the man pages and the completions; stress,
	// whose flags are each stressor's, has neither (stressPage).
	doc   func() cmdDoc
	flags func() *flag.FlagSet
}

// flagSetOf drops what a flag set's definition returns besides the set.
func flagSetOf[T any](def func() (*flag.FlagSet, T)) func() *flag.FlagSet {
	return func() *flag.FlagSet {
		fs, _ := def()
		return fs
	}
}

func commands() map[string]command {
	return map[string]command{
		"run": {summary: "measure wakeup latency phase by phase and render the report", main: runMain,
			doc: runDoc, flags: flagSetOf(runFlagSet)},
		"monitor": {summary: "measure without end, rotating results directories; Prometheus metrics", main: monitorMain,
			doc: monitorDoc, flags: flagSetOf(monitorFlagSet)},
		"report": {summary: "render DIR/index.html from a results directory", main: reportMain,
			doc: reportDoc, flags: flagSetOf(reportFlagSet)},
		"compare": {summary: "compare several results directories (or cyclictest files) in one page", main: compareMain,
			doc: compareDoc, flags: flagSetOf(compareFlagSet)},
		"devices": {summary: "list the devices the built-in drivers can open", main: devicesMain,
			doc: devicesDoc, flags: flagSetOf(devicesFlagSet)},
		"check": {summary: "check this machine's real-time configuration", main: checkMain,
			doc: checkDoc, flags: flagSetOf(checkFlagSet)},
		"stress": {summary: "run one stressor by hand (see 'latencytest stress -list')", main: stressMain},
		"version": {summary: "print the version and the built-in drivers", main: versionMain,
			doc: versionDoc, flags: versionFlagSet},
		// engineCommand is how `run` starts the period loop in a process of
		// its own; it is not for users.
		engineCommand: {main: engineMain, hidden: true},
		// rtBudgetCommand holds the real-time budget lifted for a run.
		rtBudgetCommand: {main: rtBudgetMain, hidden: true},
		// traceGuardCommand leaves the tracer as a killed run found it.
		traceGuardCommand: {main: traceGuardMain, hidden: true},
		// pwProfileCommand records PipeWire's profiler during a phase.
		pwProfileCommand: {main: pwProfileMain, hidden: true},
		// manCommand and completionCommand write the package's man pages
		// and shell completions from the commands' docs and flag sets, as
		// -h prints them (make dist).
		manCommand:        {main: manMain, hidden: true},
		completionCommand: {main: completionMain, hidden: true},
	}
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		return versionMain(nil, stdout, stderr)
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "latencytest: unknown command %q; allowed: %s\n", args[0], strings.Join(visible(cmds), ", "))
		return 2
	}
	return c.main(args[1:], stdout, stderr)
}

func visible(cmds map[string]command) []string {
	var names []string
	for n, c := range cmds {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintf(w, "latencytest %s — how late does a real-time audio thread wake up on this machine?\n\nUsage: latencytest COMMAND [flags]\n\nCommands:\n", version)
	for _, n := range visible(cmds) {
		fmt.Fprintf(w, "  %-8s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintf(w, "\nDrivers built in: %s\nRun 'latencytest COMMAND -h' for a command's flags.\n", strings.Join(driverNames(), ", "))
}

// versionDoc is version's help; it has no flags.
func versionDoc() cmdDoc {
	return cmdDoc{
		synopsis: []string{"latencytest version"},
		about:    "Prints the version of this binary and the drivers built into it.",
	}
}

// versionFlagSet is version's flag set, which defines none.
func versionFlagSet() *flag.FlagSet { return flag.NewFlagSet("version", flag.ContinueOnError) }

func versionMain(args []string, stdout, stderr io.Writer) int {
	fs := versionFlagSet()
	if code, ok := parseFlags(fs, args, stdout, stderr, versionDoc()); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "latencytest version: unexpected argument %q (no arguments)\n", fs.Arg(0))
		return 2
	}
	fmt.Fprintf(stdout, "latencytest %s\ndrivers: %s\n", version, strings.Join(driverNames(), ", "))
	return 0
}
