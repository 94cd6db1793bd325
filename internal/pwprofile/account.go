package pwprofile

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Why a late cycle was late.
const (
	// RanPast: the node was awake and still running when the driver's
	// next wakeup came.
	RanPast = "ran past its deadline"
	// WokeLate: the node was signalled but not awake at the deadline, or
	// (in a cycle that completed late) waited longer to wake than it ran.
	WokeLate = "woke late"
	// FinishedLate: the graph completed after the deadline and this node
	// finished last, having run longer than it waited.
	FinishedLate = "finished after its deadline"
	// DriverLate: the driver's own cycle, from the previous signal or to
	// the graph's end, was over 1.3 quanta: the server's thread (or the
	// device's clock) was late, not a follower.
	DriverLate = "the driver's cycle ran over 1.3 quanta"
)

// Charge is one late cycle and the node it is charged to.
type Charge struct {
	Line   int  // the record's line in profiler.log
	Node   Node // the node charged
	Driver bool // the driver itself (DriverLate)
	Why    string
	// Signal, Awake and Finish are the charged follower's times after the
	// late cycle's start; Awake and Finish are -1 where it had not got
	// that far by the deadline.
	Signal, Awake, Finish time.Duration
	Quantum               time.Duration // the cycle's duration: the deadline after its start
	// Overrun is how long after the deadline the node finished: for a
	// cycle that completed late, its finish less the quantum; for a cycle
	// left incomplete, when the node finished its run of the next cycle
	// that completed (which it began once free of the late one, so this
	// is at most its overrun, by that short run's length), plus a quantum
	// for each cycle it kept late in between. -1 where the profile does
	// not say.
	Overrun time.Duration
	// Others are the other followers also unfinished at the deadline.
	Others []Node
}

// Report is the accounting of a profile's late cycles.
type Report struct {
	Cycles int // the driver's cycles in the profile
	Driver Node
	Late   []Charge
}

// kind is what a record is to the accounting.
type kind int

const (
	clean      kind = iota
	incomplete      // the graph had not finished at the driver's next wakeup
	forced          // the server's completion of the incomplete cycle before: not a cycle
	lateDone        // completed after the deadline
	driverLate      // Clamped
)

// classify says what each record is. A missed deadline makes two
// records: the incomplete one at the driver's next wakeup (Period 0:
// the server has not moved its signal time on, so the followers' times
// are after the previous cycle's signal, Busy earlier), then at once the
// graph's forced completion (the followers' times now after the late
// cycle's own signal, its busy time a quantum and more), which is not a
// cycle of its own, even where the late node finished between the two.
func classify(recs []Record) []kind {
	k := make([]kind, len(recs))
	prevIncomplete := false
	for i, r := range recs {
		un := len(r.unfinished()) > 0
		switch {
		case prevIncomplete && r.Period != 0:
			k[i] = forced
		case r.Clamped():
			k[i] = driverLate
		case un:
			k[i] = incomplete
		case r.Period != 0 && r.Busy > r.Quantum && r.Quantum > 0:
			k[i] = lateDone
		}
		prevIncomplete = un && k[i] != forced
	}
	return k
}

// Account charges each late cycle of recs to one node: a cycle left
// incomplete to the follower still awake at the deadline that woke
// earliest (it ran longest), or failing that to the one signalled
// earliest that had not woken; a cycle that completed after its deadline,
// to the follower that finished last; a cycle of the driver's over 1.3
// quanta, to the driver.
func Account(recs []Record, names Names) Report {
	k := classify(recs)
	rep := Report{Driver: names.Driver}
	for i, r := range recs {
		if k[i] != forced {
			rep.Cycles++
		}
		switch k[i] {
		case driverLate:
			rep.Late = append(rep.Late, Charge{Line: r.Line, Node: names.Driver, Driver: true, Why: DriverLate,
				Signal: -1, Awake: -1, Finish: -1, Quantum: r.Quantum, Overrun: -1})
		case incomplete:
			rep.Late = append(rep.Late, chargeIncomplete(recs, k, i, names))
		case lateDone:
			rep.Late = append(rep.Late, chargeLateDone(r, names))
		}
	}
	return rep
}

