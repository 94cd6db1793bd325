package check

import (
	"bytes"
	"compress/gzip"
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"latencytest/rundata"
)

// A workstation with a PCI soundcard sharing its line with a USB
// controller, as /proc/interrupts shows it on a 4-CPU Intel machine.
const interruptsShared = `            CPU0       CPU1       CPU2       CPU3       
   0:         22          0          0          0   IO-APIC   2-edge      timer
   8:          0          0          0          1   IO-APIC   8-edge      rtc0
  16:      71234          0          0          0   IO-APIC  16-fasteoi   ehci_hcd:usb1, snd_hda_intel:card1
 120:          0          0          0          0   PCI-MSI 16384-edge      aerdrv
 129:    9873412          0          0          0   IR-PCI-MSI-0000:00:1f.3    0-edge      snd_hda_intel:card0
 130:      45678          0          0          0   PCI-MSI 327680-edge      xhci_hcd
NMI:         12         11         10          9   Non-maskable interrupts
LOC:    1234567    1234567    1234567    1234567   Local timer interrupts
`

// stat builds a /proc/PID/stat line with the given priority and policy;
// the command name holds a space and a parenthesis, as names may.
func stat(pid, comm string, prio, policy int) string {
	f := make([]string, 52)
	for i := range f {
		f[i] = "0"
	}
	f[0], f[1], f[2] = pid, "("+comm+")", "S"
	f[39], f[40] = strconv.Itoa(prio), strconv.Itoa(policy)
	return strings.Join(f, " ") + "\n"
}

