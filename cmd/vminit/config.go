//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"time"
)

// Where the initramfs keeps things; scripts/vmtest puts them there.
const (
	configFile = "/etc/vmtest.json"
	testsDir   = "/tests"
)

// config is /etc/vmtest.json, written by scripts/vmtest.
type config struct {
	// Run is passed to every test binary as -test.run.
	Run string `json:"run"`
	// Tests maps a binary's base name to the -test.run it gets when Run
	// is empty: the tests of the package's vm-tagged files, so that its
	// ordinary unit tests, which ran on the host, are not run again.
	Tests map[string]string `json:"tests"`
	// Bench, when set, runs the benchmarks it matches instead of the
	// tests, each once: the VM's measurements (docs/benchmarks.md).
	Bench string `json:"bench"`
	// Timeout bounds each test binary (a time.ParseDuration string).
	Timeout string `json:"timeout"`
	// Env is more environment for the tests: what the script knows of
	// this VM that a test cannot find out itself, such as why a module
	// the tests expect is not there (VMTEST_NO_SND_DUMMY on a kernel
	// built without snd-dummy; docs/vmtest.md).
	Env map[string]string `json:"env"`

	timeout time.Duration
	// grace is how long after its own -test.timeout a test binary (and
	// whatever it started) is killed.
	grace time.Duration
}

const (
	defaultTimeout = 5 * time.Minute
	defaultGrace   = 30 * time.Second
)

// readConfig reads the config file; a missing file means the defaults.
func readConfig(path string) (config, error) {
	var c config
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return c, fmt.Errorf("config: %w", err)
	default:
		if err := json.Unmarshal(b, &c); err != nil {
			return c, fmt.Errorf("config %s: %w", path, err)
		}
	}
	c.timeout, c.grace = defaultTimeout, defaultGrace
	if c.Timeout != "" {
		d, err := time.ParseDuration(c.Timeout)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("config %s: timeout %q is not a positive duration", path, c.Timeout)
		}
		c.timeout = d
	}
	for k := range c.Env {
		if !envName.MatchString(k) {
			return c, fmt.Errorf("config %s: env %q is not a VMTEST_ variable name", path, k)
		}
	}
	for _, re := range append([]string{c.Run, c.Bench}, mapValues(c.Tests)...) {
		if _, err := regexp.Compile(re); err != nil {
			return c, fmt.Errorf("config %s: -run %q: %w", path, re, err)
		}
	}
	return c, nil
}

// envName is what Env may set: the harness's own variables, never PATH
// or the like that the VM's environment table in docs/vmtest.md fixes.
var envName = regexp.MustCompile(`^VMTEST_[A-Z0-9_]+$`)

func mapValues(m map[string]string) []string {
	var v []string
	for _, s := range m {
		v = append(v, s)
	}
	return v
}
