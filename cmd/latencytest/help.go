package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// A command's flags are defined once, on its flag.FlagSet, and that set
// is what -h, the man pages (manpage.go) and the shell completions
// (completion.go) are all made from: a flag added to a command is in all
// three at the next build, with nothing else to edit. What the flag
// package does not carry, a fixed set of values for the completions to
// offer, is carried by the flag's Value (choice).

// cmdDoc is what a command's help says besides its flags.
type cmdDoc struct {
	synopsis []string    // the Usage lines, each beginning "latencytest"
	about    string      // prose; a blank line between paragraphs
	examples []string    // command lines, as typed
	groups   []flagGroup // headings over the flags; nil: one "Flags" list
}

// flagGroup is a heading of a command's help and the flags under it.
type flagGroup struct {
	title string
	names []string
}

// loadsTitle and otherTitle are the headings of run's flags that no
// group names: a load's (its usage names its stressor), anything else.
const (
	loadsTitle = "Loads (each stressor's flags; latencytest stress NAME -h)"
	otherTitle = "Other"
)

// runGroups are run's flags by what they set. A flag in no group is a
// load's (its usage says which stressor) or falls under "Other".
func runGroups() []flagGroup {
	return []flagGroup{
		{"Stream", []string{"driver", "device", "capture-device", "stream", "access", "rate", "channels", "period", "periods",
			"period-size", "buffer-size", "period-time", "buffer-time", "rtc-rate", "tone", "file", "loopback"}},
		{"Real-time", []string{"prio", "affinity", "cpus", "no-mlock", "no-dma-latency", "lift-rt-budget", "cpu-load"}},
		{"Phases and loads", []string{"tests", "duration", "repeat", "loops", "break-above"}},
		{"Output", []string{"out", "label", "force", "histfile", "no-report", "no-samples", "quiet", "verbose", "listen", "metrics-file",
			"fail-above", "max-xruns"}},
		{"Tracing", []string{"trace", "trace-above"}},
	}
}

// isHidden says whether a flag is a test hook: accepted, never shown in
// help, man page or completion.
func isHidden(name string) bool { return name == "test-stall" || name == "test-glitch" }

// flagDoc is one flag as every output shows it: its name (no dashes),
// its value's name (none for a switch), its usage with the default that
// is not off, and the values it takes when they are a fixed set.
type flagDoc struct {
	name, arg, usage string
	allowed          []string
}

// allowedValuer is a flag Value that takes a fixed set of values.
type allowedValuer interface{ allowedValues() []string }

// choice is a string flag with a fixed set of values, which the
// completions offer. It stores any value: the command checks it after
// parsing, where its error can say more than that it is not in the set
// (a driver not built into this binary, say).
type choice struct {
	p       *string
	allowed []string
}

// choiceVar defines a choice flag on fs, as fs.StringVar does.
func choiceVar(fs *flag.FlagSet, p *string, name, value string, allowed []string, usage string) {
	*p = value
	fs.Var(&choice{p: p, allowed: allowed}, name, usage)
}

func (c *choice) String() string {
	if c == nil || c.p == nil {
		return "" // the zero Value flag.isZeroValue makes
	}
	return *c.p
}

func (c *choice) Set(s string) error { *c.p = s; return nil }

func (c *choice) Get() any { return *c.p }

func (c *choice) allowedValues() []string { return c.allowed }

// flagDocs are fs's flags in the flag package's order (sorted by name),
// test hooks left out.
func flagDocs(fs *flag.FlagSet) []flagDoc {
	var ds []flagDoc
	fs.VisitAll(func(f *flag.Flag) {
		if !isHidden(f.Name) {
			ds = append(ds, docOf(f))
		}
	})
	return ds
}

// docOf is one flag's flagDoc. Its value's name is the flag package's
// (a `name` in its usage, else its type; a choice is a string), and its
// default is shown as flag.PrintDefaults shows it, but not one that means
// off or none (0, 0s, -1, false, ""): such a flag's usage says what its
// absence does.
func docOf(f *flag.Flag) flagDoc {
	arg, usage := flag.UnquoteUsage(f)
	d := flagDoc{name: f.Name, arg: arg, usage: usage}
	if a, ok := f.Value.(allowedValuer); ok {
		d.allowed = a.allowedValues()
		if arg == "value" {
			d.arg = "string"
		}
	}
	if def := f.DefValue; def != "" && def != "0" && def != "0s" && def != "false" && def != "-1" {
		if d.arg == "string" {
			def = fmt.Sprintf("%q", def)
		}
		d.usage += fmt.Sprintf(" (default %s)", def)
	}
	return d
}

// flagSection is one heading of a command's flags and the flags under it.
type flagSection struct {
	title string
	flags []flagDoc
}

// flagSections are fs's flags under doc's headings, in their order: a
// flag no group names under loadsTitle when its usage names a stressor,
// else under otherTitle. Without groups, every flag is under "Flags".
func flagSections(doc cmdDoc, fs *flag.FlagSet) []flagSection {
	if doc.groups == nil {
		if ds := flagDocs(fs); len(ds) > 0 {
			return []flagSection{{"Flags", ds}}
		}
		return nil // version has none: no heading over nothing
	}
	byTitle := map[string][]flagDoc{}
	for _, d := range flagDocs(fs) {
		byTitle[groupOf(doc.groups, d)] = append(byTitle[groupOf(doc.groups, d)], d)
	}
	var secs []flagSection
	for _, g := range doc.groups {
		secs = appendSection(secs, g.title, byTitle[g.title])
	}
	secs = appendSection(secs, loadsTitle, byTitle[loadsTitle])
	return appendSection(secs, otherTitle, byTitle[otherTitle])
}

// groupOf is the heading d falls under among groups.
func groupOf(groups []flagGroup, d flagDoc) string {
	for _, g := range groups {
		if slices.Contains(g.names, d.name) {
			return g.title
		}
	}
	if strings.Contains(d.usage, "(stressor ") {
		return loadsTitle
	}
	return otherTitle
}

// appendSection appends a heading unless nothing is under it.
func appendSection(secs []flagSection, title string, ds []flagDoc) []flagSection {
	if len(ds) == 0 {
		return secs
	}
	return append(secs, flagSection{title, ds})
}

// writeHelp prints a command's -h: its Usage lines, what it does, its
// examples, then its flags under their headings.
func writeHelp(w io.Writer, doc cmdDoc, fs *flag.FlagSet) {
	for i, s := range doc.synopsis {
		if i == 0 {
			fmt.Fprintf(w, "Usage: %s\n", s)
		} else {
			fmt.Fprintf(w, "       %s\n", s)
		}
	}
	fmt.Fprintf(w, "\n%s\n", doc.about)
	if len(doc.examples) > 0 {
		fmt.Fprint(w, "\nExamples:\n")
		for _, e := range doc.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
	for _, s := range flagSections(doc, fs) {
		fmt.Fprintf(w, "\n%s:\n", s.title)
		for _, d := range s.flags {
			printFlag(w, d)
		}
	}
}

// printFlag prints one flag as flag.PrintDefaults does.
func printFlag(w io.Writer, d flagDoc) {
	line := "  -" + d.name
	if d.arg != "" {
		line += " " + d.arg
	}
	fmt.Fprintln(w, line+"\n    \t"+strings.ReplaceAll(d.usage, "\n", "\n    \t"))
}
