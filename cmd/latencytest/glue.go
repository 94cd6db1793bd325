package main

import "latencytest/rundata"

// checks returns the system check run at the start of every run.
func checks() func() []rundata.Finding { return nil }

// render returns the report renderer run at the end of every run.
func render() func(dir string) error { return nil }
