package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"latencytest/internal/atomicfile"
	"latencytest/internal/badinput"
	"latencytest/report"
)

// compareDoc is compare's help besides its flags.
func compareDoc() cmdDoc {
	return cmdDoc{
		synopsis: []string{"latencytest compare A B ... [-o compare.html] [-json FILE] [-phase NAME] [-fail-if-worse PCT]"},
		about: `Puts several runs side by side: a ranking of the sources per phase (each
run's max, the median and the worst of them; also printed as a table), then per phase overlaid
histograms and one table of the figures, ★ where the runs decide a best. A, B, ...
are results directories or cyclictest files: its --histfile text, its --json
output, or its terminal output (one or more runs, as captured or pasted into
a mail; a mail's headings, "Before the patch:" and "After the patch:", make a
source each, named by the heading); NAME=PATH names one (default: its base
name), and NAME=PATH,PATH,... or NAME='results/old-*' gives one source
several results directories, each run one of its runs.

Each later source is decided against the first, per phase and figure (p99,
p99.9, each run's max, xruns per minute, xrun time): the ratio B/A with a
95 % interval drawn from the runs (not from the periods: one run's periods
are not independent), and one word: worse, better, no difference larger
than X % (the interval within ±X; X is -fail-if-worse's PCT, else 10 %),
or cannot tell (with the runs that would likely tell). Best, worst and ★
only where the runs decide. One run per source decides nothing: give
run --repeat 5.`,
		examples: []string{
			"latencytest compare generic=results/6.1-generic rt=results/6.1-rt -o compare.html",
			"latencytest compare good='results/v6.6-*' test='results/test-*' -json rank.json --fail-if-worse 10%",
			"latencytest compare results/6.1-rt cyclictest-6.1-rt.txt -phase idle",
		},
	}
}

// compareSettings are what compare's flags set, once its flag set is
// parsed.
type compareSettings struct {
	out, phase, json, worse string
}

