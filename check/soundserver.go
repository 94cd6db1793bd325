package check

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"latencytest/rundata"
)

// On a desktop the soundcard belongs to a sound server (PipeWire, JACK,
// PulseAudio): latencytest opens hw: directly and meets EBUSY there, and
// what a user hears runs through the server's thread, woken by the card's
// interrupt. So check says which server holds which card, at which rate
// and period, whether the server's threads got real-time priority (from
// PipeWire's module-rt or rtkit, jackd's -R), and where that priority
// stands against the card's interrupt thread, which must run first.
const (
	nameSoundServer = "sound server"
	whySoundServer  = "a sound server holding the card makes latencytest's hw: open fail (EBUSY), and its own thread must be real-time and below the card's interrupt thread, or the interrupt that wakes it waits behind it"
	fixServerHeld   = "to measure the kernel: stop the server for the run (systemctl --user stop pipewire.socket pipewire pipewire-pulse wireplumber; or stop jackd), or measure through it: --driver jack (or portaudio) under JACK"
	fixServerNotRT  = "give it real-time priority: PipeWire's module-rt with rtkit or an rtprio limit for the user (/etc/security/limits.d: @audio - rtprio 95), jackd -R"
	fixServerAbove  = "raise the card's interrupt thread above the server's: chrt -f -p PRIO PID of the irq/ thread, or rtirq (Debian: rtirq-init)"
)

// soundServers names the processes that are sound servers, by comm.
var soundServers = map[string]string{
	"pipewire":       "PipeWire",
	"pipewire-pulse": "PipeWire",
	"wireplumber":    "PipeWire",
	"jackd":          "JACK",
	"jackdbus":       "JACK",
	"pulseaudio":     "PulseAudio",
}

// heldStream is a PCM substream some process has open (/proc/asound's
// status names its owner) and the shape it was opened at.
type heldStream struct {
	dev   string // hw:CARD,DEVICE and the direction: "hw:0,0 playback"
	owner string // pid
	hw    string // "48000 Hz, period 1024, buffer 2048"
}

// parseOwner is the owner_pid of a substream's status file; "" when it is
// closed (the file says just "closed").
func parseOwner(status string) string {
	for _, l := range strings.Split(status, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "owner_pid" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// parseHWParams says the rate, period and buffer of a substream's
// hw_params file ("rate: 48000 (48000/1)", "period_size: 1024", ...).
func parseHWParams(s string) string {
	f := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			f[strings.TrimSpace(k)], _, _ = strings.Cut(strings.TrimSpace(v), " ")
		}
	}
	if f["rate"] == "" {
		return "its parameters not set"
	}
	return fmt.Sprintf("%s Hz, period %s, buffer %s frames", f["rate"], f["period_size"], f["buffer_size"])
}

// heldStreams lists the open substreams of every card.
func (e *env) heldStreams() []heldStream {
	var out []heldStream
	for _, st := range e.glob("/proc/asound/card*/pcm*/sub*/status") {
		s, err := e.read(st)
		owner := parseOwner(s)
		if err != nil || owner == "" {
			continue
		}
		sub := path.Dir(st)
		pcm := path.Base(path.Dir(sub)) // pcm0p
		card := strings.TrimPrefix(path.Base(path.Dir(path.Dir(sub))), "card")
		dir := "playback"
		if strings.HasSuffix(pcm, "c") {
			dir = "capture"
		}
		hw, _ := e.read(sub + "/hw_params")
		out = append(out, heldStream{
			dev:   fmt.Sprintf("hw:%s,%s %s", card, strings.TrimRight(strings.TrimPrefix(pcm, "pcm"), "pc"), dir),
			owner: owner,
			hw:    parseHWParams(hw),
		})
	}
	return out
}

// rtThread is a process's highest real-time thread.
type rtThread struct {
	comm         string
	policy, prio int
}

