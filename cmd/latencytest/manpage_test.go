package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"latencytest/internal/bintest"
	"latencytest/stress"
)

// flagOwner is one flag set users type flags to: a command's, or a
// stressor's (`latencytest stress NAME`).
type flagOwner struct {
	key   string   // the command, or "stress:NAME"
	words []string // what is typed before the flags
	fs    *flag.FlagSet
}

// flagOwners are every visible command's flag set and every stressor's,
// as the commands define them.
func flagOwners(t *testing.T) []flagOwner {
	t.Helper()
	cmds := commands()
	var owners []flagOwner
	for _, n := range visible(cmds) {
		if n == "stress" {
			continue
		}
		if cmds[n].flags == nil || cmds[n].doc == nil {
			t.Fatalf("command %s has no flag set or doc for its help, man page and completion", n)
		}
		owners = append(owners, flagOwner{n, []string{n}, cmds[n].flags()})
	}
	reg := stress.NewRegistry()
	for _, n := range reg.Names() {
		fs, _ := reg.FlagSet(n)
		owners = append(owners, flagOwner{"stress:" + n, []string{"stress", n}, fs})
	}
	return owners
}

// registered are the names of fs's flags users are told of (test hooks
// left out), sorted, and the hidden ones.
func registered(fs *flag.FlagSet) (shown, hidden []string) {
	fs.VisitAll(func(f *flag.Flag) {
		if isHidden(f.Name) {
			hidden = append(hidden, f.Name)
		} else {
			shown = append(shown, f.Name)
		}
	})
	return shown, hidden
}

// names are the first submatches of re in s, without dashes, sorted and
// without repeats.
func names(re *regexp.Regexp, s string) []string {
	var ns []string
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		ns = append(ns, strings.TrimLeft(m[1], "-"))
	}
	sort.Strings(ns)
	return slices.Compact(ns)
}

// sameFlags fails unless an output lists exactly the flags registered.
func sameFlags(t *testing.T, what string, got, want []string) {
	t.Helper()
	for _, f := range want {
		if !slices.Contains(got, f) {
			t.Errorf("%s: no -%s, which the flag set defines", what, f)
		}
	}
	for _, f := range got {
		if !slices.Contains(want, f) {
			t.Errorf("%s: -%s, which the flag set does not define", what, f)
		}
	}
}

// These read the outputs on their own rather than with what made them:
// a flag item of -h (an indented line that begins with a dash), a flag
// of a Usage line ("[-v]", "[--prio N]"), a flag's tag in a man page
// (.TP then the bold name), one of zsh's _describe words ('--name:...').
var (
	helpFlagLine  = regexp.MustCompile(`(?m)^  (-{1,2}[A-Za-z][\w-]*)`)
	helpUsageFlag = regexp.MustCompile(`\[(-{1,2}[A-Za-z][\w-]*)`)
	manFlagTag    = regexp.MustCompile(`(?m)^\.TP\n\\fB(-{1,2}[A-Za-z][\w-]*)\\fR`)
	zshFlagWord   = regexp.MustCompile(`'(-{1,2}[A-Za-z][\w-]*):`)
)

// Every flag defined on a command's flag set (and a stressor's) is in
// its -h, in its man page and in the bash and zsh completions, and none
// of them lists a flag the set does not define; the test hooks are in
// none. A flag with a fixed set of values has them offered by both
// shells after it.
func TestFlagsInEveryOutput(t *testing.T) {
	dir := t.TempDir()
	if r := latencytest(t, manCommand, dir); r.code != 0 {
		t.Fatalf("%s: exit %d: %s", manCommand, r.code, r.stderr)
	}
	scripts := completionScripts(t)
	zsh, _ := os.ReadFile(scripts["zsh"])
	stressPage := manSource(t, dir, "stress")
	for _, o := range flagOwners(t) {
		want, hidden := registered(o.fs)
		if o.key != "version" && len(want) == 0 {
			t.Errorf("%s: no flag: the test's reading of the flag sets is wrong", o.key)
		}
		help := latencytest(t, append(o.words, "-h")...)
		if help.code != 0 {
			t.Fatalf("%v -h: exit %d: %s", o.words, help.code, help.stderr)
		}
		sameFlags(t, strings.Join(o.words, " ")+" -h", names(helpFlagLine, help.stdout), want)
		for _, f := range names(helpUsageFlag, help.stdout) {
			if !slices.Contains(want, f) {
				t.Errorf("%v -h: its Usage line has -%s, which the flag set does not define", o.words, f)
			}
		}
		page := manSource(t, dir, o.words[0])
		if o.words[0] == "stress" {
			page = manSubsection(t, stressPage, "stress "+o.words[1])
		}
		sameFlags(t, o.key+" man page", names(manFlagTag, strings.ReplaceAll(page, `\-`, "-")), want)
		sameFlags(t, o.key+" bash", names(regexp.MustCompile(`(\S+)`), bashComplete(t, scripts["bash"], append(o.words, "-")...)), want)
		sameFlags(t, o.key+" zsh", names(zshFlagWord, zshOpts(t, string(zsh), o.key)), want)
		for _, h := range hidden {
			if strings.Contains(help.stdout+page+string(zsh), h) {
				t.Errorf("%s: test hook --%s shown", o.key, h)
			}
		}
		checkAllowed(t, o, scripts["bash"], string(zsh))
	}
}

