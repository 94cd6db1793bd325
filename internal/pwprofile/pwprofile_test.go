package pwprofile

import (
	"os"
	"strings"
	"testing"
	"time"
)

const us = time.Microsecond

// load reads a profile recorded from pipewire 0.3.65 on its Dummy-Driver
// at 256/48000 (5.333 ms cycles) with a JACK client (pw-jack) that stalls
// every few hundred cycles: testdata/NAME.log, .stdout (pw-profiler's
// standard output) and, where kept, .Timing3.plot.
func load(t *testing.T, name string) Profile {
	t.Helper()
	f, err := os.Open("testdata/" + name + ".log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := os.ReadFile("testdata/" + name + ".stdout")
	if err != nil {
		t.Fatal(err)
	}
	plot, _ := os.ReadFile("testdata/" + name + ".Timing3.plot")
	return Profile{Records: recs, Names: ParseNames(string(stdout), string(plot))}
}

func TestParseRecorded(t *testing.T) {
	p := load(t, "stall12ms")
	if len(p.Records) != 15 {
		t.Fatalf("%d records, want 15", len(p.Records))
	}
	r := p.Records[0]
	// 5344	91	0	5333	31	1	61	65	60	4	3	0	35	10	37	41	27	4	3	0
	want := Record{Line: 1, Period: 5344 * us, Busy: 91 * us, Delay: 0, Quantum: 5333 * us, Followers: []Follower{
		{Slot: 0, ID: 31, Signal: 1 * us, Awake: 61 * us, Finish: 65 * us, Status: Finished},
		{Slot: 1, ID: 35, Signal: 10 * us, Awake: 37 * us, Finish: 41 * us, Status: Finished},
	}}
	if got := r; got.Line != want.Line || got.Period != want.Period || got.Busy != want.Busy || got.Quantum != want.Quantum ||
		len(got.Followers) != 2 || got.Followers[0] != want.Followers[0] || got.Followers[1] != want.Followers[1] {
		t.Errorf("record 1:\n got %+v\nwant %+v", got, want)
	}
	// The incomplete cycle: the driver's period 0, slow (35) still awake.
	inc := p.Records[4]
	if inc.Period != 0 || inc.Busy != 5331*us || inc.Followers[1].Status != Awake || inc.Followers[1].Signal != 5342*us {
		t.Errorf("record 5: %+v", inc)
	}
	if p.Names.Driver.ID != 27 || p.Names.Followers[0] != (Node{31, "steady"}) || p.Names.Followers[1] != (Node{35, "slow"}) {
		t.Errorf("names %+v", p.Names)
	}
}

func TestParseFormats(t *testing.T) {
	blank := strings.Repeat(" \t", 8)
	for _, tc := range []struct {
		name, line string
		want       Record
	}{
		// Newer pw-profiler writes three decimals.
		{"decimal", "5333.125\t61.500\t0.000\t5333.333\t31\t1.250\t29.000\t33.000\t27.750\t4.000\t3\t0\t" + blank,
			Record{Line: 1, Period: 5333125, Busy: 61500, Quantum: 5333333, Followers: []Follower{{0, 31, 1250, 29000, 33000, Finished}}}},
		// A follower not triggered this cycle is blank, the next one is in its own slot.
		{"gap", "5330\t51\t0\t5333\t" + blank + "35\t9\t31\t35\t22\t4\t3\t0\t",
			Record{Line: 1, Period: 5330 * us, Busy: 51 * us, Quantum: 5333 * us, Followers: []Follower{{1, 35, 9 * us, 31 * us, 35 * us, Finished}}}},
		{"driver only", "5330\t51\t0\t5333\t", Record{Line: 1, Period: 5330 * us, Busy: 51 * us, Quantum: 5333 * us}},
	} {
		recs, err := Parse(strings.NewReader(tc.line + "\n"))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(recs) != 1 {
			t.Errorf("%s: %d records", tc.name, len(recs))
			continue
		}
		got := recs[0]
		ok := got.Period == tc.want.Period && got.Busy == tc.want.Busy && got.Quantum == tc.want.Quantum && len(got.Followers) == len(tc.want.Followers)
		for i := 0; ok && i < len(got.Followers); i++ {
			ok = got.Followers[i] == tc.want.Followers[i]
		}
		if !ok {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
	for _, bad := range []string{
		"5330\t51\t0",                                  // too few driver columns
		"5330\t51\t0\t5333\t31\t1\t29\t",               // a follower cut short
		"5330\tx\t0\t5333\t",                           // not a number
		"5330\t51\t0\t5333\tid\t1\t2\t3\t1\t1\t3\t0\t", // the node id
		"5330\t51\t0\t5333\t31\t1\t2\t3\t1\t1\tdone\t0\t",
		"NaN\t51\t0\t5333\t",
	} {
		if _, err := Parse(strings.NewReader(bad + "\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: err %v, want one naming line 1", bad, err)
		}
	}
}

func TestParseNamesPlotAlone(t *testing.T) {
	// Newer pw-profiler logs its followers only at the info level: the
	// plot script it writes at the end names them, slash in a name kept.
	n := ParseNames(`plot "profiler.log" using 1 title "Audio period" with lines, "profiler.log" using 8 title "a/b/31" with lines, "profiler.log" using 24 title "slow/35" with lines`)
	if n.Followers[0] != (Node{31, "a/b"}) || n.Followers[2] != (Node{35, "slow"}) || len(n.Followers) != 2 {
		t.Errorf("%+v", n.Followers)
	}
}

// An 8 ms stall in a 5.333 ms cycle misses one deadline: the incomplete
// record, then the forced completion (not a cycle of its own), then the
// next cycle, which the client finished 2.729 ms after the deadline.
func TestAccountOneMissedDeadline(t *testing.T) {
	p := load(t, "stall8ms")
	rep := p.Account()
	if rep.Cycles != len(p.Records)-1 {
		t.Errorf("%d cycles of %d records, want one less (the forced completion)", rep.Cycles, len(p.Records))
	}
	if len(rep.Late) != 1 {
		t.Fatalf("%d late cycles, want 1: %+v", len(rep.Late), rep.Late)
	}
	c := rep.Late[0]
	want := Charge{Line: 7, Node: Node{31, "slow"}, Why: RanPast, Signal: 1 * us, Awake: 32 * us, Finish: -1,
		Quantum: 5333 * us, Overrun: 2729 * us}
	if c.Line != want.Line || c.Node != want.Node || c.Why != want.Why || c.Signal != want.Signal || c.Awake != want.Awake ||
		c.Finish != want.Finish || c.Quantum != want.Quantum || c.Overrun != want.Overrun || c.Driver || len(c.Others) != 0 {
		t.Errorf("\n got %+v\nwant %+v", c, want)
	}
	if s, want := rep.String(), "1 late cycle of 15: 1 'slow' (ran past its deadline, finished up to 2.7 ms after it)"; s != want {
		t.Errorf("String:\n got %s\nwant %s", s, want)
	}
}

// A 12 ms stall misses two deadlines: in the first the client ran past
// it, in the second it had not woken (it was still in the first); the
// steady client beside it, which finished every cycle, is charged none.
func TestAccountTwoMissedDeadlines(t *testing.T) {
	rep := load(t, "stall12ms").Account()
	if len(rep.Late) != 2 {
		t.Fatalf("%d late cycles, want 2: %+v", len(rep.Late), rep.Late)
	}
	a, b := rep.Late[0], rep.Late[1]
	if a.Node.Name != "slow" || a.Why != RanPast || a.Awake != 40*us || a.Overrun != 5333*us+1575*us {
		t.Errorf("first: %+v", a)
	}
	if b.Node.Name != "slow" || b.Why != WokeLate || b.Signal != 7*us || b.Awake != -1 || b.Overrun != 1575*us {
		t.Errorf("second: %+v", b)
	}
	want := "2 late cycles of 13: 1 'slow' (ran past its deadline, finished up to 6.9 ms after it), 1 'slow' (woke late, finished up to 1.6 ms after it)"
	if s := rep.String(); s != want {
		t.Errorf("String:\n got %s\nwant %s", s, want)
	}
}

// A hiccup of the whole machine (both clients and the server held up
// 43 ms): the driver's own late cycle is charged to the driver, the
// cycles after it to whichever client had not woken.
func TestAccountHiccup(t *testing.T) {
	rep := load(t, "hiccup").Account()
	if len(rep.Late) == 0 || !rep.Late[0].Driver || rep.Late[0].Why != DriverLate || rep.Late[0].Node.ID != 27 {
		t.Fatalf("first charge %+v, want the driver", rep.Late)
	}
	for _, c := range rep.Late[1:] {
		if c.Driver || c.Why != WokeLate || (c.Node.Name != "slow" && c.Node.Name != "steady") {
			t.Errorf("%+v", c)
		}
	}
	if !strings.Contains(rep.String(), "1 the driver (node 27) (the driver's cycle ran over 1.3 quanta)") {
		t.Errorf("String: %s", rep)
	}
}

// The rule on synthetic records: what each kind of late cycle is charged to.
func TestAccountRule(t *testing.T) {
	q := 5333 * us
	names := Names{Driver: Node{ID: 27}, Followers: map[int]Node{0: {31, "a"}, 1: {35, "b"}, 2: {40, "c"}}}
	fin := func(slot, id int, s, a, f time.Duration) Follower { return Follower{slot, id, s, a, f, Finished} }
	clean := Record{Period: q, Busy: 60 * us, Quantum: q, Followers: []Follower{fin(0, 31, 1*us, 20*us, 30*us), fin(1, 35, 31*us, 40*us, 50*us)}}
	for _, tc := range []struct {
		name string
		recs []Record
		want []Charge // Line, Node, Driver, Why, Signal, Awake, Finish, Overrun, Others compared
	}{
		{"clean", []Record{clean, clean, clean}, nil},
		{"completed late, ran long", []Record{clean, {Period: q, Busy: q + 900*us, Quantum: q, Followers: []Follower{
			fin(0, 31, 1*us, 20*us, 30*us), fin(1, 35, 31*us, 40*us, q+800*us)}}, clean},
			[]Charge{{Line: 2, Node: Node{35, "b"}, Why: FinishedLate, Signal: 31 * us, Awake: 40 * us, Finish: q + 800*us, Overrun: 800 * us}}},
		{"completed late, woke late", []Record{clean, {Period: q, Busy: q + 900*us, Quantum: q, Followers: []Follower{
			fin(0, 31, 1*us, q, q+100*us), fin(1, 35, 31*us, 40*us, 50*us)}}},
			[]Charge{{Line: 2, Node: Node{31, "a"}, Why: WokeLate, Signal: 1 * us, Awake: q, Finish: q + 100*us, Overrun: 100 * us}}},
		{"completed late, no follower after the deadline", []Record{{Period: q, Busy: q + 900*us, Quantum: q, Followers: []Follower{fin(0, 31, 1*us, 20*us, 30*us)}}},
			[]Charge{{Line: 1, Node: Node{ID: 27}, Driver: true, Why: DriverLate, Signal: -1, Awake: -1, Finish: -1, Overrun: 900 * us}}},
		{"driver clamped", []Record{clean, {Period: q * 14 / 10, Busy: q * 14 / 10, Quantum: q, Followers: clean.Followers}, clean},
			[]Charge{{Line: 2, Node: Node{ID: 27}, Driver: true, Why: DriverLate, Signal: -1, Awake: -1, Finish: -1, Overrun: -1}}},
		// Two unfinished: the awake one is charged, the one not woken is
		// named beside it; times rebased from the previous cycle's
		// signal; the forced completion after it is not a cycle; the next
		// cycle shows b finished 2.01 ms after the deadline.
		{"incomplete", []Record{clean,
			{Period: 0, Busy: q, Quantum: q, Followers: []Follower{{0, 31, q + 1*us, q + 1*us, 0, Triggered}, {1, 35, q + 2*us, q + 30*us, 9 * us, Awake}, fin(2, 40, q+1*us, q+5*us, q+9*us)}},
			{Period: q, Busy: q, Quantum: q, Followers: []Follower{{0, 31, 1 * us, 1 * us, 0, Triggered}, {1, 35, 2 * us, 30 * us, 0, Awake}}},
			{Period: q, Busy: 2100 * us, Quantum: q, Followers: []Follower{fin(0, 31, 1*us, 10*us, 20*us), fin(1, 35, 3*us, 2000*us, 2010*us)}},
			clean},
			[]Charge{{Line: 2, Node: Node{35, "b"}, Why: RanPast, Signal: 2 * us, Awake: 30 * us, Finish: -1, Overrun: 2010 * us, Others: []Node{{31, "a"}}}}},
		// Not woken at the deadline, and still not at the next one: two
		// late cycles, the first's overrun a quantum longer.
		{"incomplete twice", []Record{clean,
			{Period: 0, Busy: q, Quantum: q, Followers: []Follower{{0, 31, q + 1*us, 0, 0, Triggered}}},
			{Period: q, Busy: q, Quantum: q, Followers: []Follower{{0, 31, 1 * us, 0, 0, Triggered}}},
			{Period: 0, Busy: q, Quantum: q, Followers: []Follower{{0, 31, q + 1*us, 0, 0, Triggered}}},
			{Period: q, Busy: q, Quantum: q, Followers: []Follower{{0, 31, 1 * us, 0, 0, Triggered}}},
			{Period: q, Busy: 500 * us, Quantum: q, Followers: []Follower{fin(0, 31, 1*us, 400*us, 410*us)}}},
			[]Charge{
				{Line: 2, Node: Node{31, "a"}, Why: WokeLate, Signal: 1 * us, Awake: -1, Finish: -1, Overrun: q + 410*us},
				{Line: 4, Node: Node{31, "a"}, Why: WokeLate, Signal: 1 * us, Awake: -1, Finish: -1, Overrun: 410 * us}}},
		// The late node finished between the incomplete record and the
		// forced completion: the completion, a quantum and more after
		// the late cycle's signal, is still not a late cycle of its own.
		{"finished before the forced completion", []Record{clean,
			{Period: 0, Busy: q, Quantum: q, Followers: []Follower{{0, 31, q + 1*us, q + 20*us, 0, Awake}}},
			{Period: q, Busy: q + 30*us, Quantum: q, Followers: []Follower{fin(0, 31, 1*us, 20*us, q+25*us)}},
			{Period: q, Busy: 100 * us, Quantum: q, Followers: []Follower{fin(0, 31, 1*us, 50*us, 60*us)}}},
			[]Charge{{Line: 2, Node: Node{31, "a"}, Why: RanPast, Signal: 1 * us, Awake: 20 * us, Finish: -1, Overrun: 60 * us}}},
		// The next cycle's finish stamped at or before its start
		// (written 0): stale, no overrun.
		{"stale finish", []Record{clean,
			{Period: 0, Busy: q, Quantum: q, Followers: []Follower{{0, 31, q + 1*us, 0, 0, Triggered}}},
			{Period: q, Busy: q, Quantum: q, Followers: []Follower{{0, 31, 1 * us, 0, 0, Triggered}}},
			{Period: q, Busy: 50 * us, Quantum: q, Followers: []Follower{fin(0, 31, 0, 0, 0)}}},
			[]Charge{{Line: 2, Node: Node{31, "a"}, Why: WokeLate, Signal: 1 * us, Awake: -1, Finish: -1, Overrun: -1}}},
		// A node unknown to the names is named by its id; one in a slot
		// under another id (a node gone and another come) too.
		{"unnamed", []Record{{Period: 0, Busy: q, Quantum: q, Followers: []Follower{{5, 77, q + 1*us, q + 2*us, 0, Awake}}}, clean},
			[]Charge{{Line: 1, Node: Node{ID: 77}, Why: RanPast, Signal: 1 * us, Awake: 2 * us, Finish: -1, Overrun: -1}}},
	} {
		recs := append([]Record(nil), tc.recs...)
		for i := range recs {
			recs[i].Line = i + 1
		}
		got := Account(recs, names).Late
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d charges, want %d: %+v", tc.name, len(got), len(tc.want), got)
			continue
		}
		for i, w := range tc.want {
			g := got[i]
			if g.Line != w.Line || g.Node != w.Node || g.Driver != w.Driver || g.Why != w.Why || g.Signal != w.Signal ||
				g.Awake != w.Awake || g.Finish != w.Finish || g.Overrun != w.Overrun || len(g.Others) != len(w.Others) ||
				(len(w.Others) > 0 && g.Others[0] != w.Others[0]) || g.Quantum != q {
				t.Errorf("%s: charge %d\n got %+v\nwant %+v", tc.name, i, g, w)
			}
		}
	}
}

func TestReportString(t *testing.T) {
	if s := (Report{Cycles: 100}).String(); s != "no late cycle of 100" {
		t.Error(s)
	}
	r := Report{Cycles: 3750, Driver: Node{ID: 27}}
	for i := 0; i < 11; i++ {
		r.Late = append(r.Late, Charge{Node: Node{40, "slow-client"}, Why: RanPast, Overrun: time.Duration(1+i) * 280 * us})
	}
	r.Late = append(r.Late, Charge{Node: Node{41, "latencytest"}, Why: WokeLate, Overrun: 400 * us},
		Charge{Node: Node{ID: 27}, Driver: true, Why: DriverLate, Overrun: -1})
	want := "13 late cycles of 3750: 11 'slow-client' (ran past its deadline, finished up to 3.1 ms after it), " +
		"1 'latencytest' (woke late, finished up to 0.4 ms after it), 1 the driver (node 27) (the driver's cycle ran over 1.3 quanta)"
	if s := r.String(); s != want {
		t.Errorf("\n got %s\nwant %s", s, want)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"stall8ms", "stall12ms", "hiccup"} {
		b, err := os.ReadFile("testdata/" + name + ".log")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		recs, err := Parse(strings.NewReader(s))
		if err != nil {
			return
		}
		rep := Account(recs, ParseNames(s))
		if len(rep.Late) > rep.Cycles || rep.Cycles > len(recs) {
			t.Fatalf("%d late of %d cycles from %d records", len(rep.Late), rep.Cycles, len(recs))
		}
		_ = rep.String()
	})
}
