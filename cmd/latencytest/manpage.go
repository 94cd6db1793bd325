package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"latencytest/internal/atomicfile"
)

// manCommand writes the man pages, latencytest(1) and one
// latencytest-COMMAND(1) per visible command, into a directory (make
// dist, for the package). Each page is its command's -h text set in roff,
// so a flag added to a command is in its page at the next build.
const manCommand = "__man"

func manMain(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "latencytest %s: want one argument, the directory to write the man pages to\n", manCommand)
		return 2
	}
	dir := args[0]
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		fmt.Fprintf(stderr, "latencytest %s: %s: allowed an existing directory\n", manCommand, dir)
		return 2
	}
	cmds := commands()
	var top bytes.Buffer
	usage(&top, cmds)
	pages := map[string]helpDoc{"latencytest": parseHelp(top.String())}
	summaries := map[string]string{"latencytest": "how late a real-time audio thread wakes up, under which load"}
	for _, n := range visible(cmds) {
		pages["latencytest-"+n], summaries["latencytest-"+n] = helpOf(cmds[n]), cmds[n].summary
	}
	pages["latencytest-stress"] = withStressorFlags(pages["latencytest-stress"], cmds["stress"])
	for name, d := range pages {
		var b bytes.Buffer
		writeMan(&b, name, summaries[name], d)
		if err := atomicfile.WriteFile(filepath.Join(dir, name+".1"), b.Bytes()); err != nil {
			fmt.Fprintf(stderr, "latencytest %s: %v\n", manCommand, err)
			return 1
		}
	}
	return 0
}

// withStressorFlags adds to stress's page each stressor's flags, from
// `latencytest stress NAME -h`, as a subsection of OPTIONS.
func withStressorFlags(d helpDoc, stress command) helpDoc {
	var names []string
	for _, s := range d.sections {
		for _, it := range s.items {
			if !strings.HasPrefix(it.name, "-") {
				names = append(names, it.name)
			}
		}
	}
	for _, n := range names {
		for _, s := range helpOf(stress, n).sections {
			if len(s.items) > 0 && strings.HasPrefix(s.items[0].name, "-") {
				d.sections = append(d.sections, optSection{title: "stress " + n, items: s.items})
			}
		}
	}
	return d
}

// writeMan sets one page in roff (man(7)).
func writeMan(w io.Writer, name, summary string, d helpDoc) {
	fmt.Fprintf(w, ".TH %s 1 \"\" \"latencytest %s\" \"latencytest manual\"\n", strings.ToUpper(name), roffText(version))
	fmt.Fprintf(w, ".SH NAME\n%s \\- %s\n", roffText(name), roffText(summary))
	if len(d.synopsis) > 0 {
		fmt.Fprint(w, ".SH SYNOPSIS\n.nf\n")
		for _, s := range d.synopsis {
			fmt.Fprintln(w, roffLine(s))
		}
		fmt.Fprint(w, ".fi\n")
	}
	fmt.Fprint(w, ".SH DESCRIPTION\n")
	for _, l := range d.description {
		if l == "" {
			fmt.Fprint(w, ".PP\n")
			continue
		}
		fmt.Fprintln(w, roffLine(l))
	}
	options := false // OPTIONS begun
	for _, s := range d.sections {
		options = writeManSection(w, s, options)
	}
	if len(d.examples) > 0 {
		fmt.Fprint(w, ".SH EXAMPLES\n.nf\n")
		for _, e := range d.examples {
			fmt.Fprintln(w, roffLine(e))
		}
		fmt.Fprint(w, ".fi\n")
	}
	if name != "latencytest" {
		fmt.Fprint(w, ".SH SEE ALSO\n.BR latencytest (1)\n")
	}
}

// writeManSection writes one heading of -h: its flags under OPTIONS (a
// subsection per heading), or another list (commands, stressors) as a
// section of its own. It returns whether OPTIONS has begun.
func writeManSection(w io.Writer, s optSection, options bool) bool {
	if len(s.items) == 0 {
		return options
	}
	isFlags := strings.HasPrefix(s.items[0].name, "-")
	switch {
	case !isFlags:
		fmt.Fprintf(w, ".SH %s\n", roffText(strings.ToUpper(s.title)))
	case !options && (s.title == "" || s.title == "Flags"):
		fmt.Fprint(w, ".SH OPTIONS\n")
	case !options:
		fmt.Fprintf(w, ".SH OPTIONS\n.SS %s\n", roffText(s.title))
	default:
		fmt.Fprintf(w, ".SS %s\n", roffText(s.title))
	}
	for _, it := range s.items {
		head := `\fB` + roffText(it.name) + `\fR`
		if isFlags {
			head = `\fB` + roffText(longFlag(it.name)) + `\fR`
		}
		if it.arg != "" {
			head += ` \fI` + roffText(it.arg) + `\fR`
		}
		fmt.Fprintf(w, ".TP\n%s\n", head)
		for _, t := range it.text {
			fmt.Fprintln(w, roffLine(t))
		}
	}
	return options || isFlags
}

// longFlag spells a flag as the README does: --name, and -x for one letter
// (the flag package takes one dash or two either way).
func longFlag(name string) string {
	n := strings.TrimLeft(name, "-")
	if len(n) == 1 {
		return "-" + n
	}
	return "--" + n
}

// roffText escapes text for roff: backslashes and hyphens (a hyphen
// unescaped may be set as a typographic one, and a flag copied from the
// page would not work).
func roffText(s string) string {
	return strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
}

// roffLine is roffText for a whole input line, which must not begin with
// a control character ('.' or '\”).
func roffLine(s string) string {
	s = roffText(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
