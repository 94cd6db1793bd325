// Package pwprofile reads PipeWire's profiler, as pw-profiler writes it
// (profiler.log, one line a cycle of the graph's driver), and says which
// node made each late cycle late (docs/pipewire.md).
//
// PipeWire's module-profiler reports, for each cycle of a driver, the
// driver's clock and, for each follower node, when it was signalled, when
// it woke and when it finished, and its state. The server emits a record
// when the graph completes, and also when the driver's next wakeup finds
// the graph unfinished ("incomplete"): that cycle missed its deadline.
// pw-profiler (0.3.65, Debian 12) writes each record as a line of
// tab-separated microseconds: four columns for the driver, then eight for
// each follower, in the order it met them, blank where the follower was not
// triggered; newer versions write the same columns with three decimals.
package pwprofile

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Status is a follower's state when the record was taken
// (pw_node_activation's status).
type Status int

const (
	NotTriggered Status = 0 // not signalled this cycle (its columns are blank)
	Triggered    Status = 1 // signalled, not awake yet
	Awake        Status = 2 // awake, not finished
	Finished     Status = 3
	Inactive     Status = 4 // newer servers
)

func (s Status) String() string {
	switch s {
	case NotTriggered:
		return "not-triggered"
	case Triggered:
		return "triggered"
	case Awake:
		return "awake"
	case Finished:
		return "finished"
	case Inactive:
		return "inactive"
	}
	return fmt.Sprintf("status %d", int(s))
}

// Follower is one follower node's line in a record. Its times are after the
// driver's signal of the record, as pw-profiler writes them (negative ones
// written as 0).
type Follower struct {
	Slot                  int // its block of columns: the order pw-profiler met it
	ID                    int // the node's id
	Signal, Awake, Finish time.Duration
	Status                Status
}

// Record is one line of profiler.log.
type Record struct {
	Line int // in the file, from 1
	// Period is the time from the previous cycle's signal to this one's
	// (0 in the record of an incomplete cycle, whose signal the server
	// has not moved on); Busy, from the signal to the graph's end; Delay,
	// the device's delay; Quantum, the cycle's duration: its deadline.
	// pw-profiler writes Period and Busy both as 1.4 quanta when either
	// is over 1.3 (Clamped).
	Period, Busy, Delay, Quantum time.Duration
	Followers                    []Follower
}

// Clamped says pw-profiler replaced the driver's period and busy time with
// 1.4 quanta: one of them was over 1.3 quanta.
func (r Record) Clamped() bool {
	if r.Quantum <= 0 || r.Period != r.Busy {
		return false
	}
	c := 1.4 * float64(r.Quantum)
	return math.Abs(float64(r.Period)-c) <= float64(2*time.Microsecond)
}

// unfinished lists the followers signalled this cycle that had not
// finished when the record was taken.
func (r Record) unfinished() []Follower {
	var out []Follower
	for _, f := range r.Followers {
		if f.Status == Triggered || f.Status == Awake {
			out = append(out, f)
		}
	}
	return out
}

// follower is the slot's line in r (ok false when it was not triggered).
func (r Record) follower(slot int) (Follower, bool) {
	for _, f := range r.Followers {
		if f.Slot == slot {
			return f, true
		}
	}
	return Follower{}, false
}

// micro parses a column of microseconds, integer or decimal.
func micro(s string) (time.Duration, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 1e12 {
		return 0, fmt.Errorf("%q is not a number of microseconds", s)
	}
	return time.Duration(math.Round(v * 1000)), nil
}

// Parse reads pw-profiler's profiler.log.
func Parse(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		rec, err := parseLine(line)
		if err != nil {
			return out, fmt.Errorf("profiler.log line %d: %w", n, err)
		}
		rec.Line = n
		out = append(out, rec)
	}
	return out, sc.Err()
}

