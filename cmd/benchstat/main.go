// Command benchstat is scripts/bench-cyclictest's arithmetic: it reads
// the figures of every round from `latencytest compare -json` (the same
// histogram parser for both tools) and the CPU seconds the script timed,
// and says one tool's figures over round-alternating rounds, or one tool's
// against another's beside the A/A (internal/benchstat).
//
//	benchstat -rank rank.json [-cpu-dir DIR] -a NAME            one tool's rounds
//	benchstat -rank rank.json [-cpu-dir DIR] -a NAME -b NAME [-aa NAME,NAME] [-label TEXT]
//
// A round is the source labelled NAME.R (R from 1) in the ranking's phase;
// its CPU seconds are line R of DIR/NAME.cpu (user and system seconds,
// summed).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"latencytest/internal/benchstat"
	"latencytest/report"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// errBad is bad input: exit code 2.
var errBad = errors.New("bad input")

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchstat", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rank := fs.String("rank", "", "")
	cpuDir := fs.String("cpu-dir", "", "")
	a, b, aa := fs.String("a", "", ""), fs.String("b", "", ""), fs.String("aa", "", "")
	label := fs.String("label", "", "")
	phase := fs.String("phase", report.DefaultCyclictestPhase, "")
	seed := fs.Uint64("seed", 1, "")
	goals := fs.String("goals", "", "")
	cpuHow := fs.String("cpu-how", "", "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || *rank == "" || *a == "" {
		fmt.Fprintln(stderr, "benchstat: usage: -rank FILE [-cpu-dir DIR] -a NAME [-b NAME [-aa NAME,NAME] [-label TEXT] [-goals P99,P99.9] [-cpu-how TEXT]] [-phase NAME] [-seed N]")
		return 2
	}
	g, err := parseGoals(*goals)
	if err == nil {
		err = say(stdout, source{*rank, *cpuDir, *phase}, comparison{*a, *b, *aa, *label, g, *cpuHow}, *seed)
	}
	if err != nil {
		fmt.Fprintf(stderr, "benchstat: %v\n", err)
		if errors.Is(err, errBad) {
			return 2
		}
		return 1
	}
	return 0
}

// source is where the rounds' figures are.
type source struct{ rank, cpuDir, phase string }

// comparison is what to say: a's rounds alone, or over b's with the
// A/A aa ("NAME,NAME") beside them, judged by goals.
type comparison struct {
	a, b, aa, label string
	goals           benchstat.Goals
	cpuHow          string // what the CPU seconds counted (-cpu-how); "": start-up too
}

// parseGoals reads -goals P99,P99.9 (empty: the default goals).
func parseGoals(s string) (benchstat.Goals, error) {
	g := benchstat.DefaultGoals
	if s == "" {
		return g, nil
	}
	x, y, ok := strings.Cut(s, ",")
	p99, err1 := strconv.ParseFloat(x, 64)
	p999, err2 := strconv.ParseFloat(y, 64)
	if !ok || err1 != nil || err2 != nil || !(p99 > 0) || !(p999 > 0) {
		return g, fmt.Errorf("-goals %q: want the p99 and p99.9 ratio goals, e.g. 1.05,1.10: %w", s, errBad)
	}
	g.P99, g.P999 = p99, p999
	return g, nil
}

func say(w io.Writer, src source, c comparison, seed uint64) error {
	a, b, aa, label := c.a, c.b, c.aa, c.label
	rk, err := readRanking(src.rank)
	if err != nil {
		return err
	}
	if b == "" {
		ra, err := src.rounds(rk, a)
		if err != nil {
			return err
		}
		fmt.Fprintln(w, summary(a, ra))
		return nil
	}
	p, err := src.pair(rk, a, b, seed)
	if err != nil {
		return err
	}
	v := benchstat.Verdict{Paired: p, Goals: c.goals, CPUHow: c.cpuHow}
	if aa != "" {
		x, y, ok := strings.Cut(aa, ",")
		if !ok {
			return fmt.Errorf("-aa %q: want two names, NAME,NAME: %w", aa, errBad)
		}
		q, err := src.pair(rk, x, y, seed)
		if err != nil {
			return fmt.Errorf("A/A: %w", err)
		}
		v.AA = &q
	}
	if label == "" {
		label = a + "/" + b
	}
	fmt.Fprintf(w, "  %s, the median of %d per-round ratios [bootstrap 95 %%]:\n", label, p.Rounds)
	for _, l := range v.Lines() {
		fmt.Fprintf(w, "    %s\n", l)
	}
	return nil
}

