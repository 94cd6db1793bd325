package check

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"latencytest/rundata"
)

// irqLine is one numbered line of /proc/interrupts.
type irqLine struct {
	irq     string   // "16"
	chip    string   // "IO-APIC 16-fasteoi", as far as it can be told apart
	actions []string // the handlers sharing the line: "snd_hda_intel:card0", "ehci_hcd:usb1"
}

// parseInterrupts parses /proc/interrupts. A line is "N: count per CPU,
// chip words, then the handlers separated by ', '"; only numbered lines are
// device interrupts. The handler list is what follows the last field that
// looks like a chip or trigger description, which is good enough to find
// sound and USB handlers by name.
func parseInterrupts(s string) []irqLine {
	lines := strings.Split(s, "\n")
	if len(lines) == 0 {
		return nil
	}
	ncpu := len(strings.Fields(lines[0]))
	var out []irqLine
	for _, line := range lines[1:] {
		k, rest, ok := strings.Cut(line, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" || k[0] < '0' || k[0] > '9' {
			continue
		}
		fs := strings.Fields(rest)
		if len(fs) <= ncpu {
			continue
		}
		tail := fs[ncpu:]
		// Handlers come after the chip name and the hwirq-trigger word
		// ("IO-APIC 16-fasteoi", "PCI-MSI 327680-edge"): find the last
		// trigger word ("-edge", "-fasteoi", "-level") and split there.
		cut := 0
		for i, f := range tail {
			if strings.HasSuffix(f, "-edge") || strings.HasSuffix(f, "-fasteoi") || strings.HasSuffix(f, "-level") || f == "edge" || f == "level" {
				cut = i + 1
			}
		}
		if cut == 0 && len(tail) > 1 {
			cut = 1
		}
		l := irqLine{irq: k, chip: strings.Join(tail[:cut], " ")}
		for _, a := range strings.Split(strings.Join(tail[cut:], " "), ",") {
			if a = strings.TrimSpace(a); a != "" {
				l.actions = append(l.actions, a)
			}
		}
		out = append(out, l)
	}
	return out
}

// isSound tells a soundcard's interrupt handler by name: ALSA drivers
// register as snd_*, Sound Open Firmware as sof-audio-*.
func isSound(action string) bool {
	a := strings.ToLower(action)
	return strings.HasPrefix(a, "snd") || strings.HasPrefix(a, "sof-audio") || strings.Contains(a, "audio")
}

// isUSBHost tells a USB host controller's handler by name.
func isUSBHost(action string) bool {
	for _, p := range []string{"xhci", "ehci", "ohci", "uhci"} {
		if strings.HasPrefix(action, p) {
			return true
		}
	}
	return false
}

// irqThread is a threaded handler: "irq/16-snd_hda_intel".
type irqThread struct {
	comm         string
	pid          string
	policy, prio int
}

// irqThreads finds the kernel threads of the given IRQ numbers.
func (e *env) irqThreads(irqs map[string]bool) []irqThread {
	var out []irqThread
	for _, dir := range e.glob("/proc/[0-9]*") {
		comm, err := e.read(dir + "/comm")
		if err != nil {
			continue
		}
		comm = strings.TrimSpace(comm)
		rest, ok := strings.CutPrefix(comm, "irq/")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, "-")
		if !irqs[n] {
			continue
		}
		t := irqThread{comm: comm, pid: path.Base(dir)}
		if st, err := e.read(dir + "/stat"); err == nil {
			if s, ok := parseStatTask(st); ok {
				t.policy, t.prio = s.policy, s.prio
			}
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].comm < out[j].comm })
	return out
}

// defaultIRQPrio is the priority the kernel gives every IRQ thread; a
// soundcard's thread at it competes equally with the disk's and network's.
const defaultIRQPrio = 50

// hasUSBAudio reports whether /proc/asound/cards lists a USB soundcard,
// whose interrupts are its USB host controller's.
func hasUSBAudio(cards string) bool {
	return strings.Contains(cards, "USB-Audio")
}