func chargeIncomplete(recs []Record, k []kind, i int, names Names) Charge {
	r := recs[i]
	// In the incomplete record the times are after the previous
	// cycle's signal; the late cycle began Busy after it.
	base := time.Duration(0)
	if r.Period == 0 {
		base = r.Busy
	}
	un := r.unfinished()
	sort.SliceStable(un, func(a, b int) bool {
		if (un[a].Status == Awake) != (un[b].Status == Awake) {
			return un[a].Status == Awake
		}
		if un[a].Status == Awake {
			return un[a].Awake < un[b].Awake
		}
		return un[a].Signal < un[b].Signal
	})
	f := un[0]
	c := Charge{Line: r.Line, Node: names.node(f), Why: WokeLate, Signal: f.Signal - base, Awake: -1, Finish: -1,
		Quantum: r.Quantum, Overrun: -1}
	if f.Status == Awake {
		c.Why, c.Awake = RanPast, f.Awake-base
	}
	for _, o := range un[1:] {
		c.Others = append(c.Others, names.node(o))
	}
	// When did it finish? The next cycle that completed shows when it
	// finished again, having begun once free; each cycle left incomplete
	// in between adds its quantum. (Its finish, not its wakeup: the
	// wakeup it stamps there is now and then its signal, stamped while it
	// was still in the late cycle.)
	var over time.Duration
	for j := i + 1; j < len(recs); j++ {
		switch k[j] {
		case forced:
			continue
		case incomplete:
			over += recs[j].Quantum
			continue
		case clean, lateDone:
			// A finish at or before the cycle's start (written as 0) is
			// a stale stamp: no overrun to tell.
			if g, ok := recs[j].follower(f.Slot); ok && g.ID == f.ID && g.Status == Finished && g.Finish > 0 {
				c.Overrun = over + g.Finish
			}
		}
		break
	}
	return c
}

func chargeLateDone(r Record, names Names) Charge {
	var last *Follower
	for i := range r.Followers {
		f := &r.Followers[i]
		if f.Status == Finished && (last == nil || f.Finish > last.Finish) {
			last = f
		}
	}
	if last == nil || last.Finish <= r.Quantum {
		return Charge{Line: r.Line, Node: names.Driver, Driver: true, Why: DriverLate,
			Signal: -1, Awake: -1, Finish: -1, Quantum: r.Quantum, Overrun: r.Busy - r.Quantum}
	}
	c := Charge{Line: r.Line, Node: names.node(*last), Why: FinishedLate, Signal: last.Signal, Awake: last.Awake,
		Finish: last.Finish, Quantum: r.Quantum, Overrun: last.Finish - r.Quantum}
	if last.Awake-last.Signal > last.Finish-last.Awake {
		c.Why = WokeLate
	}
	return c
}

// Count is the late cycles charged to one node for one reason.
type Count struct {
	Node       Node
	Driver     bool
	Why        string
	N          int
	MaxOverrun time.Duration // -1 when none of them says
}

// ByNode groups the late cycles by node and reason, most first.
func (r Report) ByNode() []Count {
	var out []Count
	idx := map[string]int{}
	for _, c := range r.Late {
		key := fmt.Sprintf("%d\x00%s\x00%t\x00%s", c.Node.ID, c.Node.Name, c.Driver, c.Why)
		i, ok := idx[key]
		if !ok {
			i = len(out)
			idx[key] = i
			out = append(out, Count{Node: c.Node, Driver: c.Driver, Why: c.Why, MaxOverrun: -1})
		}
		out[i].N++
		if c.Overrun > out[i].MaxOverrun {
			out[i].MaxOverrun = c.Overrun
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].N > out[b].N })
	return out
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// String is the report in a line: "12 late cycles of 3750: 11 'slow' (ran
// past its deadline, finished up to 3.1 ms after it), 1 the driver (...)".
func (r Report) String() string {
	if len(r.Late) == 0 {
		return fmt.Sprintf("no late cycle of %d", r.Cycles)
	}
	var parts []string
	for _, c := range r.ByNode() {
		who := fmt.Sprintf("'%s'", c.Node)
		if c.Driver {
			who = fmt.Sprintf("the driver (node %d)", c.Node.ID)
		}
		s := fmt.Sprintf("%d %s (%s", c.N, who, c.Why)
		if c.MaxOverrun >= 0 {
			s += ", finished up to " + ms(c.MaxOverrun) + " after it"
		}
		parts = append(parts, s+")")
	}
	cycles := "cycles"
	if len(r.Late) == 1 {
		cycles = "cycle"
	}
	return fmt.Sprintf("%d late %s of %d: %s", len(r.Late), cycles, r.Cycles, strings.Join(parts, ", "))
}
