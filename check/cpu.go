package check

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"latencytest/rundata"
)

// countGovernors tallies the scaling governors of the CPUs.
func countGovernors(govs []string) map[string]int {
	m := map[string]int{}
	for _, g := range govs {
		if g = strings.TrimSpace(g); g != "" {
			m[g]++
		}
	}
	return m
}

func checkGovernor(e *env) []rundata.Finding {
	const name = "CPU frequency governor"
	const why = "a CPU clocked down to save power runs the audio work slower, and changing frequency stalls it"
	const fix = "cpupower frequency-set -g performance (Debian: linux-cpupower)"
	files := e.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")
	var govs []string
	for _, f := range files {
		if s, err := e.read(f); err == nil {
			govs = append(govs, s)
		}
	}
	m := countGovernors(govs)
	if len(m) == 0 {
		return []rundata.Finding{finding(name, INFO, "no cpufreq: cannot be read (a VM, or the clock is not scaled by the kernel)", why, "")}
	}
	var parts []string
	total := 0
	for g, n := range m {
		parts = append(parts, fmt.Sprintf("%s on %d", g, n))
		total += n
	}
	sort.Strings(parts)
	v := strings.Join(parts, ", ") + fmt.Sprintf(" of %d CPUs", total)
	if m["performance"] == total {
		return []rundata.Finding{finding(name, OK, "performance on all CPUs", why, "")}
	}
	return []rundata.Finding{finding(name, WARN, v, why, fix)}
}

func checkSMT(e *env) []rundata.Finding {
	const name = "SMT (hyper-threading)"
	const why = "two hardware threads share a core: a busy sibling slows the audio thread unpredictably"
	const fix = "echo off > /sys/devices/system/cpu/smt/control (or boot with nosmt), or keep the sibling of the audio CPU idle"
	control, err := e.read("/sys/devices/system/cpu/smt/control")
	if err != nil {
		return []rundata.Finding{finding(name, INFO, "cannot be read (no /sys/devices/system/cpu/smt)", why, "")}
	}
	switch c := strings.TrimSpace(control); c {
	case "notsupported", "notimplemented":
		return []rundata.Finding{finding(name, OK, "not supported by this CPU", why, "")}
	case "off", "forceoff":
		return []rundata.Finding{finding(name, OK, "off", why, "")}
	}
	active, _ := e.read("/sys/devices/system/cpu/smt/active")
	if strings.TrimSpace(active) == "0" {
		return []rundata.Finding{finding(name, OK, "on but no sibling online", why, "")}
	}
	return []rundata.Finding{finding(name, WARN, "on", why, fix)}
}

// summariseVulnerabilities sorts the CPU vulnerability files into those
// mitigated (at a cost) and those the kernel reports as vulnerable.
func summariseVulnerabilities(files map[string]string) (mitigated, vulnerable []string) {
	for name, s := range files {
		s = strings.TrimSpace(s)
		switch {
		case strings.HasPrefix(s, "Mitigation"):
			mitigated = append(mitigated, name)
		case strings.HasPrefix(s, "Vulnerable"):
			vulnerable = append(vulnerable, name)
		}
	}
	sort.Strings(mitigated)
	sort.Strings(vulnerable)
	return
}

func checkMitigations(e *env) []rundata.Finding {
	const name = "CPU vulnerability mitigations"
	const why = "mitigations make system calls and context switches slower, which adds to every wakeup; turning them off trades security for latency"
	const fix = "mitigations=off on the kernel command line, only on a machine that runs no untrusted code"
	files := e.glob("/sys/devices/system/cpu/vulnerabilities/*")
	if len(files) == 0 {
		return []rundata.Finding{finding(name, INFO, "cannot be read (no /sys/devices/system/cpu/vulnerabilities)", why, "")}
	}
	m := map[string]string{}
	for _, f := range files {
		if s, err := e.read(f); err == nil {
			m[path.Base(f)] = s
		}
	}
	mit, vul := summariseVulnerabilities(m)
	v := fmt.Sprintf("%d mitigated", len(mit))
	if len(mit) > 0 {
		v += " (" + strings.Join(mit, ", ") + ")"
	}
	if len(vul) > 0 {
		v += fmt.Sprintf(", %d left vulnerable", len(vul))
	}
	if c, ok := cmdlineHas(e.sys.Cmdline, "mitigations"); ok {
		v += "; mitigations=" + c
	}
	// Informational either way: the right answer depends on what else
	// the machine runs, so it is never a warning.
	return []rundata.Finding{finding(name, OK, v, why, fix)}
}
