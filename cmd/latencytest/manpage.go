package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"latencytest/internal/atomicfile"
	"latencytest/stress"
)

// manCommand writes the man pages, latencytest(1) and one
// latencytest-COMMAND(1) per visible command, into a directory (make
// dist, for the package). Each page is made from what its command's -h
// prints, its doc and its flag set, set in roff, so a flag added to a
// command is in its page at the next build.
const manCommand = "__man"

// manPage is one page's parts.
type manPage struct {
	name, summary string
	synopsis      []string
	description   []string  // lines; "" between paragraphs
	lists         []manList // commands, stressors: a section each
	options       []flagSection
	examples      []string
}

// manList is a section listing named things (not flags).
type manList struct {
	title string
	items [][2]string // name, text
}

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
	for _, p := range manPages(commands()) {
		var b bytes.Buffer
		writeMan(&b, p)
		if err := atomicfile.WriteFile(filepath.Join(dir, p.name+".1"), b.Bytes()); err != nil {
			fmt.Fprintf(stderr, "latencytest %s: %v\n", manCommand, err)
			return 1
		}
	}
	return 0
}

// manPages are latencytest(1) and every visible command's page.
func manPages(cmds map[string]command) []manPage {
	pages := []manPage{topPage(cmds)}
	for _, n := range visible(cmds) {
		if n == "stress" {
			pages = append(pages, stressPage(cmds[n].summary))
			continue
		}
		pages = append(pages, commandPage(n, cmds[n]))
	}
	return pages
}

// topPage is latencytest(1): what latencytest -h prints.
func topPage(cmds map[string]command) manPage {
	p := manPage{
		name: "latencytest", summary: "how late a real-time audio thread wakes up, under which load",
		synopsis: []string{"latencytest COMMAND [flags]"},
		description: []string{"latencytest " + version + " — how late does a real-time audio thread wake up on this machine?", "",
			"Drivers built in: " + strings.Join(driverNames(), ", "), "Run 'latencytest COMMAND -h' for a command's flags."},
	}
	list := manList{title: "Commands"}
	for _, n := range visible(cmds) {
		list.items = append(list.items, [2]string{n, cmds[n].summary})
	}
	p.lists = []manList{list}
	return p
}

// commandPage is latencytest-NAME(1) from c's doc and flag set.
func commandPage(name string, c command) manPage {
	doc := c.doc()
	return manPage{
		name: "latencytest-" + name, summary: c.summary,
		synopsis: doc.synopsis, description: strings.Split(doc.about, "\n"),
		options: flagSections(doc, c.flags()), examples: doc.examples,
	}
}

// stressPage is latencytest-stress(1): stress's help, its stressors and
// each stressor's flags, a subsection of OPTIONS each.
func stressPage(summary string) manPage {
	reg := stress.NewRegistry()
	p := manPage{
		name: "latencytest-stress", summary: summary,
		synopsis: []string{stress.Synopsis}, description: []string{stress.About, stress.FlagsHint},
		examples: stress.Examples(),
	}
	list := manList{title: "Stressors"}
	for _, n := range reg.Names() {
		s, _ := reg.Lookup(n)
		list.items = append(list.items, [2]string{n, s.Description()})
		fs, _ := reg.FlagSet(n)
		p.options = appendSection(p.options, "stress "+n, flagDocs(fs))
	}
	p.lists = []manList{list}
	return p
}

// writeMan sets one page in roff (man(7)).
func writeMan(w io.Writer, p manPage) {
	fmt.Fprintf(w, ".TH %s 1 \"\" \"latencytest %s\" \"latencytest manual\"\n", strings.ToUpper(p.name), roffText(version))
	fmt.Fprintf(w, ".SH NAME\n%s \\- %s\n", roffText(p.name), roffText(p.summary))
	if len(p.synopsis) > 0 {
		fmt.Fprint(w, ".SH SYNOPSIS\n.nf\n")
		for _, s := range p.synopsis {
			fmt.Fprintln(w, roffLine(s))
		}
		fmt.Fprint(w, ".fi\n")
	}
	fmt.Fprint(w, ".SH DESCRIPTION\n")
	for _, l := range p.description {
		if l == "" {
			fmt.Fprint(w, ".PP\n")
			continue
		}
		fmt.Fprintln(w, roffLine(l))
	}
	for _, l := range p.lists {
		fmt.Fprintf(w, ".SH %s\n", roffText(strings.ToUpper(l.title)))
		for _, it := range l.items {
			fmt.Fprintf(w, ".TP\n\\fB%s\\fR\n%s\n", roffText(it[0]), roffLine(it[1]))
		}
	}
	writeManOptions(w, p.options)
	if len(p.examples) > 0 {
		fmt.Fprint(w, ".SH EXAMPLES\n.nf\n")
		for _, e := range p.examples {
			fmt.Fprintln(w, roffLine(e))
		}
		fmt.Fprint(w, ".fi\n")
	}
	if p.name != "latencytest" {
		fmt.Fprint(w, ".SH SEE ALSO\n.BR latencytest (1)\n")
	}
}

// writeManOptions writes OPTIONS: the flags, a subsection per heading
// but for a lone "Flags" list.
func writeManOptions(w io.Writer, secs []flagSection) {
	for i, s := range secs {
		switch {
		case i == 0 && s.title == "Flags":
			fmt.Fprint(w, ".SH OPTIONS\n")
		case i == 0:
			fmt.Fprintf(w, ".SH OPTIONS\n.SS %s\n", roffText(s.title))
		default:
			fmt.Fprintf(w, ".SS %s\n", roffText(s.title))
		}
		for _, d := range s.flags {
			fmt.Fprintf(w, ".TP\n%s\n", manFlagHead(d))
			for _, t := range strings.Split(d.usage, "\n") {
				fmt.Fprintln(w, roffLine(t))
			}
		}
	}
}

// manFlagHead is a flag's tag: its name in bold, its value's in italics.
func manFlagHead(d flagDoc) string {
	head := `\fB` + roffText(longFlag(d.name)) + `\fR`
	if d.arg != "" {
		head += ` \fI` + roffText(d.arg) + `\fR`
	}
	return head
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
