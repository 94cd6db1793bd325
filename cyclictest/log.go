package cyclictest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// LogRun is one run of cyclictest as its terminal output shows it: each
// thread's last status line.
type LogRun struct {
	Line    int // where the run starts in the log, from 1
	Policy  string
	Threads []LogThread
	// Heading is the last heading line above the run ("Before the
	// patch:" as a mail has it, without its colon), "" when none: the
	// runs of a mail that compares two kernels without naming them are
	// told apart by it (GroupByHeading).
	Heading string
}

// LogThread is one "T:" line: latencies in microseconds.
type LogThread struct {
	Thread     int
	PID        int
	Prio       int
	IntervalUS int
	Count      int64
	MinUS      int64
	ActUS      int64
	AvgUS      int64
	MaxUS      int64
}

// maxLogBytes bounds a log's size: a dozen pasted runs take kilobytes.
const maxLogBytes = 16 << 20

// tLine matches a cyclictest status line, once wrapped lines are joined.
// Fields may touch their label ("Min:1000000" before the first wakeup).
var tLine = regexp.MustCompile(`^T:\s*(\d+)\s*\(\s*(\d+)\)\s*P:\s*(\d+)\s+I:\s*(\d+)\s+C:\s*(\d+)\s+Min:\s*(\d+)\s+Act:\s*(\d+)\s+Avg:\s*(\d+)\s+Max:\s*(\d+)\s*$`)

// cursorUp is the escape sequence cyclictest redraws its lines with.
var cursorUp = regexp.MustCompile(`\x1b\[\d*[A-Za-z]`)

// IsLog tells cyclictest's terminal output from its other
// formats by its first status line. It walks the lines in place: a file
// of millions of short lines costs nothing more than the file.
func IsLog(b []byte) bool {
	for line := range bytes.Lines(b) {
		if bytes.Contains(line, []byte("T:")) && strings.HasPrefix(cleanLine(string(line)), "T:") {
			return true
		}
	}
	return false
}

// cleanLine drops what a terminal capture or a mail adds: escape
// sequences, carriage returns, quote markers, a prompt's "$ ".
func cleanLine(s string) string {
	s = cursorUp.ReplaceAllString(strings.TrimRight(s, "\r"), "")
	s = strings.TrimLeft(s, " \t")
	for strings.HasPrefix(s, ">") {
		s = strings.TrimLeft(s[1:], " \t")
	}
	return s
}

// ParseLog reads the terminal output of one or more cyclictest
// runs, as captured or as pasted into a mail: a status line wrapped onto
// the next line(s) is joined, the screen redraws of a live run keep their
// last state, and a run starts at cyclictest's first line ("# /dev/
// cpu_dma_latency set to …"), at a shell command line ("$ …"), at a policy
// line that is not a redraw, or where a thread's status line comes again
// with another process id. A heading line (a short line of text ending in
// a colon, "Before the patch:") names the runs below it, up to the next
// heading. A status line that cannot be read is an error naming its line.
func ParseLog(r io.Reader) ([]LogRun, error) {
	src := logLines{sc: bufio.NewScanner(io.LimitReader(r, maxLogBytes+1))}
	src.sc.Buffer(make([]byte, 64<<10), 1<<20)
	p := logParser{}
	var window [3]string
	for {
		if err := src.fill(len(window)); err != nil {
			return nil, err
		}
		if len(src.buf) == 0 {
			break
		}
		line, no := src.buf[0].text, src.buf[0].no
		used := 1
		switch {
		case strings.HasPrefix(line, "# /dev/cpu_dma_latency"), strings.HasPrefix(line, "$ "):
			p.newRun(no)
		case strings.HasPrefix(line, "policy:"):
			// A live run redraws its policy line; a new one starts a run.
			p.policy(no, strings.TrimSpace(strings.TrimPrefix(line, "policy:")), !src.buf[0].redraw)
		case src.buf[0].heading:
			p.heading = strings.TrimSpace(strings.TrimSuffix(line, ":"))
		case strings.HasPrefix(line, "T:"):
			lines := window[:0]
			for _, l := range src.buf {
				lines = append(lines, l.text)
			}
			var joined string
			joined, used = joinWrapped(lines)
			m := tLine.FindStringSubmatch(joined)
			if m == nil {
				return nil, fmt.Errorf("line %d: not a cyclictest status line: %q", no, clip(joined))
			}
			if err := p.thread(no, m); err != nil {
				return nil, err
			}
		}
		src.buf = src.buf[:copy(src.buf, src.buf[used:])]
	}
	if k := src.kernels; len(k) > 1 {
		// One source is one kernel: runs of two side by side would be
		// ranked as one machine's spread.
		return nil, fmt.Errorf("holds the runs of several kernels (%s at line %d, %s at line %d): split it into one file per kernel, e.g. csplit -z FILE %d, and compare the files",
			k[0].release, k[0].line, k[1].release, k[1].line, k[1].line)
	}
	return p.done(), nil
}