// The soundcard's IRQ findings, their reasons and fixes.
const (
	nameIRQThreads = "soundcard IRQ threads"
	nameIRQShared  = "soundcard IRQ line shared"
	whyIRQThreads  = "the soundcard's interrupt thread must run before other IRQ threads, or a busy disk or network delays every period"
	fixIRQThreads  = "raise it: chrt -f -p 90 PID, or install rtirq (Debian: rtirq-init) to do it at boot"
	whyIRQShared   = "another device on the soundcard's interrupt line runs its handler on every soundcard interrupt and vice versa, adding its latency to every period"
	fixIRQShared   = "move the card to another slot or port, use MSI (the kernel's default where the device supports it), or disable the other device in the firmware"
	whyIRQCPUs     = "the card's interrupt is handled on these CPUs and wakes the audio thread from there: an audio thread on another CPU is woken by an interprocessor interrupt, one on the same CPU shares it with the handler (run --cpus all names the best CPU for audio beside them)"
	fixIRQCPUs     = "to move it: echo CPUS > /proc/irq/N/smp_affinity_list (irqbalance moves it back: ban the IRQ with IRQBALANCE_BANNED_IRQS, or stop irqbalance)"
)

// checkSoundIRQ finds the soundcard's interrupt lines and judges their
// threads' priority and whether another device shares them.
func checkSoundIRQ(e *env) []rundata.Finding {
	si, err := e.soundIRQ()
	if err != nil {
		return []rundata.Finding{finding(nameIRQThreads, INFO, "cannot read /proc/interrupts", whyIRQThreads, "")}
	}
	cards, usbAudio, usb, sound := si.cards, si.usbAudio, si.usb, si.lines
	if len(sound) == 0 {
		v := "no soundcard interrupt in /proc/interrupts (no PCI soundcard; a USB card uses its controller's interrupt)"
		if c := strings.TrimSpace(cards); c != "" && !strings.Contains(c, "no soundcards") {
			v = "the soundcards of /proc/asound/cards have no line in /proc/interrupts (virtual cards raise no interrupt)"
		}
		if usbAudio {
			v = "a USB soundcard, but no USB host controller interrupt found in /proc/interrupts"
		}
		return []rundata.Finding{finding(nameIRQThreads, INFO, v, whyIRQThreads, "")}
	}
	what := "IRQ " + irqList(sound)
	if len(usb) > 0 {
		what += " (the USB soundcard's host controller)"
	}
	out := []rundata.Finding{irqThreadsFinding(si.threads, what), e.irqCPUsFinding(sound)}
	if shared := sharedLines(sound); len(shared) > 0 {
		out = append(out, finding(nameIRQShared, WARN, strings.Join(shared, "; "), whyIRQShared, fixIRQShared))
	} else {
		out = append(out, finding(nameIRQShared, OK, what+" not shared", whyIRQShared, ""))
	}
	return out
}

// soundIRQs is the soundcard's interrupts: /proc/asound/cards, whether
// it lists a USB card, the lines (a PCI card's own, then the USB host
// controllers'), those of them that are USB controllers', and their
// threads.
type soundIRQs struct {
	cards      string
	usbAudio   bool
	lines, usb []irqLine
	threads    []irqThread
}

// soundIRQ reads the soundcard's interrupts and walks /proc for their
// threads once: the IRQ check and the sound server's both judge by them.
func (e *env) soundIRQ() (*soundIRQs, error) {
	if e.sound != nil {
		return e.sound, nil
	}
	s, err := e.read("/proc/interrupts")
	if err != nil {
		return nil, err
	}
	si := &soundIRQs{}
	si.cards, _ = e.read("/proc/asound/cards")
	si.usbAudio = hasUSBAudio(si.cards)
	pci, usb := soundLines(parseInterrupts(s), si.usbAudio)
	si.lines, si.usb = append(append([]irqLine(nil), pci...), usb...), usb
	irqs := map[string]bool{}
	for _, l := range si.lines {
		irqs[l.irq] = true
	}
	if len(irqs) > 0 {
		si.threads = e.irqThreads(irqs)
	}
	e.sound = si
	return si, nil
}

