package report

import (
	"reflect"
	"strings"
	"testing"

	"latencytest/rundata"
)

func testSpikes() []rundata.Spike {
	return []rundata.Spike{
		{Period: 10, CPU: 1, LatencyNS: 6e6, Causes: []rundata.Cause{{Kind: rundata.CauseThread, Name: "kworker/1:2", Policy: "SCHED_OTHER", NS: 4e6}, {Kind: rundata.CauseIRQ, Name: "IRQ 24 ahci", NS: 2e6}},
			Strip: []rundata.Slice{{Kind: rundata.CauseIRQ, Name: "IRQ 24 ahci", NS: 2e6}, {Kind: rundata.CauseThread, Name: "kworker/1:2", StartNS: 2e6, NS: 4e6}}},
		{Period: 20, CPU: 1, LatencyNS: 4e6, Causes: []rundata.Cause{{Kind: rundata.CauseSoftIRQ, Name: "NET_RX", NS: 1e6}}, UnexplainedNS: 3e6},
	}
}

func TestCulpritRows(t *testing.T) {
	got := culpritRows(testSpikes())
	want := []culpritRow{
		{Kind: "thread", Label: "kworker/1:2 (SCHED_OTHER)", Share: "40 %", MS: "4.00"},
		{Kind: "", Label: "unexplained (no trace event accounts for it)", Share: "30 %", MS: "3.00"},
		{Kind: "irq", Label: "IRQ 24 ahci", Share: "20 %", MS: "2.00"},
		{Kind: "softirq", Label: "NET_RX softirq", Share: "10 %", MS: "1.00"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("culpritRows\n %+v\nwant %+v", got, want)
	}
}

func TestSpikeFigure(t *testing.T) {
	svg, err := spikeFigure(testSpikes(), 8)
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	for _, want := range []string{"<svg", "period 10, CPU 1", "period 20, CPU 1", "unexplained", "held the CPU"} {
		if !strings.Contains(s, want) {
			t.Errorf("figure lacks %q", want)
		}
	}
	if svg, _ := spikeFigure(nil, 8); svg != "" {
		t.Error("a figure without spikes")
	}
}