// logLines reads a log's lines as ParseLog goes, holding the few it looks
// ahead at (a status line wrapped onto the next two), so that its memory
// follows the runs it finds, not the lines the file has. A line no status
// line can take as its continuation and that starts nothing is kept as ""
// (which ends a wrapped line just as it would), without copying it.
type logLines struct {
	sc     *bufio.Scanner
	buf    []logLine
	no     int // lines read
	n      int // bytes read
	sinceT int // lines read since the last status line
	// kernels are the first two kernel releases the log's headings name
	// ("Kernel 6.1.0-rt:", uname's output), with the line of each.
	kernels []heading
}

// heading is a kernel release a log names, and its line.
type heading struct {
	release string
	line    int
}

// kernelLine finds a kernel release in a heading: after "kernel",
// "Linux" or "uname", within a few words ("Linux host 6.6.0 #1 SMP").
var kernelLine = regexp.MustCompile(`(?i)\b(?:kernel|linux|uname)\b[^0-9\n]{0,40}?\b(\d+\.\d+(?:\.\d+)?(?:[-+][\w.+~-]*[\w+])?)`)

// noteKernel records the kernel release line b names, if it is one not
// seen yet (the first two only).
func (l *logLines) noteKernel(b []byte) {
	if len(l.kernels) >= 2 || !bytes.ContainsAny(b, "kKlLuU") {
		return
	}
	m := kernelLine.FindSubmatch(b)
	if m == nil {
		return
	}
	r := string(m[1])
	for _, k := range l.kernels {
		if k.release == r {
			return
		}
	}
	l.kernels = append(l.kernels, heading{r, l.no})
}

type logLine struct {
	text    string
	no      int
	redraw  bool // began with a cursor movement
	heading bool // a heading line (isHeading)
}

// fill reads lines until buf holds k, or the log ends.
func (l *logLines) fill(k int) error {
	for len(l.buf) < k && l.sc.Scan() {
		b := l.sc.Bytes()
		l.no++
		l.n += len(b) + 1
		if l.n > maxLogBytes {
			return fmt.Errorf("larger than %d MiB: not a cyclictest log", maxLogBytes>>20)
		}
		l.sinceT++
		l.noteKernel(b)
		ln := logLine{no: l.no, redraw: cursorUp.Match(b)}
		if l.sinceT <= 2 || logStarts(b) || mayHead(b) {
			ln.text = cleanLine(string(b))
			if strings.HasPrefix(ln.text, "T:") {
				l.sinceT = 0
			}
			ln.heading = isHeading(ln.text)
		}
		l.buf = append(l.buf, ln)
	}
	return l.sc.Err()
}

// logStarts says whether a raw line may be one ParseLog acts on: a status,
// policy, cyclictest or shell line (cleanLine removes at most escapes,
// blanks, quote markers and "\r" before them).
func logStarts(b []byte) bool {
	for _, w := range []string{"T:", "policy:", "# /dev/cpu_dma_latency", "$ "} {
		if bytes.Contains(b, []byte(w)) {
			return true
		}
	}
	return false
}

// maxHeading bounds a heading line: a heading is a few words, and a long
// line ending in a colon is prose.
const maxHeading = 100

// mayHead says whether a raw line may be a heading, before it is cleaned:
// short, and ending in a colon.
func mayHead(b []byte) bool {
	b = bytes.TrimRight(b, " \t\r")
	return len(b) > 1 && len(b) <= maxHeading && b[len(b)-1] == ':'
}

// isHeading tells a heading ("Before the patch:", "> After:") from the
// lines cyclictest and the shell write and from a status line's wrapped
// remainder: a line of text ending in a colon, with no other colon, which
// is none of theirs.
func isHeading(s string) bool {
	s = strings.TrimRight(s, " \t")
	if len(s) < 2 || len(s) > maxHeading || !strings.HasSuffix(s, ":") || strings.Count(s, ":") > 1 {
		return false
	}
	for _, w := range []string{"T:", "policy:", "#", "$"} {
		if strings.HasPrefix(s, w) {
			return false
		}
	}
	return !startsWithDigitOrField(s)
}

