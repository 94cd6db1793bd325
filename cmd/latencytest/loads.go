package main

import (
	"flag"
	"os"

	"latencytest/runner"
	"latencytest/stress"
)

// loadSet connects `run` to the stressor registry: its flags, the phase
// names it knows, and how a phase's load is started.
type loadSet struct {
	reg  *stress.Registry
	args func(name string) []string
}

func newLoads(fs *flag.FlagSet) loadSet {
	reg := stress.NewRegistry()
	return loadSet{reg: reg, args: reg.RunFlags(fs)}
}

func (l loadSet) names() []string { return l.reg.Names() }

func (l loadSet) validate(name string) error { return l.reg.Validate(name, l.args(name)) }

func (l loadSet) start(name string) (runner.Load, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p, err := stress.Start(exe, name, l.args(name))
	if err != nil {
		return nil, err
	}
	return p, nil
}