// topRT is pid's real-time thread of highest priority (ok false when none
// is real-time).
func (e *env) topRT(pid string) (best rtThread, ok bool) {
	for _, dir := range e.glob("/proc/" + pid + "/task/[0-9]*") {
		st, err := e.read(dir + "/stat")
		if err != nil {
			continue
		}
		s, sok := parseStatTask(st)
		if !sok || (s.policy != schedFIFO && s.policy != schedRR) {
			continue
		}
		if !ok || s.prio > best.prio {
			best, ok = rtThread{comm: s.comm, policy: s.policy, prio: s.prio}, true
		}
	}
	return best, ok
}

// soundIRQPrio is the lowest priority among the soundcard's interrupt
// threads (ok false when there is none: not threaded, or no line).
func (e *env) soundIRQPrio() (irqThread, bool) {
	si, err := e.soundIRQ()
	if err != nil || len(si.threads) == 0 {
		return irqThread{}, false
	}
	low := si.threads[0]
	for _, t := range si.threads[1:] {
		if t.prio < low.prio {
			low = t
		}
	}
	return low, true
}

// checkSoundServer says which sound server holds which card, and whether
// its threads are real-time below the card's interrupt thread.
func checkSoundServer(e *env) []rundata.Finding {
	irq, threaded := e.soundIRQPrio()
	var out []rundata.Finding
	for _, h := range e.heldStreams() {
		comm, _ := e.read("/proc/" + h.owner + "/comm")
		comm = strings.TrimSpace(comm)
		server := soundServers[comm]
		who := fmt.Sprintf("%s held by %s (pid %s), %s", h.dev, comm, h.owner, h.hw)
		if server == "" {
			out = append(out, finding(nameSoundServer, INFO, who+": an application, not a sound server (latencytest meets EBUSY on it while it plays)", whySoundServer, ""))
			continue
		}
		who = fmt.Sprintf("%s held by %s (%s, pid %s), %s", h.dev, server, comm, h.owner, h.hw)
		top, rt := e.topRT(h.owner)
		switch {
		case !rt:
			out = append(out, finding(nameSoundServer, WARN, who+"; none of its threads is real-time", whySoundServer, fixServerNotRT+"; "+fixServerHeld))
		case threaded && top.prio >= irq.prio:
			out = append(out, finding(nameSoundServer, WARN, fmt.Sprintf("%s; its thread %s %s %d is not below the card's interrupt thread %s %s %d",
				who, top.comm, rundata.PolicyName(top.policy), top.prio, irq.comm, rundata.PolicyName(irq.policy), irq.prio), whySoundServer, fixServerAbove+"; "+fixServerHeld))
		default:
			out = append(out, finding(nameSoundServer, INFO, fmt.Sprintf("%s; its thread %s %s %d%s",
				who, top.comm, rundata.PolicyName(top.policy), top.prio, irqBeside(irq, threaded)), whySoundServer, fixServerHeld))
		}
	}
	if len(out) > 0 {
		return out
	}
	if running := e.runningServers(); len(running) > 0 {
		return []rundata.Finding{finding(nameSoundServer, INFO, strings.Join(running, ", ")+" running, holding no card now (PipeWire suspends a card nobody plays to, and opens it again when a client plays)", whySoundServer, fixServerHeld)}
	}
	return []rundata.Finding{finding(nameSoundServer, OK, "no sound server runs and no card is held", whySoundServer, "")}
}

// irqBeside is ", below the card's interrupt thread irq/N (SCHED_FIFO 90)"
// where the card's interrupts are threaded.
func irqBeside(irq irqThread, threaded bool) string {
	if !threaded {
		return "; the card's interrupt is not threaded"
	}
	return fmt.Sprintf(", below the card's interrupt thread %s %s %d", irq.comm, rundata.PolicyName(irq.policy), irq.prio)
}

// runningServers lists the sound servers running, as "PipeWire (pid 812)".
func (e *env) runningServers() []string {
	var out []string
	for _, dir := range e.glob("/proc/[0-9]*") {
		comm, err := e.read(dir + "/comm")
		if err != nil {
			continue
		}
		if s := soundServers[strings.TrimSpace(comm)]; s != "" {
			pid, _ := strconv.Atoi(path.Base(dir))
			out = append(out, fmt.Sprintf("%s (%s, pid %d)", s, strings.TrimSpace(comm), pid))
		}
	}
	return out
}