// joinWrapped joins a status line with the lines a mailer wrapped it onto
// (at most two), stopping as soon as it reads whole.
func joinWrapped(lines []string) (string, int) {
	s := lines[0]
	for k := 1; k < 3 && !tLine.MatchString(s) && k < len(lines); k++ {
		next := lines[k]
		if next == "" || strings.HasPrefix(next, "T:") || strings.Contains(next, ":") && !startsWithDigitOrField(next) {
			break
		}
		s += " " + next
		if tLine.MatchString(s) {
			return s, k + 1
		}
	}
	return s, 1
}

// startsWithDigitOrField tells a wrapped remainder ("121", "Max:   121")
// from an unrelated line.
func startsWithDigitOrField(s string) bool {
	if s != "" && s[0] >= '0' && s[0] <= '9' {
		return true
	}
	for _, f := range []string{"P:", "I:", "C:", "Min:", "Act:", "Avg:", "Max:"} {
		if strings.HasPrefix(s, f) {
			return true
		}
	}
	return false
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

type logParser struct {
	runs    []LogRun
	cur     *LogRun
	heading string // the last heading read
}

func (p *logParser) newRun(line int) {
	if p.cur != nil && len(p.cur.Threads) == 0 {
		p.cur.Line = line // a run's preamble: keep the one run
		p.cur.Heading = p.heading
		return
	}
	p.runs = append(p.runs, LogRun{Line: line, Heading: p.heading})
	p.cur = &p.runs[len(p.runs)-1]
}

func (p *logParser) policy(line int, pol string, fresh bool) {
	if p.cur == nil || fresh && len(p.cur.Threads) > 0 {
		p.newRun(line)
	}
	p.cur.Policy = pol
}

func (p *logParser) thread(line int, m []string) error {
	var v [9]int64
	for k := range v {
		x, err := strconv.ParseInt(m[k+1], 10, 64)
		if err != nil || x > 1<<53 {
			return fmt.Errorf("line %d: value %q out of range", line, m[k+1])
		}
		v[k] = x
	}
	t := LogThread{Thread: int(v[0]), PID: int(v[1]), Prio: int(v[2]), IntervalUS: int(v[3]), Count: v[4], MinUS: v[5], ActUS: v[6], AvgUS: v[7], MaxUS: v[8]}
	if p.cur == nil {
		p.newRun(line)
	}
	for k := range p.cur.Threads {
		old := &p.cur.Threads[k]
		if old.Thread != t.Thread {
			continue
		}
		if old.PID == t.PID || old.PID == 0 {
			*old = t // a redraw of the same run
			return nil
		}
		p.newRun(line) // the same thread in a new process: the next run
		break
	}
	if len(p.cur.Threads) >= maxLogThreads {
		return fmt.Errorf("line %d: more than %d threads in one run", line, maxLogThreads)
	}
	p.cur.Threads = append(p.cur.Threads, t)
	return nil
}

// maxLogThreads bounds a run's threads (cyclictest runs one per CPU at
// most): each status line is looked up among its run's threads.
const maxLogThreads = 4096

// done returns the runs that measured something (a redraw before the
// first wakeup counts nothing).
func (p *logParser) done() []LogRun {
	var out []LogRun
	for _, r := range p.runs {
		var ts []LogThread
		for _, t := range r.Threads {
			if t.Count > 0 {
				ts = append(ts, t)
			}
		}
		if len(ts) > 0 {
			r.Threads = ts
			out = append(out, r)
		}
	}
	return out
}

// LogSource is the runs of a log under one heading.
type LogSource struct {
	Heading string
	Runs    []LogRun
}

// GroupByHeading splits a log's runs by their headings, in the order the
// headings first come: a mail that shows "Before the patch:" and "After
// the patch:" holds two sources, which pooled would be ranked as one
// kernel's spread. The runs of a log with one heading or none are one
// source.
func GroupByHeading(runs []LogRun) []LogSource {
	var out []LogSource
	at := map[string]int{}
	for _, r := range runs {
		i, ok := at[r.Heading]
		if !ok {
			i = len(out)
			at[r.Heading] = i
			out = append(out, LogSource{Heading: r.Heading})
		}
		out[i].Runs = append(out[i].Runs, r)
	}
	return out
}
