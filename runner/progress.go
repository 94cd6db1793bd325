package runner

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// ProgressMode chooses how progress is shown while a phase runs.
type ProgressMode int

const (
	ProgressNone  ProgressMode = iota
	ProgressLines              // a plain line every few seconds (logs, pipes)
	ProgressBar                // a redrawn bar (terminals)
)

// printer serialises the run's terminal output so that xrun lines and the
// progress bar do not tear each other.
type printer struct {
	mu   sync.Mutex
	w    io.Writer
	mode ProgressMode
	bar  bool // a bar is on the current line
}

func newPrinter(w io.Writer, mode ProgressMode) *printer { return &printer{w: w, mode: mode} }

// linef prints one line, above the bar if one is shown.
func (p *printer) linef(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar {
		io.WriteString(p.w, "\r\033[K")
		p.bar = false
	}
	fmt.Fprintf(p.w, format+"\n", a...)
}

// runLeft is what remains of the run after the phase being shown: the
// phases after it, each of a phase's duration (0: the run has no end, or
// this is its last phase).
type runLeft struct {
	phase, phases int // the phase shown, from 1, of that many
	after         time.Duration
}

// progress shows the phase's progress, and the whole run's, until the
// returned stop is called.
func (p *printer) progress(phase string, total time.Duration, left runLeft, acc *accumulator) (stop func()) {
	if p.mode == ProgressNone {
		return func() {}
	}
	every := 250 * time.Millisecond
	if p.mode == ProgressLines {
		every = 5 * time.Second
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick(every, done, func() { p.show(phase, total, left, acc.snapshot()) })
	}()
	return func() {
		close(done)
		<-finished
		p.mu.Lock()
		if p.bar {
			io.WriteString(p.w, "\r\033[K")
			p.bar = false
		}
		p.mu.Unlock()
		p.linef("[%s] done: %s", phase, status(acc.snapshot()))
	}
}

// follow prints the lines next returns, as they come, until the returned
// stop is called.
func (p *printer) follow(phase string, next func() []string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick(250*time.Millisecond, done, func() { p.lines(phase, next()) })
	}()
	return func() {
		close(done)
		<-finished
		p.lines(phase, next())
	}
}

// lines prints each line with the phase's name.
func (p *printer) lines(phase string, ls []string) {
	for _, l := range ls {
		p.linef("[%s] %s", phase, l)
	}
}

func status(s snapshot) string {
	return fmt.Sprintf("periods %d  min %.0f  avg %.0f  max %.0f µs  xruns %d", s.periods, s.min, s.avg, s.max, s.xruns)
}

func (p *printer) show(phase string, total time.Duration, left runLeft, s snapshot) {
	elapsed := time.Duration(0)
	if s.periods > 0 {
		elapsed = time.Duration(s.lastDue - s.started)
	}
	run := ""
	if left.phases > 1 {
		run = fmt.Sprintf("  phase %d of %d, run %s left", left.phase, left.phases,
			(max(total-elapsed, 0) + left.after).Round(time.Second))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == ProgressLines {
		fmt.Fprintf(p.w, "[%s] %5.1f/%.0f s  %s%s\n", phase, elapsed.Seconds(), total.Seconds(), status(s), run)
		return
	}
	const width = 20
	filled := 0
	if total > 0 {
		filled = int(min(width, int64(width)*int64(elapsed)/int64(total)))
	}
	fmt.Fprintf(p.w, "\r\033[K[%s] [%s%s] %5.1f/%.0f s  %s%s", phase,
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), elapsed.Seconds(), total.Seconds(), status(s), run)
	p.bar = true
}

// tick calls f every d until done is closed: the parent's periodic work
// (the progress display, the samples file's flush and sync).
func tick(d time.Duration, done <-chan struct{}, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			f()
		}
	}
}
