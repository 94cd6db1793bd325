package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"latencytest/internal/badinput"
	"latencytest/report"
)

const compareUsage = `Usage: latencytest compare A B ... [-o compare.html] [-phase NAME]

Puts several runs side by side: per phase, overlaid histograms and one table
with the best value of each row marked. A, B, ... are results directories or
cyclictest files (its --histfile text or its --json output).

  -o FILE       where to write the page (default compare.html)
  -phase NAME   the phase cyclictest files are compared in (default cyclictest),
                e.g. -phase idle to put them beside latencytest's idle phase`

// compareMain accepts its flags before, between or after the inputs, since
// "compare A B -o out.html" is how people type it.
func compareMain(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("compare", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	out := fset.String("o", "compare.html", "")
	phase := fset.String("phase", report.DefaultCyclictestPhase, "")
	var paths []string
	for rest := args; ; {
		if err := fset.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintln(stdout, compareUsage)
				return 0
			}
			fmt.Fprintf(stderr, "latencytest compare: %v; flags are -o FILE and -phase NAME\n", err)
			return 2
		}
		rest = fset.Args()
		if len(rest) == 0 {
			break
		}
		paths = append(paths, rest[0])
		rest = rest[1:]
	}
	if *out == "" || *phase == "" {
		fmt.Fprintln(stderr, "latencytest compare: -o and -phase must not be empty")
		return 2
	}
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "latencytest compare: nothing to compare: give at least one results directory or cyclictest file")
		return 2
	}
	ins := make([]report.Input, len(paths))
	for i, p := range paths {
		ins[i] = report.Input{Path: p, Phase: *phase}
	}
	interrupted, err := uninterrupted(func() error { return report.CompareInputs(ins, *out) })
	if err != nil {
		fmt.Fprintf(stderr, "latencytest compare: %v\n", err)
		if badinput.Is(err) {
			return 2
		}
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	if interrupted {
		return 130
	}
	return 0
}
