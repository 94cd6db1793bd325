package main

import (
	"bytes"
	"io"
	"regexp"
	"strings"
)

// helpDoc is a command's -h text read back into its parts, so that the
// man pages and the shell completions (manpage.go, completion.go) are
// made from exactly what -h prints and cannot drift from the flag
// definitions behind it.
type helpDoc struct {
	synopsis    []string     // the Usage: lines, without "Usage: "
	description []string     // prose lines; "" between paragraphs
	sections    []optSection // the flags (or stress's stressors), under -h's headings
	examples    []string
}

// optSection is a heading of -h ("Flags", "Stream", ...; "" for a list
// with none) and its items.
type optSection struct {
	title string
	items []optItem
}

// optItem is one flag (name begins with '-') or one named item, its
// argument's name as -h shows it, and its text.
type optItem struct {
	name, arg string
	text      []string
}

// itemLine is a list item of -h: two spaces, a name, an optional argument
// name, then its text after two spaces or a tab (or on the next lines).
var itemLine = regexp.MustCompile(`^  (-{0,2}[A-Za-z][\w.-]*)((?: [A-Za-z][\w.]*)?)(?:\t|\s{2,}|$)(.*)$`)

// helpOf runs a command's main with args and -h and reads what it
// printed.
func helpOf(c command, args ...string) helpDoc {
	var out bytes.Buffer
	c.main(append(args, "-h"), &out, io.Discard)
	return parseHelp(out.String())
}

// parseHelp splits a -h text into its parts: Usage lines, prose,
// "Heading:" lists of indented items (an indented list of flags with no
// heading too), and the Examples block.
func parseHelp(text string) helpDoc {
	var d helpDoc
	var sec *optSection
	mode := "prose"
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		trimmed := strings.TrimSpace(line)
		indented := strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")
		switch {
		case strings.HasPrefix(line, "Usage: "):
			d.synopsis, mode = append(d.synopsis, strings.TrimPrefix(line, "Usage: ")), "usage"
		case mode == "usage" && strings.HasPrefix(trimmed, "latencytest "):
			d.synopsis = append(d.synopsis, trimmed)
		case line == "Examples:":
			mode = "examples"
		case mode == "examples" && (indented || trimmed == ""):
			if trimmed != "" {
				d.examples = append(d.examples, trimmed)
			}
		case !indented && strings.HasSuffix(line, ":") && !strings.Contains(line, ". "):
			d.sections = append(d.sections, optSection{title: strings.TrimSuffix(line, ":")})
			sec, mode = &d.sections[len(d.sections)-1], "list"
		case trimmed == "":
			if mode == "prose" && len(d.description) > 0 && d.description[len(d.description)-1] != "" {
				d.description = append(d.description, "")
			}
		case mode == "list" && sec != nil && len(sec.items) > 0 && indented && !itemLine.MatchString(line):
			it := &sec.items[len(sec.items)-1]
			it.text = append(it.text, trimmed)
		case indented && itemLine.MatchString(line) && (mode == "list" || strings.HasPrefix(trimmed, "-")):
			if mode != "list" {
				d.sections = append(d.sections, optSection{})
				sec, mode = &d.sections[len(d.sections)-1], "list"
			}
			m := itemLine.FindStringSubmatch(line)
			it := optItem{name: m[1], arg: strings.TrimSpace(m[2])}
			if t := strings.TrimSpace(m[3]); t != "" {
				it.text = []string{t}
			}
			sec.items = append(sec.items, it)
		default:
			d.description, mode, sec = append(d.description, trimmed), "prose", nil
		}
	}
	return d
}

// flags are the flag names the doc mentions, without dashes: every list
// item that is a flag, and the [-x] and [--x ARG] of the Usage lines.
func (d helpDoc) flags() []string {
	var names []string
	seen := map[string]bool{}
	add := func(n string) {
		n = strings.TrimLeft(n, "-")
		if n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, s := range d.sections {
		for _, it := range s.items {
			if strings.HasPrefix(it.name, "-") {
				add(it.name)
			}
		}
	}
	for _, s := range d.synopsis {
		for _, m := range usageFlag.FindAllStringSubmatch(s, -1) {
			add(m[1])
		}
	}
	return names
}

// usageFlag is a flag in a Usage line: "[-v]", "[--prio N]", "[-o FILE]".
var usageFlag = regexp.MustCompile(`\[(-{1,2}[A-Za-z][\w-]*)`)
