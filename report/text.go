package report

import (
	"io"

	"latencytest/rundata"
)

// Text writes the closing block of the run in dir as `run` printed it
// (rundata.WriteSummary): the answer first, then the phases' lines, for a
// mail. A phase of a killed run is recovered from its samples file, as
// the page has it.
func Text(dir string, w io.Writer) error {
	rd, err := load(dir)
	if err != nil {
		return err
	}
	r := *rd.run
	r.Phases = make([]rundata.Phase, len(rd.phases))
	acts := map[int]float64{}
	var spikes []rundata.Spike
	for i, pd := range rd.phases {
		r.Phases[i], acts[i] = pd.Phase, pd.act
		spikes = append(spikes, rd.spikes[i]...)
	}
	rundata.WriteSummary(w, &r, acts, spikes)
	return nil
}
