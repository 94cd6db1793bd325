package runner

import (
	"latencytest/internal/threads"
)

// separate keeps latencytest's own work off the audio thread's CPUs when
// the audio thread is pinned (--affinity) and other CPUs are allowed: on
// a kernel that does not preempt kernel code, a write or a tty update of
// the parent on the audio thread's CPU delays the audio thread, and the
// report would blame the kernel. Every thread of this process, and so
// the engine process started from it, runs on the other CPUs; the engine
// then pins its audio thread alone (audio.RuntimeSetup). Stressors run
// anywhere the run may: the load is what is measured against. It says on
// the terminal and in run.json where each ran, and returns the function
// that restores the process's affinity.
func (s *session) separate() (restore func()) {
	restore = func() {}
	audio := s.cfg.RT.Affinity
	if len(audio) == 0 {
		return restore
	}
	all, err := threads.Allowed()
	if err != nil {
		s.pr.linef("cpus: %v; latencytest's own work may share the audio thread's CPUs", err)
		return restore
	}
	own := threads.Without(all, audio)
	if len(own) == 0 {
		s.pr.linef("cpus: the audio thread on %s, and latencytest's own work too: no other CPU is allowed", threads.Format(audio))
		return restore
	}
	if err := threads.SetAffinity(own); err != nil {
		s.pr.linef("cpus: %v; latencytest's own work may share the audio thread's CPUs", err)
		threads.SetAffinity(all)
		return restore
	}
	s.run.OwnCPUs, s.loadCPUs = own, all
	s.pr.linef("cpus: the audio thread on %s; latencytest's own work on %s; the loads on %s", threads.Format(audio), threads.Format(own), threads.Format(all))
	return func() { threads.SetAffinity(all) }
}
