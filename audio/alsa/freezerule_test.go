//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// The rule the comparisons with aplay decide by (freeze_vm_test.go has
// the witness that counts the machine's stops); here so that the host's
// go test checks it.

// freeze is one late wakeup of a witness: the CPU was held from due to
// woke (CLOCK_MONOTONIC ns).
type freeze struct {
	cpu       int
	due, woke int64
}

func (f freeze) length() int64 { return f.woke - f.due }

// witnessLate is the lateness from which a witness wakeup is recorded.
const witnessLate = 500 * time.Microsecond

// xrunAt is one xrun of a player, as the test saw it: when it was
// noticed (aplay's line read, latencytest's wakeup) and its length.
type xrunAt struct {
	at int64 // CLOCK_MONOTONIC ns
	ms float64
}

// explainedBy says whether the machine's stops explain an xrun noticed
// at x.at by a player with bufNS queued and periodNS per period: one CPU
// stopped for at least half the player's slack (the buffer less the
// period it refills: how late a wakeup may be), in one stop or several,
// within the buffer's time before the xrun was noticed, plus 20 ms for
// the notice itself (aplay's line through a pipe). Less cannot starve the
// buffer on its own. It returns how long that CPU was stopped.
func explainedBy(x xrunAt, fs []freeze, bufNS, periodNS int64) (int64, bool) {
	minLen := max((bufNS-periodNS)/2, int64(witnessLate))
	from, to := x.at-bufNS-periodNS-int64(20*time.Millisecond), x.at
	stopped := map[int]int64{}
	longest := int64(0)
	for _, f := range fs {
		if lo, hi := max(f.due, from), min(f.woke, to); hi > lo {
			stopped[f.cpu] += hi - lo
			longest = max(longest, stopped[f.cpu])
		}
	}
	return longest, longest >= minLen
}

// unexplained splits xs into those no stop of fs explains and the rest.
func unexplained(xs []xrunAt, fs []freeze, bufNS, periodNS int64) (left []xrunAt, explained int) {
	for _, x := range xs {
		if _, ok := explainedBy(x, fs, bufNS, periodNS); ok {
			explained++
			continue
		}
		left = append(left, x)
	}
	return left, explained
}

// freezeSummary says how many stops, and the longest, fell between from
// and to.
func freezeSummary(fs []freeze, from, to int64) string {
	n, longest := 0, int64(0)
	for _, f := range fs {
		if f.woke >= from && f.due <= to {
			n++
			longest = max(longest, f.length())
		}
	}
	return fmt.Sprintf("%d stops of the machine ≥ %v, longest %.1f ms", n, witnessLate, float64(longest)/1e6)
}

// countsAgree is the rule the comparisons decide by, on the xruns the
// machine's stops do not explain: latencytest's count n against the
// reference's counts a and b on the same boot, before and after it.
// Where the reference had no xrun at all, twice (stable: the machine did
// not drop it once), latencytest must have none the stops do not
// explain: exact. Otherwise n must lie within the reference's
// boot-to-boot spread: the range of a and b widened by its own width and
// by three Poisson standard deviations of its ends, a count of 0 taken
// as 1 (counts of random events: two runs alike by chance are no
// narrower truth, and a 0 observed is a mean of up to 3 at 95 %; the
// witness, sampling each CPU every millisecond, misses some stops).
func countsAgree(n, a, b int, stable bool) (ok bool, band string) {
	lo, hi := min(a, b), max(a, b)
	if stable {
		return n == 0, "0 (the reference had no xrun at all, twice)"
	}
	w := hi - lo
	l := lo - w - int(math.Ceil(3*math.Sqrt(float64(lo))))
	h := hi + w + int(math.Ceil(3*math.Sqrt(float64(max(hi, 1)))))
	l = max(l, 0)
	return n >= l && n <= h, fmt.Sprintf("%d to %d (the reference's %d and %d, widened by their spread and 3 σ)", l, h, a, b)
}

func TestExplainedBy(t *testing.T) {
	const ms = int64(time.Millisecond)
	buf, period := 16*ms/3*2, 16*ms/3 // 2×256 at 48 kHz: slack 5.33 ms, half of it 2.67 ms
	x := xrunAt{at: 1000 * ms}
	for _, tc := range []struct {
		name string
		fs   []freeze
		want bool
	}{
		{"no stop", nil, false},
		{"one stop of 3 ms just before", []freeze{{0, 990 * ms, 993 * ms}}, true},
		{"a stop too short", []freeze{{0, 990 * ms, 991 * ms}}, false},
		{"three stops of 1 ms on one CPU add up", []freeze{{1, 980 * ms, 981 * ms}, {1, 985 * ms, 986 * ms}, {1, 990 * ms, 991 * ms}}, true},
		{"1 ms on each of two CPUs does not", []freeze{{0, 985 * ms, 986 * ms}, {1, 990 * ms, 992 * ms}}, false},
		{"a long stop long before", []freeze{{0, 900 * ms, 950 * ms}}, false},
		{"a stop after the xrun", []freeze{{0, 1001 * ms, 1010 * ms}}, false},
		{"a stop overlapping the window's start counts its part inside", []freeze{{0, 950 * ms, 968 * ms}}, true},
	} {
		if _, got := explainedBy(x, tc.fs, buf, period); got != tc.want {
			t.Errorf("%s: explained %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCountsAgree(t *testing.T) {
	for _, tc := range []struct {
		n, a, b int
		stable  bool
		want    bool
	}{
		{0, 0, 0, true, true},
		{1, 0, 0, true, false}, // stable reference: exact
		{4939, 0, 0, true, false},
		{1, 0, 0, false, true}, // the machine dropped aplay too, all explained: a 0 seen is no 0 known
		{3, 0, 0, false, true},
		{4, 0, 0, false, false},
		{5, 3, 8, false, true},
		{25, 3, 8, false, false}, // 8 + 5 + 9 = 22
		{22, 3, 8, false, true},
		{0, 3, 8, false, true}, // 3 - 5 - 6 < 0
		{129, 174, 298, false, true},
		{9, 174, 298, false, false},
	} {
		if got, band := countsAgree(tc.n, tc.a, tc.b, tc.stable); got != tc.want {
			t.Errorf("countsAgree(%d, %d, %d, %v) = %v (%s), want %v", tc.n, tc.a, tc.b, tc.stable, got, band, tc.want)
		}
	}
}
