package main

import (
	"context"
	"flag"
	"os"

	"latencytest/internal/child"
	"latencytest/runner"
	"latencytest/stress"
)

// loadSet connects `run` to the stressor registry: its flags, the phase
// names it knows, and how a phase's load is started.
type loadSet struct {
	reg   *stress.Registry
	loads *stress.RunLoads
	// children holds the run's child processes, for a second Ctrl-C.
	children *child.Set
}

func newLoads(fs *flag.FlagSet) loadSet {
	reg := stress.NewRegistry()
	return loadSet{reg: reg, loads: reg.RunFlags(fs), children: &child.Set{}}
}

func (l loadSet) names() []string { return l.reg.Names() }

func (l loadSet) start(ctx context.Context, name string, cpus []int) (runner.Load, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p, err := stress.Start(ctx, exe, name, l.loads.Args(name), l.children, cpus)
	if err != nil {
		return nil, err
	}
	return p, nil
}
