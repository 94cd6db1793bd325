package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"regexp"
	"strings"

	"latencytest/internal/badinput"
	"latencytest/internal/child"
	"latencytest/runner"
	"latencytest/stress"
)

// loadSet connects `run` to the stressor registry: its flags, the phase
// names it knows, and how a phase's load is started.
type loadSet struct {
	reg  *stress.Registry
	fs   *flag.FlagSet
	args func(name string) []string
	// children holds the run's child processes, for a second Ctrl-C.
	children *child.Set
}

func newLoads(fs *flag.FlagSet) loadSet {
	reg := stress.NewRegistry()
	return loadSet{reg: reg, fs: fs, args: reg.RunFlags(fs), children: &child.Set{}}
}

func (l loadSet) names() []string { return l.reg.Names() }

// validate checks the phase's stressor flags as `run` got them. The
// stressor names its own flags (--dir); the user typed run's (--disk-dir),
// so the message is put in run's words.
func (l loadSet) validate(name string) error {
	err := l.reg.Validate(name, l.args(name))
	if err == nil {
		return nil
	}
	prefix, _, _ := strings.Cut(name, "-")
	msg := stressFlag.ReplaceAllStringFunc(err.Error(), func(f string) string {
		if l.fs.Lookup(prefix+"-"+f[2:]) != nil {
			return "--" + prefix + "-" + f[2:]
		}
		return f
	})
	if badinput.Is(err) {
		return badinput.New(msg)
	}
	return errors.New(msg)
}

// stressFlag matches a flag named in a stressor's message.
var stressFlag = regexp.MustCompile(`--[a-z][a-z0-9-]*`)

func (l loadSet) start(ctx context.Context, name string, cpus []int) (runner.Load, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p, err := stress.Start(ctx, exe, name, l.args(name), l.children, cpus)
	if err != nil {
		return nil, err
	}
	return p, nil
}
