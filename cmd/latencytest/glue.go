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
	var tasks []rundata.RTTask // from the findings' walk of /proc, when it came first
	findings := func() []rundata.Finding {
		fs, ts := check.Audit(o)
		tasks = ts
		return fs
	}
	rtTasks := func() []rundata.RTTask {
		if tasks == nil {
			return check.RTTasks(o)
		}
		return tasks
	}
	return findings, rtTasks
}

// render returns the report renderer run at the end of every run.
func render() func(dir string) error { return report.Render }
