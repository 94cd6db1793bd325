package main

import (
	"latencytest/check"
	"latencytest/report"
	"latencytest/rundata"
)

// checks returns the system check and the real-time task audit run at the
// start of every run, judged for the run's audio thread, so that run.json
// and the report say under which configuration it measured.
func checks(rt rundata.RTParams) (func() []rundata.Finding, func() []rundata.RTTask) {
	o := check.Options{Prio: rt.Priority, CPUs: rt.Affinity}
	return func() []rundata.Finding { return check.RunFor(o) }, func() []rundata.RTTask { return check.RTTasks(o) }
}

// render returns the report renderer run at the end of every run.
func render() func(dir string) error { return report.Render }
