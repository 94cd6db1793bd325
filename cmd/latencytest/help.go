package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// flagGroup is a heading of a command's help and the flags under it.
type flagGroup struct {
	title string
	names []string
}

// runGroups are run's flags by what they set. A flag in no group is a
// load's (its usage says which stressor) or falls under "Other".
var runGroups = []flagGroup{
	{"Stream", []string{"driver", "device", "capture-device", "stream", "access", "rate", "channels", "period", "periods",
		"period-size", "buffer-size", "period-time", "buffer-time", "rtc-rate", "tone", "file", "loopback"}},
	{"Real-time", []string{"prio", "affinity", "cpus", "no-mlock", "no-dma-latency", "lift-rt-budget", "cpu-load"}},
	{"Phases and loads", []string{"tests", "duration", "repeat", "loops", "break-above"}},
	{"Output", []string{"out", "label", "force", "histfile", "no-report", "no-samples", "quiet", "verbose", "listen", "metrics-file",
		"fail-above", "max-xruns"}},
	{"Tracing", []string{"trace", "trace-above"}},
}

// hiddenFlags are test hooks: accepted, never shown in help.
var hiddenFlags = []string{"test-stall", "test-glitch"}

// printGroupedHelp prints fs's flags under groups' headings, the loads'
// flags (their usage names a stressor) under "Loads", what is left
// under "Other", and leaves out hiddenFlags.
func printGroupedHelp(w io.Writer, fs *flag.FlagSet, groups []flagGroup) {
	byGroup := map[string][]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) {
		if slices.Contains(hiddenFlags, f.Name) {
			return
		}
		title := "Other"
		if strings.Contains(f.Usage, "(stressor ") {
			title = "Loads (each stressor's flags; latencytest stress NAME -h)"
		}
		for _, g := range groups {
			if slices.Contains(g.names, f.Name) {
				title = g.title
			}
		}
		byGroup[title] = append(byGroup[title], f)
	})
	var titles []string
	for _, g := range groups {
		titles = append(titles, g.title)
	}
	titles = append(titles, "Loads (each stressor's flags; latencytest stress NAME -h)", "Other")
	for _, title := range titles {
		fl := byGroup[title]
		if len(fl) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, f := range fl {
			printFlag(w, f)
		}
	}
}

// printFlag prints one flag as flag.PrintDefaults does, without a
// default that means off or none (0, 0s, -1, false, ""): such a flag's
// usage says what its absence does.
func printFlag(w io.Writer, f *flag.Flag) {
	name, usage := flag.UnquoteUsage(f)
	line := "  -" + f.Name
	if name != "" {
		line += " " + name
	}
	line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
	if d := f.DefValue; d != "" && d != "0" && d != "0s" && d != "false" && d != "-1" {
		if name == "string" {
			d = fmt.Sprintf("%q", d)
		}
		line += fmt.Sprintf(" (default %s)", d)
	}
	fmt.Fprintln(w, line)
}
