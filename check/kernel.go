package check

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"strings"

	"latencytest/rundata"
	"latencytest/sysinfo"
)

// parseKernelConfig reads a kernel .config: CONFIG_X=value lines; "# CONFIG_X
// is not set" lines are recorded as "n".
func parseKernelConfig(r io.Reader) map[string]string {
	cfg := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "# CONFIG_"); ok {
			if k, ok := strings.CutSuffix(rest, " is not set"); ok {
				cfg["CONFIG_"+k] = "n"
			}
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "CONFIG_") {
			cfg[k] = strings.Trim(v, `"`)
		}
	}
	return cfg
}

// kernelConfig finds the running kernel's configuration in /proc/config.gz
// or /boot/config-RELEASE; nil when neither is readable.
func (e *env) kernelConfig() (map[string]string, string) {
	if e.config == nil {
		cfg, src := e.readKernelConfig()
		e.config = &configFile{cfg, src}
	}
	return e.config.options, e.config.src
}

// configFile is the kernel's configuration, and the file it was read from.
type configFile struct {
	options map[string]string
	src     string
}

func (e *env) readKernelConfig() (map[string]string, string) {
	if b, err := fs.ReadFile(e.fsys, "proc/config.gz"); err == nil {
		if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
			if cfg := parseKernelConfig(zr); len(cfg) > 0 {
				return cfg, "/proc/config.gz"
			}
		}
	}
	if e.sys.KernelRelease != "" {
		p := "/boot/config-" + e.sys.KernelRelease
		if s, err := e.read(p); err == nil {
			if cfg := parseKernelConfig(strings.NewReader(s)); len(cfg) > 0 {
				return cfg, p
			}
		}
	}
	return nil, ""
}

// preemptModel refines sysinfo's answer with what only the configuration
// or the command line tells: the mode a PREEMPT_DYNAMIC kernel runs in when
// debugfs is not mounted, and voluntary against none.
func preemptModel(sysModel, cmdline string, cfg map[string]string) string {
	switch sysModel {
	case "dynamic":
		if v, ok := cmdlineHas(cmdline, "preempt"); ok && v != "" {
			return "dynamic (" + v + ")"
		}
		switch {
		case cfg == nil:
			return "dynamic"
		case cfg["CONFIG_PREEMPT"] == "y":
			return "dynamic (full)"
		case cfg["CONFIG_PREEMPT_VOLUNTARY"] == "y":
			return "dynamic (voluntary)"
		case cfg["CONFIG_PREEMPT_NONE"] == "y":
			return "dynamic (none)"
		case cfg["CONFIG_PREEMPT_LAZY"] == "y":
			return "dynamic (lazy)"
		}
		return "dynamic"
	case "voluntary or none":
		switch {
		case cfg == nil:
			return sysModel
		case cfg["CONFIG_PREEMPT_VOLUNTARY"] == "y":
			return "voluntary"
		}
		return "none"
	}
	return sysModel
}

func checkPreempt(e *env) []rundata.Finding {
	const name = "preemption model"
	const why = "the preemption model bounds how long the kernel can keep the audio thread from running once it is woken"
	const fix = "boot with preempt=full (PREEMPT_DYNAMIC kernels) or install a PREEMPT_RT kernel (Debian: linux-image-rt-amd64)"
	rt, _ := e.read("/sys/kernel/realtime")
	dyn, dynErr := e.read("/sys/kernel/debug/sched/preempt")
	base := sysinfo.PreemptModel(e.sys.KernelVersion, rt, dyn)
	cfg, src := e.kernelConfig()
	model := preemptModel(base, e.sys.Cmdline, cfg)
	note := ""
	if _, onCmdline := cmdlineHas(e.sys.Cmdline, "preempt"); model != base && !onCmdline {
		note = " (default of " + src + "; debugfs not mounted to confirm)"
	}
	switch model {
	case "PREEMPT_RT":
		return []rundata.Finding{finding(name, OK, model, why, "")}
	case "full", "dynamic (full)", "dynamic (lazy)":
		return []rundata.Finding{finding(name, OK, model+note+"; PREEMPT_RT bounds latency tighter still", why, "")}
	case "dynamic", "voluntary or none":
		v := model + ": the mode cannot be read"
		if dynErr != nil {
			v += " (no /sys/kernel/debug/sched/preempt: mount debugfs as root; no kernel config)"
		}
		return []rundata.Finding{finding(name, INFO, v, why, fix)}
	}
	return []rundata.Finding{finding(name, WARN, model+note, why, fix)}
}

