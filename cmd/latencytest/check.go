package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"latencytest/check"
	"latencytest/rundata"
)

// checkMain prints this machine's real-time configuration, one finding a
// line; a warning is followed by why it matters and its fix. It exits 0
// whatever it finds: the findings are advice, not a failure.
func checkMain(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("check", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	verbose := fset.Bool("v", false, "")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "Usage: latencytest check [-v]\n\nChecks this machine's real-time configuration. -v also explains the findings that are OK.")
			return 0
		}
		fmt.Fprintf(stderr, "latencytest check: %v; the only flag is -v\n", err)
		return 2
	}
	if fset.NArg() > 0 {
		fmt.Fprintf(stderr, "latencytest check: unexpected argument %q; the only flag is -v\n", fset.Arg(0))
		return 2
	}
	writeFindings(stdout, check.Run(), *verbose)
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
