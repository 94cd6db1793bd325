package main

import (
	"latencytest/check"
	"latencytest/report"
	"latencytest/rundata"
)

// checks returns the system check run at the start of every run, so that
// run.json and the report say under which configuration it measured.
func checks() func() []rundata.Finding { return check.Run }

// render returns the report renderer run at the end of every run.
func render() func(dir string) error { return report.Render }