// summary is one tool's rounds in a line: medians over the rounds, and
// the worst round's max.
func summary(name string, rs []benchstat.Round) string {
	var periods int64
	var p99, p999, maxes, cpu []float64
	for _, r := range rs {
		periods += r.Periods
		p99, p999, maxes = append(p99, r.P99), append(p999, r.P999), append(maxes, r.Max)
		cpu = append(cpu, r.CPUPerPeriod())
	}
	s := fmt.Sprintf("  %-14s %2d rounds, %8d periods; median p99 %6.0f µs, p99.9 %6.0f µs, max %6.0f µs; worst max %6.0f µs",
		name, len(rs), periods, benchstat.Median(p99), benchstat.Median(p999), benchstat.Median(maxes), slices.Max(maxes))
	if c := benchstat.Median(cpu); !math.IsNaN(c) {
		s += fmt.Sprintf("; CPU per period %.2f µs", c)
	}
	return s
}

func readRanking(path string) (report.Ranking, error) {
	var rk report.Ranking
	data, err := os.ReadFile(path)
	if err != nil {
		return rk, fmt.Errorf("-rank: %w: %w", err, errBad)
	}
	if err := json.Unmarshal(data, &rk); err != nil {
		return rk, fmt.Errorf("-rank %s: not compare -json's output: %v: %w", path, err, errBad)
	}
	return rk, nil
}

// pair is a's rounds over b's.
func (src source) pair(rk report.Ranking, a, b string, seed uint64) (benchstat.Paired, error) {
	ra, err := src.rounds(rk, a)
	if err != nil {
		return benchstat.Paired{}, err
	}
	rb, err := src.rounds(rk, b)
	if err != nil {
		return benchstat.Paired{}, err
	}
	p, err := benchstat.Pair(ra, rb, seed)
	if err != nil {
		return p, fmt.Errorf("%s over %s: %w: %w", a, b, err, errBad)
	}
	return p, nil
}

// rounds are name's rounds, NAME.1 on, in order, with their CPU seconds.
func (src source) rounds(rk report.Ranking, name string) ([]benchstat.Round, error) {
	i := slices.IndexFunc(rk.Phases, func(p report.RankedPhase) bool { return p.Phase == src.phase })
	if i < 0 {
		return nil, fmt.Errorf("%s: no phase %q: %w", src.rank, src.phase, errBad)
	}
	bySrc := map[string]report.RankedSource{}
	for _, s := range rk.Phases[i].Sources {
		bySrc[s.Label] = s
	}
	cpu, err := src.cpuSeconds(name)
	if err != nil {
		return nil, err
	}
	var rs []benchstat.Round
	for r := 1; ; r++ {
		s, ok := bySrc[name+"."+strconv.Itoa(r)]
		if !ok {
			break
		}
		if s.Skipped != "" || s.P99US == nil || s.P999US == nil {
			return nil, fmt.Errorf("%s.%d: no percentiles (%s): %w", name, r, s.Skipped, errBad)
		}
		rd := benchstat.Round{Periods: s.Periods, P99: *s.P99US, P999: *s.P999US, Max: s.WorstMaxUS}
		if len(cpu) >= r {
			rd.CPU = cpu[r-1]
		}
		rs = append(rs, rd)
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("%s: no source %s.1 in phase %q: %w", src.rank, name, src.phase, errBad)
	}
	return rs, nil
}

// cpuSeconds reads DIR/NAME.cpu, a round's CPU seconds a line, its
// fields summed (none without -cpu-dir).
func (src source) cpuSeconds(name string) ([]float64, error) {
	if src.cpuDir == "" {
		return nil, nil
	}
	f, err := os.Open(filepath.Join(src.cpuDir, name+".cpu"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var cpu []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, fields := 0.0, strings.Fields(sc.Text())
		for _, f := range fields {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || !(v >= 0) {
				fields = nil
				break
			}
			sum += v
		}
		if len(fields) == 0 {
			return nil, fmt.Errorf("%s.cpu: %q: want a round's CPU seconds a line (user and system, summed): %w", name, sc.Text(), errBad)
		}
		cpu = append(cpu, sum)
	}
	return cpu, sc.Err()
}