// soundLines picks the soundcard's lines out of /proc/interrupts': a PCI
// card's own, and with a USB card (usbAudio) its host controllers' (which
// one is not told apart here).
func soundLines(lines []irqLine, usbAudio bool) (pci, usb []irqLine) {
	for _, l := range lines {
		for _, a := range l.actions {
			if isSound(a) {
				pci = append(pci, l)
				break
			}
			if usbAudio && isUSBHost(a) {
				usb = append(usb, l)
				break
			}
		}
	}
	return pci, usb
}

// sharedLines describes the soundcard's lines another device shares: a
// PCI card's line shared with a USB controller, or a USB card's
// controller line shared with anything else.
func sharedLines(sound []irqLine) []string {
	var shared []string
	for _, l := range sound {
		fromUSB := !isSoundLine(l)
		for _, a := range l.actions {
			if (!fromUSB && isUSBHost(a)) || (fromUSB && !isUSBHost(a)) {
				shared = append(shared, fmt.Sprintf("IRQ %s: %s", l.irq, strings.Join(l.actions, ", ")))
				break
			}
		}
	}
	return shared
}

// irqThreadsFinding judges the threads of the soundcard's lines, what:
// each must be above the priority every IRQ thread gets by default.
func irqThreadsFinding(threads []irqThread, what string) rundata.Finding {
	if len(threads) == 0 {
		return finding(nameIRQThreads, WARN, what+" not threaded", whyIRQThreads,
			"add threadirqs to the kernel command line, then raise the thread: chrt -f -p 90 PID")
	}
	var low, parts []string
	for _, t := range threads {
		p := fmt.Sprintf("%s (pid %s) %s %d", t.comm, t.pid, rundata.PolicyName(t.policy), t.prio)
		parts = append(parts, p)
		if t.prio <= defaultIRQPrio {
			low = append(low, p)
		}
	}
	if len(low) > 0 {
		return finding(nameIRQThreads, WARN, strings.Join(low, "; ")+fmt.Sprintf(": not above the default IRQ priority %d", defaultIRQPrio), whyIRQThreads, fixIRQThreads)
	}
	return finding(nameIRQThreads, OK, strings.Join(parts, "; "), whyIRQThreads, "")
}

// irqCPUsFinding says on which CPUs the kernel handles each of the
// soundcard's lines: the CPUs it last chose (effective_affinity_list),
// else those allowed (smp_affinity_list).
func (e *env) irqCPUsFinding(sound []irqLine) rundata.Finding {
	var parts []string
	for _, l := range sound {
		cpus, err := e.read("/proc/irq/" + l.irq + "/effective_affinity_list")
		if cpus = strings.TrimSpace(cpus); err != nil || cpus == "" {
			cpus, err = e.read("/proc/irq/" + l.irq + "/smp_affinity_list")
			if cpus = strings.TrimSpace(cpus); err != nil || cpus == "" {
				return finding(rundata.FindingSoundIRQCPUs, INFO, "cannot read /proc/irq/"+l.irq+"/smp_affinity_list", whyIRQCPUs, "")
			}
		}
		cpu := "CPU "
		if strings.ContainsAny(cpus, ",-") {
			cpu = "CPUs "
		}
		parts = append(parts, "IRQ "+l.irq+" on "+cpu+cpus)
	}
	return finding(rundata.FindingSoundIRQCPUs, OK, strings.Join(parts, "; "), whyIRQCPUs, fixIRQCPUs)
}

func isSoundLine(l irqLine) bool {
	for _, a := range l.actions {
		if isSound(a) {
			return true
		}
	}
	return false
}

func irqList(ls []irqLine) string {
	var s []string
	for _, l := range ls {
		s = append(s, l.irq)
	}
	return strings.Join(s, ", ")
}