func checkThreadIRQs(e *env) []rundata.Finding {
	const name = "threaded IRQs"
	const why = "with threaded interrupt handlers the soundcard's handler becomes a thread whose priority can be raised above the rest; without, every device's handler runs ahead of the audio thread"
	const fix = "add threadirqs to the kernel command line (GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, then update-grub and reboot)"
	rt, _ := e.read("/sys/kernel/realtime")
	if sysinfo.PreemptModel(e.sys.KernelVersion, rt, "") == "PREEMPT_RT" {
		return []rundata.Finding{finding(name, OK, "forced by PREEMPT_RT", why, "")}
	}
	if _, ok := cmdlineHas(e.sys.Cmdline, "threadirqs"); ok {
		return []rundata.Finding{finding(name, OK, "threadirqs on the command line", why, "")}
	}
	return []rundata.Finding{finding(name, WARN, "not enabled", why, fix)}
}

// parseHresActive counts the CPUs of /proc/timer_list with high-resolution
// mode active and not.
func parseHresActive(timerList string) (on, off int) {
	for _, line := range strings.Split(timerList, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != ".hres_active" {
			continue
		}
		if strings.TrimSpace(v) == "1" {
			on++
		} else {
			off++
		}
	}
	return
}

func checkHighRes(e *env) []rundata.Finding {
	const name = "high-resolution timers"
	const why = "without them timers expire on the next scheduler tick, up to 1–10 ms late"
	const fix = "use a kernel with CONFIG_HIGH_RES_TIMERS=y and remove highres=off from the command line"
	if v, ok := cmdlineHas(e.sys.Cmdline, "highres"); ok && v == "off" {
		return []rundata.Finding{finding(name, WARN, "disabled by highres=off", why, fix)}
	}
	if tl, err := e.read("/proc/timer_list"); err == nil {
		on, off := parseHresActive(tl)
		switch {
		case off > 0:
			return []rundata.Finding{finding(name, WARN, "inactive on some CPUs", why, fix)}
		case on > 0:
			return []rundata.Finding{finding(name, OK, "active on all CPUs", why, "")}
		}
	}
	cfg, src := e.kernelConfig()
	switch {
	case cfg == nil:
		return []rundata.Finding{finding(name, INFO, "cannot be read (/proc/timer_list needs root; no kernel config)", why, "")}
	case cfg["CONFIG_HIGH_RES_TIMERS"] == "y":
		return []rundata.Finding{finding(name, OK, "configured (CONFIG_HIGH_RES_TIMERS=y in "+src+")", why, "")}
	}
	return []rundata.Finding{finding(name, WARN, "not configured in "+src, why, fix)}
}

func checkNoHZ(e *env) []rundata.Finding {
	const name = "NO_HZ (tickless)"
	const why = "a tickless CPU sleeps longer and deeper, and waking from a deep idle state costs latency; latencytest holds /dev/cpu_dma_latency at 0 during runs to keep CPUs out of deep states"
	if v, ok := cmdlineHas(e.sys.Cmdline, "nohz"); ok && v == "off" {
		return []rundata.Finding{finding(name, OK, "off (nohz=off): periodic tick", why, "")}
	}
	if s, err := e.read("/sys/devices/system/cpu/nohz_full"); err == nil {
		if cpus := strings.TrimSpace(s); cpus != "" && cpus != "(null)" {
			return []rundata.Finding{finding(name, OK, "full on CPUs "+cpus+" (pin the audio thread there with -cpu)", why, "")}
		}
	}
	cfg, src := e.kernelConfig()
	switch {
	case cfg == nil:
		return []rundata.Finding{finding(name, INFO, "cannot be read (no kernel config in /proc/config.gz or /boot)", why, "")}
	case cfg["CONFIG_NO_HZ_FULL"] == "y":
		return []rundata.Finding{finding(name, OK, "full available, idle in use (no nohz_full= CPUs)", why, "")}
	case cfg["CONFIG_NO_HZ_IDLE"] == "y":
		return []rundata.Finding{finding(name, OK, "idle: the tick stops on idle CPUs", why, "")}
	case cfg["CONFIG_HZ_PERIODIC"] == "y":
		return []rundata.Finding{finding(name, OK, "periodic tick", why, "")}
	}
	return []rundata.Finding{finding(name, INFO, "not stated in "+src, why, "")}
}
