package rundata

import "slices"

// LinkStats is how far before each period's Boundary the card's link
// clock put its end (Sample.LinkBefore), over the periods that had both:
// positive when the link clock has the period end earlier than the grid
// (or the pointer update) that dated it. MedianNS is exact up to
// linkKeep periods, and past them the median of every 2^k-th period.
type LinkStats struct {
	Periods  int64 `json:"periods"`
	MinNS    int64 `json:"min_ns"`
	MedianNS int64 `json:"median_ns"`
	MaxNS    int64 `json:"max_ns"`
}

// linkKeep bounds the differences a phase keeps for the median: 512 kB.
const linkKeep = 1 << 16

// linkAcc accumulates Sample.LinkBefore.
type linkAcc struct {
	n        int64
	min, max int64
	kept     []int64 // every stride-th difference
	stride   int64
}

func (l *linkAcc) add(ns int64) {
	if l.n == 0 || ns < l.min {
		l.min = ns
	}
	if l.n == 0 || ns > l.max {
		l.max = ns
	}
	if l.stride == 0 {
		l.stride = 1
	}
	if l.n%l.stride == 0 {
		if len(l.kept) == linkKeep {
			// Keep every other one, and from now on every 2·stride-th.
			for i := 0; i < linkKeep/2; i++ {
				l.kept[i] = l.kept[2*i]
			}
			l.kept = l.kept[:linkKeep/2]
			l.stride *= 2
		}
		if l.n%l.stride == 0 {
			l.kept = append(l.kept, ns)
		}
	}
	l.n++
}

// stats is nil before the first difference.
func (l *linkAcc) stats() *LinkStats {
	if l.n == 0 {
		return nil
	}
	s := slices.Clone(l.kept)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return &LinkStats{Periods: l.n, MinNS: l.min, MedianNS: med, MaxNS: l.max}
}