func parseLine(line string) (Record, error) {
	col := strings.Split(line, "\t")
	// Every column ends in a tab, so the last field is empty.
	if len(col) > 0 && col[len(col)-1] == "" {
		col = col[:len(col)-1]
	}
	if len(col) < 4 || (len(col)-4)%8 != 0 {
		return Record{}, fmt.Errorf("%d columns, not 4 for the driver and 8 for each follower", len(col))
	}
	var rec Record
	for i, p := range []*time.Duration{&rec.Period, &rec.Busy, &rec.Delay, &rec.Quantum} {
		v, err := micro(col[i])
		if err != nil {
			return Record{}, fmt.Errorf("driver column %d: %w", i+1, err)
		}
		*p = v
	}
	for slot := 0; 4+8*slot < len(col); slot++ {
		b := col[4+8*slot : 4+8*slot+8]
		if strings.TrimSpace(strings.Join(b, "")) == "" {
			continue
		}
		id, err := strconv.Atoi(strings.TrimSpace(b[0]))
		if err != nil || id < 0 {
			return Record{}, fmt.Errorf("follower %d: node id %q", slot+1, b[0])
		}
		st, err := strconv.Atoi(strings.TrimSpace(b[6]))
		if err != nil {
			return Record{}, fmt.Errorf("follower %d: status %q", slot+1, b[6])
		}
		f := Follower{Slot: slot, ID: id, Status: Status(st)}
		for i, p := range []*time.Duration{&f.Signal, &f.Awake, &f.Finish} {
			if *p, err = micro(b[1+i]); err != nil {
				return Record{}, fmt.Errorf("follower %d column %d: %w", slot+1, 2+i, err)
			}
		}
		rec.Followers = append(rec.Followers, f)
	}
	return rec, nil
}

// Node names a node: its id and its name (node.name).
type Node struct {
	ID   int
	Name string
}

func (n Node) String() string {
	if n.Name == "" {
		return fmt.Sprintf("node %d", n.ID)
	}
	return n.Name
}

var (
	stdoutFollower = regexp.MustCompile(`^logging follower (\d+) \("(.*)"\)$`)
	stdoutDriver   = regexp.MustCompile(`^logging driver (\d+)$`)
	plotFollower   = regexp.MustCompile(`using (\d+) title "([^"]*)/(\d+)"`)
)

// Names are the nodes of a profile: the driver's id and the follower in
// each slot.
type Names struct {
	Driver    Node
	Followers map[int]Node // by slot
}

// ParseNames reads the nodes' names from what pw-profiler wrote besides the
// log: its standard output ("logging driver 27", `logging follower 31
// ("slow")`, one line per follower in slot order; 0.3.x) or its
// Timing3.plot (`using 8 title "slow/31"`, column 8 for slot 0, 8 more
// for each further slot; every version). Either or both may be given.
func ParseNames(texts ...string) Names {
	n := Names{Followers: map[int]Node{}}
	for _, t := range texts {
		slot := 0
		for _, l := range strings.FieldsFunc(t, func(r rune) bool { return r == '\n' || r == '\r' }) {
			l = strings.TrimSpace(l)
			if m := stdoutDriver.FindStringSubmatch(l); m != nil {
				n.Driver.ID, _ = strconv.Atoi(m[1])
			}
			if m := stdoutFollower.FindStringSubmatch(l); m != nil {
				id, _ := strconv.Atoi(m[1])
				n.Followers[slot] = Node{ID: id, Name: m[2]}
				slot++
			}
			for _, m := range plotFollower.FindAllStringSubmatch(l, -1) {
				c, _ := strconv.Atoi(m[1])
				id, _ := strconv.Atoi(m[3])
				if c >= 8 && (c-8)%8 == 0 {
					n.Followers[(c-8)/8] = Node{ID: id, Name: m[2]}
				}
			}
		}
	}
	return n
}

// node names the follower f.
func (n Names) node(f Follower) Node {
	if nd, ok := n.Followers[f.Slot]; ok && nd.ID == f.ID {
		return nd
	}
	return Node{ID: f.ID}
}
