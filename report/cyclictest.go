package report

import (
	"math"

	"latencytest/cyclictest"
	"latencytest/rundata"
)

// ctPhase turns a cyclictest result into a phase for the tables. What
// cyclictest does not measure (the CPU loop, xruns) is marked unknown, and
// so is a "within" share its histogram cannot tell (overflowed values
// maybe below the limit).
func ctPhase(name string, c *cyclictest.Result) *phaseData {
	h := c.Hist
	p := &phaseData{hist: h, noLoop: true}
	p.Name = name
	p.Periods = int64(h.Count)
	rundata.FillPhase(&p.Phase, h)
	if !c.Within100US {
		p.WithinUS100 = math.NaN()
	}
	if !c.Within1MS {
		p.WithinMS1 = math.NaN()
	}
	return p
}