func gz(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

// good is a well set-up audio workstation; bad is a stock desktop.
func goodEnv() *env {
	return &env{
		fsys: fstest.MapFS{
			"proc/self/status":    file("Name:\tlatencytest\nCapEff:\t0000000000000000\n"),
			"sys/kernel/realtime": file("1\n"),
			"proc/timer_list":     file("cpu: 0\n  .hres_active    : 1\ncpu: 1\n  .hres_active    : 1\n"),
			"proc/config.gz":      {Data: gz("CONFIG_HIGH_RES_TIMERS=y\nCONFIG_NO_HZ_IDLE=y\n# CONFIG_NO_HZ_FULL is not set\nCONFIG_PREEMPT_RT=y\n")},
			"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": file("performance\n"),
			"sys/devices/system/cpu/cpu1/cpufreq/scaling_governor": file("performance\n"),
			"sys/devices/system/cpu/smt/control":                   file("off\n"),
			"sys/devices/system/cpu/smt/active":                    file("0\n"),
			"dev/cpu_dma_latency":                                  {Data: []byte{0x00, 0x94, 0x35, 0x77}},
			"proc/interrupts":                                      file(strings.ReplaceAll(interruptsShared, "ehci_hcd:usb1, ", "")),
			"proc/812/comm":                                        file("irq/129-snd_hda_intel:card0\n"),
			"proc/812/stat":                                        file(stat("812", "irq/129-snd_hda_intel:card0", 90, 1)),
			"proc/813/comm":                                        file("irq/16-snd_hda_intel:card1\n"),
			"proc/813/stat":                                        file(stat("813", "irq/16-snd_hda_intel:card1", 89, 1)),
			"proc/900/comm":                                        file("bash\n"),
			"sys/devices/system/cpu/vulnerabilities/spectre_v2":    file("Mitigation: Retpolines\n"),
			"sys/devices/system/cpu/vulnerabilities/meltdown":      file("Not affected\n"),
			"proc/sys/vm/swappiness":                               file("10\n"),
			"proc/swaps":                                           file("Filename\tType\tSize\tUsed\tPriority\n/dev/sda2 partition 8388604 0 -2\n"),
			"proc/self/mountinfo":                                  file("22 1 8:1 / / rw,noatime shared:1 - ext4 /dev/sda1 rw\n30 22 0:26 / /tmp rw,nosuid,nodev shared:5 - tmpfs tmpfs rw\n"),
			"proc/sys/kernel/sched_rt_runtime_us":                  file("-1\n"),
			"proc/sys/kernel/sched_rt_period_us":                   file("1000000\n"),
			"proc/812/task/812/stat":                               file(stat("812", "irq/129-snd_hda_intel:card0", 90, 1)),
			"proc/irq/129/effective_affinity_list":                 file("2\n"),
			"proc/irq/129/smp_affinity_list":                       file("0-3\n"),
			"proc/irq/16/smp_affinity_list":                        file("0-3\n"),
		},
		audioPrio: 80,
		rtprio:    limit{cur: 95},
		memlock:   limit{unlimited: true},
		diskDir:   "/home/me/audio",
		sys:       rundata.System{KernelRelease: "6.1.0-rt-amd64", KernelVersion: "#1 SMP PREEMPT_RT Debian", Cmdline: "quiet"},
		writable:  func(string) bool { return true },
	}
}

func badEnv() *env {
	return &env{
		fsys: fstest.MapFS{
			"proc/self/status":  file("Name:\tlatencytest\nCapEff:\t0000000000000000\n"),
			"boot/config-6.1.0": file("CONFIG_HIGH_RES_TIMERS=y\nCONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_NO_HZ_IDLE=y\n"),
			"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": file("powersave\n"),
			"sys/devices/system/cpu/cpu1/cpufreq/scaling_governor": file("performance\n"),
			"sys/devices/system/cpu/smt/control":                   file("on\n"),
			"sys/devices/system/cpu/smt/active":                    file("1\n"),
			"dev/cpu_dma_latency":                                  {Data: []byte{0x00, 0x94, 0x35, 0x77}},
			"proc/interrupts":                                      file(interruptsShared),
			"proc/812/comm":                                        file("irq/129-snd_hda_intel:card0\n"),
			"proc/812/stat":                                        file(stat("812", "irq/129-snd_hda_intel:card0", 50, 1)),
			"sys/devices/system/cpu/vulnerabilities/spectre_v2":    file("Mitigation: Retpolines\n"),
			"proc/sys/vm/swappiness":                               file("60\n"),
			"proc/swaps":                                           file("Filename\tType\tSize\tUsed\tPriority\n/dev/sda2 partition 8388604 0 -2\n"),
			"proc/self/mountinfo":                                  file("22 1 8:1 / / rw,strictatime shared:1 - ext4 /dev/sda1 rw\n"),
			"proc/sys/kernel/sched_rt_runtime_us":                  file("950000\n"),
			"proc/sys/kernel/sched_rt_period_us":                   file("1000000\n"),
			"proc/812/task/812/stat":                               file(stat("812", "irq/129-snd_hda_intel:card0", 50, 1)),
			"proc/1200/task/1201/stat":                             file(stat("1201", "pulseaudio", 85, 2)),
		},
		audioPrio: 80,
		rtprio:    limit{cur: 0},
		memlock:   limit{cur: 8 << 20},
		diskDir:   "/tmp",
		sys:       rundata.System{KernelRelease: "6.1.0", KernelVersion: "#1 SMP Debian 6.1.0", Cmdline: "quiet splash"},
		writable:  func(string) bool { return false },
	}
}

func byName(fs []rundata.Finding) map[string]rundata.Finding {
	m := map[string]rundata.Finding{}
	for _, f := range fs {
		m[f.Name] = f
	}
	return m
}

func TestGoodMachine(t *testing.T) {
	fs := run(goodEnv())
	for _, f := range fs {
		if f.Status != OK {
			t.Errorf("%s: %s %q, want OK", f.Name, f.Status, f.Value)
		}
	}
	m := byName(fs)
	if v := m["soundcard IRQ threads"].Value; !strings.Contains(v, "irq/129-snd_hda_intel:card0 (pid 812) SCHED_FIFO 90") {
		t.Errorf("sound IRQ threads: %q", v)
	}
	// The kernel's choice where it says one, else the CPUs allowed.
	if v := m[rundata.FindingSoundIRQCPUs].Value; v != "IRQ 16 on CPUs 0-3; IRQ 129 on CPU 2" {
		t.Errorf("sound IRQ CPUs: %q", v)
	}
	if v := m["disk phases' directory"].Value; !strings.Contains(v, "/home/me/audio on / (ext4") {
		t.Errorf("disk phases' directory: %q, want / (ext4)", v)
	}
	if v := m["/dev/cpu_dma_latency"].Value; !strings.Contains(v, "no request held") {
		t.Errorf("dma latency: %q", v)
	}
}

func TestBadMachine(t *testing.T) {
	m := byName(run(badEnv()))
	want := map[string]string{
		"rtprio limit":              "0: SCHED_FIFO is refused",
		"memlock limit":             "8 MiB",
		"preemption model":          "voluntary",
		"threaded IRQs":             "not enabled",
		"CPU frequency governor":    "powersave on 1",
		"SMT (hyper-threading)":     "on",
		"/dev/cpu_dma_latency":      "not writable",
		"soundcard IRQ threads":     "SCHED_FIFO 50",
		"soundcard IRQ line shared": "ehci_hcd:usb1, snd_hda_intel:card1",
		"swappiness":                "60 with swap active",
		"disk phases' directory":    "strictatime",
		"RT throttling":             "950000 of every 1000000",
		"real-time tasks":           "pulseaudio (1201) RR 85",
	}
	for name, v := range want {
		f, ok := m[name]
		if !ok {
			t.Errorf("%s: no finding", name)
			continue
		}
		if f.Status != WARN || !strings.Contains(f.Value, v) {
			t.Errorf("%s: %s %q, want WARN containing %q", name, f.Status, f.Value, v)
		}
		if f.Why == "" || f.Fix == "" || strings.Contains(f.Fix, "\n") {
			t.Errorf("%s: a warning needs a why and a one-line fix: %+v", name, f)
		}
	}
	// The IRQ 16 line has a sound handler but no thread: only 129 is
	// threaded here, and it is the one reported as too low.
	if v := m["soundcard IRQ threads"].Value; strings.Contains(v, "card1") {
		t.Errorf("sound IRQ threads lists a thread that does not exist: %q", v)
	}
}

// A USB soundcard's interrupts are its host controller's: those threads
// are checked, and the controller's line sharing with another device is
// what warns.
func TestUSBSoundcard(t *testing.T) {
	e := badEnv()
	fsys := e.fsys.(fstest.MapFS)
	fsys["proc/asound/cards"] = file(" 0 [Device         ]: USB-Audio - USB Audio Device\n" +
		"                      C-Media Electronics Inc. USB Audio Device at usb-0000:00:14.0-2, full speed\n")
	fsys["proc/interrupts"] = file(`            CPU0       CPU1
  16:      71234          0   IO-APIC  16-fasteoi   ehci_hcd:usb1, i801_smbus
 130:      45678          0   PCI-MSI 327680-edge      xhci_hcd
`)
	delete(fsys, "proc/812/comm")
	fsys["proc/900/comm"] = file("irq/130-xhci_hcd\n")
	fsys["proc/900/stat"] = file(stat("900", "irq/130-xhci_hcd", 85, 1))
	fsys["proc/901/comm"] = file("irq/16-ehci_hcd:usb1\n")
	fsys["proc/901/stat"] = file(stat("901", "irq/16-ehci_hcd:usb1", 50, 1))
	m := byName(run(e))
	th, sh := m["soundcard IRQ threads"], m["soundcard IRQ line shared"]
	if th.Status != WARN || !strings.Contains(th.Value, "irq/16-ehci_hcd:usb1 (pid 901) SCHED_FIFO 50") || strings.Contains(th.Value, "xhci") {
		t.Errorf("threads: %s %q", th.Status, th.Value)
	}
	if sh.Status != WARN || !strings.Contains(sh.Value, "i801_smbus") || strings.Contains(sh.Value, "130") {
		t.Errorf("shared: %s %q", sh.Status, sh.Value)
	}
}

// Facts that cannot be read are INFO saying so, never a guess.
func TestUnreadable(t *testing.T) {
	e := &env{fsys: fstest.MapFS{}, rtprio: limit{err: errors.New("EPERM")}, memlock: limit{err: errors.New("EPERM")},
		diskDir: "/tmp", sys: rundata.System{KernelVersion: "#1 SMP PREEMPT_DYNAMIC"}, writable: func(string) bool { return false }}
	m := byName(run(e))
	for _, name := range []string{"rtprio limit", "memlock limit", "preemption model", "high-resolution timers", "NO_HZ (tickless)",
		"CPU frequency governor", "SMT (hyper-threading)", "/dev/cpu_dma_latency", "soundcard IRQ threads",
		"CPU vulnerability mitigations", "swappiness", "disk phases' directory"} {
		f, ok := m[name]
		if !ok {
			t.Errorf("%s: no finding", name)
			continue
		}
		if f.Status != INFO || f.Value == "" {
			t.Errorf("%s: %s %q, want INFO saying what could not be read", name, f.Status, f.Value)
		}
	}
	if v := m["preemption model"].Value; !strings.Contains(v, "debugfs") {
		t.Errorf("preempt: %q should say debugfs is needed", v)
	}
}

func TestParseInterrupts(t *testing.T) {
	ls := parseInterrupts(interruptsShared)
	got := map[string][]string{}
	for _, l := range ls {
		got[l.irq] = l.actions
	}
	if len(ls) != 6 {
		t.Errorf("%d numbered lines, want 6 (NMI and LOC are not device IRQs)", len(ls))
	}
	if a := got["16"]; len(a) != 2 || a[0] != "ehci_hcd:usb1" || a[1] != "snd_hda_intel:card1" {
		t.Errorf("IRQ 16 handlers %q", a)
	}
	if a := got["129"]; len(a) != 1 || a[0] != "snd_hda_intel:card0" {
		t.Errorf("IRQ 129 handlers %q", a)
	}
	if a := got["130"]; len(a) != 1 || !isUSBHost(a[0]) || isSound(a[0]) {
		t.Errorf("IRQ 130 handlers %q", a)
	}
}

func TestParseStatTask(t *testing.T) {
	st, ok := parseStatTask(stat("77", "irq/16-a) b (c", 93, 2))
	if !ok || st.policy != 2 || st.prio != 93 || st.comm != "irq/16-a) b (c" {
		t.Errorf("got %+v %v", st, ok)
	}
	if _, ok := parseStatTask("77 (x) S 1 2"); ok {
		t.Error("a short stat line parsed")
	}
}

// A disk phases' directory in RAM is a warning: the disk phases would
// load memory.
func TestDiskDirInRAM(t *testing.T) {
	e := goodEnv()
	e.diskDir = "/tmp/x"
	if f := byName(run(e))["disk phases' directory"]; f.Status != WARN || !strings.Contains(f.Value, "in RAM") || !strings.Contains(f.Fix, "--disk-dir") {
		t.Errorf("disk dir on tmpfs: %s %q, fix %q", f.Status, f.Value, f.Fix)
	}
}

func TestParseHelpers(t *testing.T) {
	if m, ok := parseCapEff("Name:\tx\nCapEff:\t000001ffffffffff\n"); !ok || m&(1<<capSysNice) == 0 || m&(1<<capIPCLock) == 0 {
		t.Errorf("CapEff %x %v", m, ok)
	}
	if v, ok := parseDMALatency([]byte{0, 0x94, 0x35, 0x77}); !ok || v != 2_000_000_000 {
		t.Errorf("dma latency %d %v", v, ok)
	}
	if _, ok := parseDMALatency([]byte("2000000000")); ok {
		t.Error("text accepted as the binary value")
	}
	cfg := parseKernelConfig(strings.NewReader("# comment\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=\"x y\"\n"))
	if cfg["CONFIG_A"] != "y" || cfg["CONFIG_B"] != "n" || cfg["CONFIG_C"] != "x y" {
		t.Errorf("config %v", cfg)
	}
	if on, off := parseHresActive("  .hres_active    : 1\n  .hres_active    : 0\n  .nohz_mode : 2\n"); on != 1 || off != 1 {
		t.Errorf("hres %d %d", on, off)
	}
	if swapActive("Filename\tType\tSize\tUsed\tPriority\n") {
		t.Error("header only counted as swap")
	}
	for _, c := range []struct{ sys, cmdline, cfg, want string }{
		{"dynamic", "preempt=full", "", "dynamic (full)"},
		{"dynamic", "", "CONFIG_PREEMPT_NONE=y\n", "dynamic (none)"},
		{"voluntary or none", "", "CONFIG_PREEMPT_VOLUNTARY=y\n", "voluntary"},
		{"voluntary or none", "", "# CONFIG_PREEMPT_VOLUNTARY is not set\n", "none"},
		{"PREEMPT_RT", "", "", "PREEMPT_RT"},
	} {
		var cfg map[string]string
		if c.cfg != "" {
			cfg = parseKernelConfig(strings.NewReader(c.cfg))
		}
		if got := preemptModel(c.sys, c.cmdline, cfg); got != c.want {
			t.Errorf("preemptModel(%q, %q, %q) = %q, want %q", c.sys, c.cmdline, c.cfg, got, c.want)
		}
	}
}

// On this machine: every check answers, with a valid status. (Its speed
// is BenchmarkRun's business.)
func TestRunHere(t *testing.T) {
	fs := Run()
	if len(fs) < len(checks) {
		t.Errorf("%d findings from %d checks", len(fs), len(checks))
	}
	for _, f := range fs {
		if f.Name == "" || f.Value == "" || (f.Status != OK && f.Status != WARN && f.Status != INFO) {
			t.Errorf("malformed finding %+v", f)
		}
		if f.Status == WARN && f.Fix == "" {
			t.Errorf("%s: a warning without a fix", f.Name)
		}
	}
}

func BenchmarkRun(b *testing.B) {
	for b.Loop() {
		Run()
	}
}
