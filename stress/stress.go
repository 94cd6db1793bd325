// Package stress provides the loads latencytest measures under: X11
// redraws, /proc reads, disk write/copy/read, hackbench, fork storms, busy
// CPUs, memory churn, a loopback TCP flood and any user command.
//
// Each stressor is one file defining a Stressor; NewRegistry lists them
// (in the manner of node_exporter's collectors). A stressor always runs in
// a child process of its own, in a process group of its own, as
// `latencytest stress NAME [flags]`: that is how a user runs one load by
// hand, and it lets Start/Stop end every process the load started and
// remove every file it made, even when the load misbehaves.
package stress

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"latencytest/internal/badinput"
	"sort"
	"strings"
	"time"
)

// A Stressor is one kind of load.
type Stressor interface {
	Name() string
	// Description is one line for `latencytest stress -list`.
	Description() string
	// Flags defines the stressor's flags on fs, each named prefix and its
	// own name ("" for `latencytest stress NAME`: --groups; "hackbench-"
	// within run: --hackbench-groups), and returns the load they
	// configure. The load reads its settings only after fs is parsed, and
	// names its flags in its messages as they were defined.
	Flags(fs *flag.FlagSet, prefix string) Load
}

// A Load is a configured stressor, run inside the child process.
type Load interface {
	// Check rejects a bad configuration without starting anything; its
	// error is one line for the user, naming the flag and what is allowed.
	Check() error
	// Run loads the machine until ctx is done, counting its work on m and
	// calling m.Ready once the load is running. It returns only after every
	// process it started has ended and every file it made is removed.
	Run(ctx context.Context, m *Meter) error
}

// A positional load takes a bare argument as its tool does (hackbench's
// number of groups: `hackbench 6`); an error names it and what is
// allowed.
type positional interface {
	Positional(arg string) error
}

// A oneShot load does one measured unit of work when no --duration is
// given, as hackbench runs one round and prints its time.
type oneShot interface {
	RunOnce(ctx context.Context, stdout io.Writer) error
}

// flagPrefix is what a command puts before a stressor's flag names (see
// Stressor.Flags); a load keeps it to name its flags as the user typed
// them.
type flagPrefix string

// def is the name to define the flag called name with.
func (p flagPrefix) def(name string) string { return string(p) + name }

// name is the flag called name as the user types it, for messages.
func (p flagPrefix) name(name string) string { return "--" + string(p) + name }

// Registry holds the built-in stressors.
type Registry struct {
	byName map[string]Stressor
}

// NewRegistry returns a registry of every built-in stressor.
func NewRegistry() *Registry {
	r := &Registry{byName: map[string]Stressor{}}
	for _, s := range []Stressor{
		x11Stressor{},
		procStressor{},
		diskWriteStressor{},
		diskCopyStressor{},
		diskReadStressor{},
		hackbenchStressor{},
		forkStressor{},
		cpuStressor{},
		memoryStressor{},
		netStressor{},
		execStressor{},
	} {
		r.byName[s.Name()] = s
	}
	return r
}

// Names returns the stressors' names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the stressor called name.
func (r *Registry) Lookup(name string) (Stressor, bool) {
	s, ok := r.byName[name]
	return s, ok
}

// config is a parsed command line for one stressor.
type config struct {
	stressor    Stressor
	load        Load
	duration    time.Duration
	durationSet bool
	interval    time.Duration
}

// flagSet defines the flags of `latencytest stress NAME` for c's
// stressor: the one definition its parsing, its -h and latencytest's man
// page and completion are made from.
func (c *config) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("latencytest stress "+c.stressor.Name(), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // errors are one line; help is printed by parse
	fs.DurationVar(&c.duration, "duration", 0, "how long to run (0: until stopped)")
	fs.DurationVar(&c.interval, "interval", time.Second, "how often to print the throughput")
	c.load = c.stressor.Flags(fs, "")
	return fs
}

// FlagSet is the flag set of `latencytest stress NAME`, for its man page
// and completion; false when there is no stressor called name.
func (r *Registry) FlagSet(name string) (*flag.FlagSet, bool) {
	s, ok := r.Lookup(name)
	if !ok {
		return nil, false
	}
	return (&config{stressor: s}).flagSet(), true
}

