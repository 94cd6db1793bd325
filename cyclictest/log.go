package cyclictest

import (
	"bufio"
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
// formats by its first status line.
func IsLog(b []byte) bool {
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(cleanLine(line), "T:") {
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
// with another process id. A status line
// that cannot be read is an error naming its line.
func ParseLog(r io.Reader) ([]LogRun, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxLogBytes+1))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var lines []string
	redraw := map[int]bool{} // lines that began with a cursor movement
	n := 0
	for sc.Scan() {
		n += len(sc.Bytes()) + 1
		if n > maxLogBytes {
			return nil, fmt.Errorf("larger than %d MiB: not a cyclictest log", maxLogBytes>>20)
		}
		if cursorUp.Match(sc.Bytes()) {
			redraw[len(lines)] = true
		}
		lines = append(lines, cleanLine(sc.Text()))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	p := logParser{}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, "# /dev/cpu_dma_latency"), strings.HasPrefix(line, "$ "):
			p.newRun(i + 1)
		case strings.HasPrefix(line, "policy:"):
			// A live run redraws its policy line; a new one starts a run.
			p.policy(i+1, strings.TrimSpace(strings.TrimPrefix(line, "policy:")), !redraw[i])
		case strings.HasPrefix(line, "T:"):
			joined, used := joinWrapped(lines[i:])
			m := tLine.FindStringSubmatch(joined)
			if m == nil {
				return nil, fmt.Errorf("line %d: not a cyclictest status line: %q", i+1, clip(joined))
			}
			if err := p.thread(i+1, m); err != nil {
				return nil, err
			}
			i += used - 1
		}
	}
	return p.done(), nil
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
	runs []LogRun
	cur  *LogRun
}

func (p *logParser) newRun(line int) {
	if p.cur != nil && len(p.cur.Threads) == 0 {
		p.cur.Line = line // a run's preamble: keep the one run
		return
	}
	p.runs = append(p.runs, LogRun{Line: line})
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
	p.cur.Threads = append(p.cur.Threads, t)
	return nil
}

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
