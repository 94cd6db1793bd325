//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"latencytest/rundata"
)

// describeCard names card c for run.json: the control device's names,
// the module and bus sysfs shows for its device, the interrupts it raises
// and the flags its driver set for the stream (hw_params' info).
func (s system) describeCard(c card, info uint32) *rundata.Card {
	rc := &rundata.Card{Index: c.index, ID: c.id, Name: c.name, Flags: infoFlags(info)}
	if ci, err := cardInfo(filepath.Join(s.dev, fmt.Sprintf("controlC%d", c.index))); err == nil {
		rc.Driver, rc.LongName = cstr(ci.Driver[:]), cstr(ci.Longname[:])
	}
	if s.sys == "" {
		return rc
	}
	dev, err := filepath.EvalSymlinks(filepath.Join(s.sys, "class", "sound", fmt.Sprintf("card%d", c.index), "device"))
	if err != nil {
		return rc
	}
	rc.Module = moduleOf(dev)
	rc.Bus = busOf(dev)
	// The interrupt is the nearest device up the tree that has one: the
	// card itself on PCI, its USB host controller for a USB card.
	irqDev := dev
	for irqDev != s.sys && irqDev != "/" && !exists(filepath.Join(irqDev, "irq")) {
		irqDev = filepath.Dir(irqDev)
	}
	if irqDev == s.sys || irqDev == "/" {
		return rc
	}
	if irqDev != dev {
		rc.Controller = strings.TrimSpace(driverOf(irqDev) + " " + filepath.Base(irqDev))
	}
	rc.IRQs = interruptLines(filepath.Join(filepath.Dir(s.proc), "interrupts"), irqsOf(irqDev))
	return rc
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// driverOf is the name of the driver bound to a sysfs device.
func driverOf(dev string) string {
	d, err := os.Readlink(filepath.Join(dev, "driver"))
	if err != nil {
		return ""
	}
	return filepath.Base(d)
}

// moduleOf is the module of the driver bound to a sysfs device (the
// driver's name where it is built in).
func moduleOf(dev string) string {
	if m, err := os.Readlink(filepath.Join(dev, "driver", "module")); err == nil {
		return filepath.Base(m)
	}
	return driverOf(dev)
}

// busOf names a sysfs device by its bus and address.
func busOf(dev string) string {
	b, err := os.Readlink(filepath.Join(dev, "subsystem"))
	if err != nil {
		return filepath.Base(dev)
	}
	return filepath.Base(b) + " " + filepath.Base(dev)
}

// irqsOf are a PCI device's interrupt numbers: its MSI vectors when it
// uses them, else its line.
func irqsOf(dev string) []string {
	if es, err := os.ReadDir(filepath.Join(dev, "msi_irqs")); err == nil && len(es) > 0 {
		var ns []string
		for _, e := range es {
			ns = append(ns, e.Name())
		}
		return ns
	}
	b, err := os.ReadFile(filepath.Join(dev, "irq"))
	if err != nil || strings.TrimSpace(string(b)) == "0" {
		return nil
	}
	return []string{strings.TrimSpace(string(b))}
}

// interruptLines are the lines of /proc/interrupts for the numbers
// given, with their runs of blanks folded.
func interruptLines(path string, irqs []string) []string {
	b, err := os.ReadFile(path)
	if err != nil || len(irqs) == 0 {
		return nil
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		n, _, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok {
			continue
		}
		for _, irq := range irqs {
			if n == irq {
				lines = append(lines, strings.Join(strings.Fields(l), " "))
			}
		}
	}
	return lines
}

// cardNote is the terminal's line naming the card and the stream's flags.
func cardNote(c *rundata.Card) string {
	return fmt.Sprintf("card %d [%s] %s; stream flags %s", c.Index, c.ID, cardSummary(c), strings.Join(c.Flags, "|"))
}

// cardSummary names a card's driver, module, bus and interrupts.
func cardSummary(c *rundata.Card) string {
	var b strings.Builder
	b.WriteString(c.Driver)
	if c.Module != "" {
		fmt.Fprintf(&b, ", module %s", c.Module)
	}
	if c.Bus != "" {
		fmt.Fprintf(&b, " on %s", c.Bus)
	}
	if c.Controller != "" {
		fmt.Fprintf(&b, " via %s", c.Controller)
	}
	for _, l := range c.IRQs {
		n, _, _ := strings.Cut(l, ":")
		fmt.Fprintf(&b, ", IRQ %s", n)
	}
	return b.String()
}