// parse reads args as `latencytest stress NAME args` does. Help goes to
// usage; flag.ErrHelp comes back when it was asked for.
func (r *Registry) parse(name string, args []string, usage io.Writer) (*config, error) {
	s, ok := r.Lookup(name)
	if !ok {
		return nil, badinput.Errorf("stress: unknown stressor %q; allowed: %s", name, strings.Join(r.Names(), ", "))
	}
	c := &config{stressor: s}
	fs := c.flagSet()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(usage, "Usage: latencytest stress %s [flags]\n\n%s\n\nFlags:\n", name, s.Description())
			fs.SetOutput(usage)
			fs.PrintDefaults()
			return nil, err
		}
		return nil, badinput.Errorf("stress %s: %s", name, flagError(err))
	}
	for fs.NArg() > 0 {
		p, ok := c.load.(positional)
		if !ok {
			return nil, badinput.Errorf("stress %s: unexpected argument %q (flags only; see 'latencytest stress %s -h')", name, fs.Arg(0), name)
		}
		if err := p.Positional(fs.Arg(0)); err != nil {
			return nil, badinput.Errorf("stress %s: %v", name, err)
		}
		if err := fs.Parse(fs.Args()[1:]); err != nil { // the flags after it
			return nil, badinput.Errorf("stress %s: %s", name, flagError(err))
		}
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "duration" {
			c.durationSet = true
		}
	})
	if c.duration < 0 {
		return nil, badinput.Errorf("stress %s: --duration %v: want 0 (until stopped) or more", name, c.duration)
	}
	if c.interval <= 0 {
		return nil, badinput.Errorf("stress %s: --interval %v: want more than 0", name, c.interval)
	}
	if err := check(name, c.load); err != nil {
		return nil, err
	}
	return c, nil
}

// check checks the settings of name's load l without starting anything;
// bad input is said as the stressor's.
func check(name string, l Load) error {
	err := l.Check()
	if badinput.Is(err) {
		return badinput.Errorf("stress %s: %v", name, err)
	}
	return err
}

// flagError turns the flag package's messages into the project's style
// (--name), keeping them to one line.
func flagError(err error) string {
	msg := err.Error()
	msg = strings.Replace(msg, "flag provided but not defined: -", "unknown flag --", 1)
	msg = strings.Replace(msg, " for flag -", " for flag --", 1)
	msg = strings.Replace(msg, "flag needs an argument: -", "flag needs an argument: --", 1)
	return strings.SplitN(msg, "\n", 2)[0]
}

// validate parses args as `latencytest stress NAME args` would, without
// starting anything. Its error is one line for the user.
func (r *Registry) validate(name string, args []string) error {
	_, err := r.parse(name, args, io.Discard)
	if errors.Is(err, flag.ErrHelp) {
		return badinput.Errorf("stress %s: -h is not a load setting", name)
	}
	return err
}

// RunLoads are every stressor's loads as the flags of `latencytest run`
// configure them.
type RunLoads struct {
	fs    *flag.FlagSet
	loads map[string]runFlagsLoad
}

// runFlagsLoad is one stressor's load within run.
type runFlagsLoad struct {
	load   Load
	prefix string
	flags  []string // its flags' names on run's flag set, sorted
}

// RunFlags defines every stressor's flags on fs (the flag set of
// `latencytest run`), each prefixed with its stressor's name up to the
// first '-' (--hackbench-groups, --disk-size, --exec-cmd): parsing fs
// configures every stressor's load, and a load's messages name run's
// flags. Stressors that share a prefix (disk-*) share the flags of the
// same name: the one flag sets each one's.
func (r *Registry) RunFlags(fs *flag.FlagSet) *RunLoads {
	rl := &RunLoads{fs: fs, loads: map[string]runFlagsLoad{}}
	shared := map[string]*flag.Flag{}
	for _, name := range r.Names() {
		prefix, _, _ := strings.Cut(name, "-")
		prefix += "-"
		own := flag.NewFlagSet(name, flag.ContinueOnError)
		l := runFlagsLoad{load: r.byName[name].Flags(own, prefix), prefix: prefix}
		own.VisitAll(func(f *flag.Flag) {
			l.flags = append(l.flags, f.Name)
			if g, ok := shared[f.Name]; ok {
				g.Value = both{g.Value, f.Value}
				return
			}
			fs.Var(f.Value, f.Name, fmt.Sprintf("%s (stressor %s)", f.Usage, name))
			shared[f.Name] = fs.Lookup(f.Name)
		})
		rl.loads[name] = l
	}
	return rl
}

// Check checks the settings of name's load as run's flags gave them,
// without starting anything. Its error is one line for the user.
func (rl *RunLoads) Check(name string) error {
	return check(name, rl.loads[name].load)
}

// Args is the command line of `latencytest stress NAME` that runs name's
// load as run's flags configured it: the flags the user set, by the
// stressor's own names.
func (rl *RunLoads) Args(name string) []string {
	l := rl.loads[name]
	set := map[string]bool{}
	rl.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var args []string
	for _, n := range l.flags {
		if set[n] {
			args = append(args, "--"+strings.TrimPrefix(n, l.prefix)+"="+rl.fs.Lookup(n).Value.String())
		}
	}
	return args
}

// both is one flag setting the flags of the same name of two stressors.
type both [2]flag.Value

func (b both) String() string { return b[0].String() }

func (b both) Set(s string) error {
	if err := b[0].Set(s); err != nil {
		return err
	}
	return b[1].Set(s)
}

// IsBoolFlag lets a shared switch be given without a value.
func (b both) IsBoolFlag() bool {
	f, ok := b[0].(interface{ IsBoolFlag() bool })
	return ok && f.IsBoolFlag()
}