// checkAllowed fails unless each flag of o with a fixed set of values
// has them, and only them, offered by bash after it (as -x and --x) and
// named by zsh's completion of it.
func checkAllowed(t *testing.T, o flagOwner, bashScript, zsh string) {
	t.Helper()
	o.fs.VisitAll(func(f *flag.Flag) {
		c, ok := f.Value.(allowedValuer)
		if !ok {
			return
		}
		want := strings.Join(c.allowedValues(), " ")
		if want == "" {
			t.Errorf("%s --%s: a fixed set of no values", o.key, f.Name)
		}
		for _, dash := range []string{"-", "--"} {
			if got := bashComplete(t, bashScript, append(o.words, dash+f.Name, "")...); got != want {
				t.Errorf("bash: %v %s%s <TAB> offers %q, want %q", o.words, dash, f.Name, got, want)
			}
		}
		if line := o.key + ":--" + f.Name + ") compadd -- " + want + ";"; !strings.Contains(zsh, line) {
			t.Errorf("zsh: no %q", line)
		}
	})
}

// completionScripts writes both shells' scripts into a temporary
// directory, each checked by its shell's parser.
func completionScripts(t *testing.T) map[string]string {
	t.Helper()
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
	return scripts
}

// zshOpts is the zsh script's list of key's flags.
func zshOpts(t *testing.T, zsh, key string) string {
	t.Helper()
	_, rest, ok := strings.Cut(zsh, "\n\t"+key+") opts=(")
	if !ok {
		t.Fatalf("zsh: no flags for %s", key)
	}
	opts, _, _ := strings.Cut(rest, "\n")
	return opts
}

// manSource is the roff of command's page, checked to set without a
// warning by groff.
func manSource(t *testing.T, dir, command string) string {
	t.Helper()
	path := filepath.Join(dir, "latencytest-"+command+".1")
	groffText(t, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// manSubsection is the part of a page's roff under the subheading
// title, up to the next heading of either level.
func manSubsection(t *testing.T, page, title string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, "\n.SS "+roffText(title)+"\n")
	if !ok {
		t.Fatalf("no subsection %q in the page", title)
	}
	if i := regexp.MustCompile(`\n\.S[SH] `).FindStringIndex(rest); i != nil {
		rest = rest[:i[0]]
	}
	return rest
}

// latencytest(1) lists every command, and a page is written for each.
func TestManPagesOnePerCommand(t *testing.T) {
	dir := t.TempDir()
	if r := latencytest(t, manCommand, dir); r.code != 0 {
		t.Fatalf("%s: exit %d: %s", manCommand, r.code, r.stderr)
	}
	top := groffText(t, filepath.Join(dir, "latencytest.1"))
	cmds := listedCommands(t)
	for _, c := range cmds {
		if !strings.Contains(top, "\n       "+c) {
			t.Errorf("latencytest(1) does not list command %s", c)
		}
		if _, err := os.Stat(filepath.Join(dir, "latencytest-"+c+".1")); err != nil {
			t.Errorf("no page for %s: %v", c, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != len(cmds)+1 {
		t.Errorf("%d pages written, want one per command and latencytest(1)", len(ents))
	}
	if got := bashComplete(t, completionScripts(t)["bash"], "mon"); got != "monitor" {
		t.Errorf("bash: latencytest mon<TAB> offers %q, want monitor", got)
	}
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

// bashComplete runs the completion function as bash would for the
// command line `latencytest WORDS...` with the cursor after the last
// (an empty last word: the cursor after a space).
func bashComplete(t *testing.T, script string, words ...string) string {
	t.Helper()
	prog := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _latencytest; echo "${COMPREPLY[*]}"`
	args := append([]string{"-c", prog, "bash", script, "latencytest"}, words...)
	out, err := bintest.Output(exec.Command("bash", args...))
	if err != nil {
		t.Fatalf("bash completion of %q: %v", words, err)
	}
	return strings.TrimSpace(string(out))
}
