package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"latencytest/internal/badinput"
	"latencytest/report"
	"latencytest/rundata"
)

// reportDoc is report's help besides its flags.
func reportDoc() cmdDoc {
	return cmdDoc{
		synopsis: []string{"latencytest report [--text] DIR"},
		about: `Renders DIR/index.html and DIR/stats.csv from DIR/run.json and the samples files;
with --text prints the run's closing block again, for a mail.`,
		examples: []string{
			"latencytest report results/host-6.1.0-20261202-101500",
			"latencytest report --text results/host-6.1.0-20261202-101500 | mail -s 'latency' list@example.org",
			`for d in results/*/; do latencytest report "$d"; done`,
		},
	}
}

// reportFlagSet defines report's flags: the one definition its parsing,
// its -h, its man page and its completion are made from.
func reportFlagSet() (*flag.FlagSet, *bool) {
	fset := flag.NewFlagSet("report", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	text := fset.Bool("text", false, "print the run's closing block (did the sound break, the verdict, the worst wakeup, the T: lines) instead of rendering")
	return fset, text
}

// reportMain renders a results directory again, e.g. after upgrading
// latencytest or after copying the directory from the machine measured.
func reportMain(args []string, stdout, stderr io.Writer) int {
	fset, text := reportFlagSet()
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeHelp(stdout, reportDoc(), fset)
			return 0
		}
		fmt.Fprintf(stderr, "latencytest report: %v; usage: latencytest report [--text] DIR\n", err)
		return 2
	}
	if fset.NArg() != 1 {
		fmt.Fprintf(stderr, "latencytest report: want exactly one results directory, got %d arguments\n", fset.NArg())
		return 2
	}
	dir := fset.Arg(0)
	if _, err := os.Stat(filepath.Join(dir, rundata.RunFile)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "latencytest report: %s is not a results directory (no %s)\n", dir, rundata.RunFile)
			return 2
		}
		fmt.Fprintf(stderr, "latencytest report: %v\n", err)
		return 2
	}
	if *text {
		if err := report.Text(dir, stdout); err != nil {
			fmt.Fprintf(stderr, "latencytest report: %v\n", err)
			if badinput.Is(err) {
				return 2
			}
			return 1
		}
		return 0
	}
	interrupted, err := stoppable(func(g *report.Gate) error { return report.RenderGated(dir, g) })
	if errors.Is(err, report.ErrStopped) {
		fmt.Fprintf(stderr, "latencytest report: interrupted: nothing written\n")
		return 130
	}
	if err != nil {
		fmt.Fprintf(stderr, "latencytest report: %v\n", err)
		if badinput.Is(err) {
			return 2
		}
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(dir, report.IndexFile), filepath.Join(dir, report.StatsFile))
	if interrupted {
		return 130
	}
	return 0
}

// stoppable runs f, a rendering, until it returns or SIGINT or SIGTERM
// comes. On a signal the rendering's gate is closed, which waits for
// writes in progress (a whole rendering's, a moment) and lets none start,
// and stoppable returns at once, abandoning the reading and drawing, which
// write nothing: a second at most, however large the input. interrupted
// says a signal came; err is f's, or report.ErrStopped when f was
// abandoned before it wrote.
func stoppable(f func(g *report.Gate) error) (interrupted bool, err error) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(ch)
	g := &report.Gate{}
	done := make(chan error, 1)
	go func() { done <- f(g) }()
	select {
	case err := <-done:
		select {
		case <-ch:
			return true, err
		default:
			return false, err
		}
	case <-ch:
		g.Close()
		select {
		case err := <-done:
			return true, err
		default:
			return true, report.ErrStopped
		}
	}
}