// compareFlagSet defines compare's flags: the one definition its
// parsing, its -h, its man page and its completion are made from.
func compareFlagSet() (*flag.FlagSet, *compareSettings) {
	fset := flag.NewFlagSet("compare", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	s := &compareSettings{}
	fset.StringVar(&s.out, "o", "compare.html", "write the page to `FILE`")
	fset.StringVar(&s.json, "json", "", "also write the ranking and every decision as JSON to `FILE`, for scripts (exit status stays 0); "+
		"-json /dev/stdout | jq gets it alone, the table going to stderr")
	fset.StringVar(&s.worse, "fail-if-worse", "", "judge every later source against the first on the figure each phase ranks by "+
		"(p99.9; each run's max where a source has no percentiles), for CI and git bisect run: exit 0 when each is decided "+
		"not worse by more than `PCT` percent (e.g. 10%), 1 when one is decided worse by more, 125 when the runs' spread "+
		"cannot tell (git bisect's skip; also for a source that lost periods: one may have been the late one)")
	fset.StringVar(&s.phase, "phase", report.DefaultCyclictestPhase, "put cyclictest files in the phase `NAME`, "+
		"e.g. -phase idle to compare them with latencytest's idle phase")
	return fset, s
}

// compareMain accepts its flags before, between or after the inputs, since
// "compare A B -o out.html" is how people type it.
func compareMain(args []string, stdout, stderr io.Writer) int {
	fset, s := compareFlagSet()
	out, phase, jsonOut, worse := &s.out, &s.phase, &s.json, &s.worse
	var paths []string
	for rest := args; ; {
		if err := fset.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				writeHelp(stdout, compareDoc(), fset)
				return 0
			}
			fmt.Fprintf(stderr, "latencytest compare: %v; flags are -o FILE, -json FILE, -phase NAME and -fail-if-worse PCT\n", err)
			return 2
		}
		rest = fset.Args()
		if len(rest) == 0 {
			break
		}
		paths = append(paths, rest[0])
		rest = rest[1:]
	}
	failPct, within := -1.0, float64(report.DefaultWithinPct)
	if *worse != "" {
		v, err := strconv.ParseFloat(strings.TrimSuffix(*worse, "%"), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) {
			fmt.Fprintf(stderr, "latencytest compare: --fail-if-worse %q: allowed a percentage of 0 or more, e.g. 10%%\n", *worse)
			return 2
		}
		failPct, within = v, v
	}
	if *out == "" || *phase == "" {
		fmt.Fprintln(stderr, "latencytest compare: -o and -phase must not be empty")
		return 2
	}
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "latencytest compare: nothing to compare: give at least one results directory or cyclictest file")
		return 2
	}
	for flag, p := range map[string]string{"-o": *out, "-json": *jsonOut} {
		if d := filepath.Dir(p); p != "" && !isDir(d) {
			fmt.Fprintf(stderr, "latencytest compare: %s %s: no directory %s to write it in\n", flag, p, d)
			return 2
		}
		if p == "" {
			continue
		}
		if err := atomicfile.Check(flag, p); err != nil {
			fmt.Fprintf(stderr, "latencytest compare: %v\n", err)
			return 2
		}
		if onStdout(p) {
			stdout = stderr // the file is the terminal's text's place: keep it JSON (or HTML) alone
		}
	}
	ins := make([]report.Input, len(paths))
	for i, p := range paths {
		in, err := labelled(p, *phase)
		if err != nil {
			fmt.Fprintf(stderr, "latencytest compare: %v\n", err)
			return 2
		}
		ins[i] = in
	}
	var rk report.Ranking
	interrupted, err := stoppable(func(g *report.Gate) (err error) {
		rk, err = report.CompareGated(ins, *out, *jsonOut, within, g)
		return err
	})
	if errors.Is(err, report.ErrStopped) {
		fmt.Fprintf(stderr, "latencytest compare: interrupted: nothing written\n")
		return 130
	}
	if err != nil {
		fmt.Fprintf(stderr, "latencytest compare: %v\n", err)
		if badinput.Is(err) {
			return 2
		}
		return 1
	}
	report.WriteRanking(stdout, rk)
	fmt.Fprintf(stdout, "\nwrote %s\n", *out)
	if *jsonOut != "" {
		fmt.Fprintf(stdout, "wrote %s\n", *jsonOut)
	}
	if interrupted {
		return 130
	}
	if failPct < 0 {
		return 0
	}
	code, lines := rk.FailIfWorse(failPct)
	for _, l := range lines {
		fmt.Fprintf(stderr, "latencytest compare: %s\n", l)
	}
	return code
}

// labelled is an input as given on the command line: NAME=PATH labels
// PATH NAME ("6.1-rt=results/x"), unless the whole argument is a file or
// directory itself (a path may hold '='). PATH may be several, comma
// separated, each maybe a glob ("old=results/old-*"): the runs of one
// source (report.Input.More).
func labelled(arg, phase string) (report.Input, error) {
	if _, err := os.Stat(arg); err == nil {
		return report.Input{Path: arg, Phase: phase}, nil
	}
	name, path, ok := strings.Cut(arg, "=")
	if !ok || name == "" || path == "" {
		return report.Input{Path: arg, Phase: phase}, nil // loading it says what is wrong
	}
	var paths []string
	for _, p := range strings.Split(path, ",") {
		if !strings.ContainsAny(p, "*?[") {
			paths = append(paths, p)
			continue
		}
		ms, err := filepath.Glob(p)
		if err != nil || len(ms) == 0 {
			return report.Input{}, badinput.Errorf("%s: %s matches nothing", name, p)
		}
		paths = append(paths, ms...)
	}
	return report.Input{Path: paths[0], More: paths[1:], Label: name, Phase: phase}, nil
}

// onStdout reports whether writing path writes this process's standard
// output (-json /dev/stdout | jq), where the ranking table and the
// "wrote" lines would otherwise be mixed into the file.
func onStdout(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	out, err := os.Stdout.Stat()
	return err == nil && os.SameFile(fi, out)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
