package main

import (
	"errors"
	"flag"

	"latencytest/runner"
)

// loadSet is idle-only until the stressor registry lands.
type loadSet struct{}

func newLoads(fs *flag.FlagSet) loadSet                  { return loadSet{} }
func (l loadSet) names() []string                        { return nil }
func (l loadSet) validate(name string) error             { return nil }
func (l loadSet) start(name string) (runner.Load, error) { return nil, errors.New("no stressors yet") }
