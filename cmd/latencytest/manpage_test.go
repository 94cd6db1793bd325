package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"latencytest/internal/bintest"
)

// helpFlagLine and helpUsageFlag find the flags a -h text lists, read
// here on their own rather than with helpdoc.go's parser, which is what
// is under test: an indented line that begins with a dash, and a
// bracketed flag of a Usage line.
var (
	helpFlagLine  = regexp.MustCompile(`(?m)^\s+(-{1,2}[A-Za-z][\w-]*)`)
	helpUsageFlag = regexp.MustCompile(`\[(-{1,2}[A-Za-z][\w-]*)`)
)

// listedFlags are the flags of `latencytest ARGS -h`, without dashes.
func listedFlags(t *testing.T, args ...string) []string {
	t.Helper()
	r := latencytest(t, append(args, "-h")...)
	if r.code != 0 {
		t.Fatalf("%v -h: exit %d: %s", args, r.code, r.stderr)
	}
	var names []string
	for _, re := range []*regexp.Regexp{helpFlagLine, helpUsageFlag} {
		for _, m := range re.FindAllStringSubmatch(r.stdout, -1) {
			names = append(names, strings.TrimLeft(m[1], "-"))
		}
	}
	return names
}

// listedCommands are the commands `latencytest -h` lists.
func listedCommands(t *testing.T) []string {
	t.Helper()
	r := latencytest(t, "-h")
	_, list, _ := strings.Cut(r.stderr, "Commands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	var cmds []string
	for _, l := range strings.Split(list, "\n") {
		cmds = append(cmds, strings.Fields(l)[0])
	}
	if len(cmds) < 8 {
		t.Fatalf("latencytest -h lists %d commands: %q", len(cmds), r.stderr)
	}
	return cmds
}

// groffText renders a man page with groff as man(1) does, failing on any
// warning (-ww) so that a page that sets wrongly fails too.
func groffText(t *testing.T, page string) string {
	t.Helper()
	if _, err := exec.LookPath("groff"); err != nil {
		t.Fatalf("groff is the reference that renders the pages (scripts/setup test installs groff-base): %v", err)
	}
	cmd := exec.Command("groff", "-man", "-Tutf8", "-Kutf8", "-ww", "-rLL=200n", "-P-c", "-P-b", "-P-u", page)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("groff %s: %v %s", page, err, stderr.String())
	}
	return string(out)
}

// Every flag that a command's -h lists is in its man page as groff sets
// it, and stress's page has every stressor's flags.
func TestManPagesListEveryFlag(t *testing.T) {
	dir := t.TempDir()
	if r := latencytest(t, manCommand, dir); r.code != 0 {
		t.Fatalf("%s: exit %d: %s", manCommand, r.code, r.stderr)
	}
	top := groffText(t, filepath.Join(dir, "latencytest.1"))
	for _, c := range listedCommands(t) {
		if !strings.Contains(top, "latencytest-"+c) && !strings.Contains(top, "\n       "+c) {
			t.Errorf("latencytest(1) does not list command %s", c)
		}
		page := groffText(t, filepath.Join(dir, "latencytest-"+c+".1"))
		checkFlagsIn(t, c, page, listedFlags(t, c))
		if c != "stress" {
			continue
		}
		for _, l := range strings.Split(strings.TrimSpace(latencytest(t, "stress", "-list").stdout), "\n") {
			s := strings.Fields(l)[0]
			checkFlagsIn(t, "stress "+s, subsection(t, page, "stress "+s), listedFlags(t, "stress", s))
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != len(listedCommands(t))+1 {
		t.Errorf("%d pages written, want one per command and latencytest(1)", len(ents))
	}
}

// subsection is the part of a rendered page under the subheading title,
// up to the next heading of either level.
func subsection(t *testing.T, page, title string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, "\n   "+title+"\n")
	if !ok {
		t.Fatalf("no subsection %q in the page", title)
	}
	if i := regexp.MustCompile(`\n(   )?[A-Za-z]`).FindStringIndex(rest); i != nil {
		rest = rest[:i[0]]
	}
	return rest
}

// checkFlagsIn fails for each flag not in the rendered page as -x or --x.
func checkFlagsIn(t *testing.T, what, page string, flags []string) {
	t.Helper()
	if what != "version" && len(flags) == 0 {
		t.Errorf("%s -h lists no flag: the test's reading of -h is wrong", what)
	}
	for _, f := range flags {
		re := regexp.MustCompile(`(^|[\s\[])-{1,2}` + regexp.QuoteMeta(f) + `\b`)
		if !re.MatchString(page) {
			t.Errorf("%s: -h lists -%s, its man page does not", what, f)
		}
	}
}

// bash, with the generated completion loaded, offers after `latencytest
// CMD -` every flag that CMD's -h lists (and a stressor's after `stress
// NAME -`); zsh parses its script, which names every flag too.
func TestCompletionListsEveryFlag(t *testing.T) {
	dir := t.TempDir()
	scripts := map[string]string{}
	for _, sh := range []string{"bash", "zsh"} {
		r := latencytest(t, completionCommand, sh)
		if r.code != 0 {
			t.Fatalf("%s %s: exit %d: %s", completionCommand, sh, r.code, r.stderr)
		}
		scripts[sh] = filepath.Join(dir, "latencytest."+sh)
		if err := os.WriteFile(scripts[sh], []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(sh, "-n", scripts[sh]).CombinedOutput(); err != nil {
			t.Fatalf("%s -n: %v %s (scripts/setup test installs zsh)", sh, err, out)
		}
	}
	zsh, _ := os.ReadFile(scripts["zsh"])
	for _, c := range listedCommands(t) {
		words := []string{c}
		if c == "stress" {
			words = []string{c, "hackbench"}
		}
		offered := bashComplete(t, scripts["bash"], append(words, "-")...)
		for _, f := range listedFlags(t, words...) {
			if !strings.Contains(" "+offered+" ", " -"+f+" ") && !strings.Contains(" "+offered+" ", " --"+f+" ") {
				t.Errorf("bash: %v -<TAB> offers %q, not -%s", words, offered, f)
			}
			if !regexp.MustCompile(`'-{1,2}` + regexp.QuoteMeta(f) + `:`).Match(zsh) {
				t.Errorf("zsh: no -%s for %v", f, words)
			}
		}
	}
	if got := bashComplete(t, scripts["bash"], "mon"); got != "monitor" {
		t.Errorf("bash: latencytest mon<TAB> offers %q, want monitor", got)
	}
}

// bashComplete runs the completion function as bash would for the
// command line `latencytest WORDS...` with the cursor after the last.
func bashComplete(t *testing.T, script string, words ...string) string {
	t.Helper()
	line := "latencytest " + strings.Join(words, " ")
	prog := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _latencytest; echo "${COMPREPLY[*]}"`
	out, err := bintest.Output(exec.Command("bash", append([]string{"-c", prog, "bash", script}, strings.Fields(line)...)...))
	if err != nil {
		t.Fatalf("bash completion of %q: %v", line, err)
	}
	return strings.TrimSpace(string(out))
}
