//go:build vm

package alsa

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The cards users have, as qemu emulates them and the kernel's own
// drivers drive them (scripts/vmtest -cards): each by the driver name the
// kernel gives its card in /proc/asound/cards.
var cardDrivers = map[string]string{
	"hda":    "HDA-Intel",
	"usb":    "USB-Audio",
	"ac97":   "ICH",
	"es1370": "ENS1370",
}

var cardLineRE = regexp.MustCompile(`(?m)^\s*(\d+) \[(\S+)\s*\]: (\S+) - (.*)$`)

// vmCard is one card of /proc/asound/cards.
type vmCard struct {
	index            int
	id, driver, name string
}

func (c vmCard) hw() string { return fmt.Sprintf("hw:%d,0", c.index) }

func readCards() []vmCard {
	b, _ := os.ReadFile("/proc/asound/cards")
	var cs []vmCard
	for _, m := range cardLineRE.FindAllStringSubmatch(string(b), -1) {
		i, _ := strconv.Atoi(m[1])
		cs = append(cs, vmCard{i, m[2], m[3], m[4]})
	}
	return cs
}

// needCards returns the emulated cards scripts/vmtest -cards attached,
// by their short names, waiting for each to appear: the HDA codec and
// the USB device are probed after the modules load, and USB
// enumeration under TCG takes seconds.
func needCards(t *testing.T) map[string]vmCard {
	t.Helper()
	needAplay(t)
	list := os.Getenv("VMTEST_CARDS")
	if list == "" {
		t.Skip("no emulated cards in this VM: scripts/vmtest -cards all (make test runs it)")
	}
	found := map[string]vmCard{}
	deadline := time.Now().Add(60 * time.Second)
	for {
		for _, name := range strings.Split(list, ",") {
			for _, c := range readCards() {
				if c.driver == cardDrivers[name] {
					found[name] = c
				}
			}
		}
		if len(found) == len(strings.Split(list, ",")) {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile("/proc/asound/cards")
			t.Fatalf("VMTEST_CARDS=%s, but after 60 s /proc/asound/cards has only:\n%s", list, b)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// The PCM node appears after the card.
	for _, c := range found {
		waitFile(t, fmt.Sprintf("/dev/snd/pcmC%dD0p", c.index), 10*time.Second)
	}
	return found
}

func waitFile(t *testing.T, path string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %v", path, d)
		}
	}
}

// cardShapes are the buffers compared on each card: the smallest by
// default (make test), every one with scripts/vmtest -long.
func cardShapes() []struct{ period, periods int } {
	if os.Getenv("VMTEST_LONG") != "" {
		return []struct{ period, periods int }{{64, 2}, {256, 2}, {256, 3}, {1024, 2}}
	}
	return []struct{ period, periods int }{{64, 2}}
}

// TestVMCards: on each emulated card, idle, latencytest's xruns against
// the same-access aplay's, before and after it on the same boot (mmap:
// aplay -M; rw: plain aplay), by countsAgree on the xruns no stop of the
// machine explains.
func TestVMCards(t *testing.T) {
	cards := needCards(t)
	for _, name := range strings.Split(os.Getenv("VMTEST_CARDS"), ",") {
		c := cards[name]
		t.Run(name, func(t *testing.T) {
			t.Logf("card %d [%s]: %s - %s", c.index, c.id, c.driver, c.name)
			info, _ := os.ReadFile(fmt.Sprintf("/proc/asound/card%d/pcm0p/info", c.index))
			t.Logf("%s", info)
			for _, sh := range cardShapes() {
				for _, access := range []string{"mmap", "rw"} {
					t.Run(fmt.Sprintf("%dx%d/%s", sh.periods, sh.period, access), func(t *testing.T) {
						compare(t, c.hw(), access == "rw", sh.period, sh.periods, 10*time.Second)
					})
				}
			}
		})
	}
}
