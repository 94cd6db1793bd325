package runner

import (
	"context"
	"encoding/json"
	"syscall"
	"time"

	"latencytest/internal/child"
	"latencytest/internal/held"
	"latencytest/internal/rtbudget"
	"latencytest/rundata"
)

// liftBudget starts the guard that holds the kernel's real-time budget
// lifted for the run (Config.LiftRTBudget) and returns what stops it,
// which puts the budget back. The guard is not in Config.Children: a
// second Ctrl-C kills those at once, and the guard must live to restore
// the budget (it does so when this process dies, by PR_SET_PDEATHSIG). A
// guard that cannot lift the budget is a refusal like the other real-time
// steps: the run goes on and says so.
func (s *session) liftBudget(ctx context.Context) (stop func()) {
	if !s.cfg.LiftRTBudget {
		return func() {}
	}
	p, m, err := child.Start(ctx, child.Spec{
		Name: "real-time budget guard", Exe: s.cfg.Exe, Args: []string{RTBudgetCommand},
		Pdeathsig: syscall.SIGTERM, StartLimit: 5 * time.Second,
	})
	if err != nil {
		s.run.RTBudget = &rundata.RTBudget{Note: err.Error()}
		s.pr.linef("real-time budget: not lifted: %v", err)
		return func() {}
	}
	var r rtbudget.Ready
	json.Unmarshal(m.Data, &r)
	s.run.RTBudget = &rundata.RTBudget{Lifted: true, Was: r.Was}
	if r.Recovered != "" {
		s.pr.linef("real-time budget: put back to %s first: a killed run had left it lifted (its record in %s)", r.Recovered, held.Dir)
	}
	s.pr.linef("real-time budget: sched_rt_runtime_us %s → -1 for the run; put back when it ends, also if it is killed", r.Was)
	return func() {
		if _, err := p.Stop(2 * time.Second); err != nil {
			s.pr.linef("real-time budget guard: %v", err)
		}
	}
}
