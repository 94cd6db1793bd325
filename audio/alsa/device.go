//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// deviceName is a parsed hw: device name.
type deviceName struct {
	card      string // index ("0") or id ("Dummy"); "" = the first card
	device    int
	subdevice int // -1: any free one
}

// parseDevice reads the names aplay -D takes for hardware devices:
// hw:CARD, hw:CARD,DEV, hw:CARD,DEV,SUB and the hw:CARD=X,DEV=Y form.
// CARD is a card index or its id from /proc/asound/cards. "" means the
// first card's device 0.
func parseDevice(s string) (deviceName, error) {
	d := deviceName{subdevice: -1}
	if s == "" {
		return d, nil
	}
	rest, ok := strings.CutPrefix(s, "hw:")
	if !ok || rest == "" {
		return d, fmt.Errorf("--device %q: %s", s, notHW(s))
	}
	parts := strings.Split(rest, ",")
	if len(parts) > 3 {
		return d, fmt.Errorf("--device %q: too many fields; want hw:CARD,DEV[,SUB]", s)
	}
	keys := []string{"CARD", "DEV", "SUBDEV"}
	for i, part := range parts {
		if k, v, ok := strings.Cut(part, "="); ok {
			if k != keys[i] {
				return d, fmt.Errorf("--device %q: field %d is %s=, want %s=", s, i+1, k, keys[i])
			}
			part = v
		}
		if i == 0 {
			if part == "" {
				return d, fmt.Errorf("--device %q: empty card", s)
			}
			d.card = part
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return d, fmt.Errorf("--device %q: %s must be a number ≥ 0, not %q", s, strings.ToLower(keys[i]), part)
		}
		if i == 1 {
			d.device = n
		} else {
			d.subdevice = n
		}
	}
	return d, nil
}

// notHW says what an alsa-lib device name that is not hw: stands for and
// which hw: device to give instead: this driver opens the hardware
// directly, without alsa-lib's plugins.
func notHW(s string) string {
	const direct = "latencytest opens hardware devices directly, without alsa-lib's plugins"
	prefix, args, _ := strings.Cut(s, ":")
	switch prefix {
	case "default", "sysdefault", "pipewire", "pulse", "jack":
		return direct + "; " + prefix + " is alsa-lib's, usually card 0 (hw:0,0) unless ~/.asoundrc, /etc/asound.conf or a sound server (PipeWire, PulseAudio) routes it elsewhere: give --device hw:CARD,DEV (latencytest devices lists them; through a sound server: --driver portaudio)"
	case "plughw", "front", "dmix", "dsnoop", "iec958", "surround40", "surround51", "surround71":
		if args != "" {
			if d, err := parseDevice("hw:" + args); err == nil {
				card := d.card
				if card == "" {
					card = "0"
				}
				plugin := strings.TrimSuffix(prefix, "hw") // "plughw" is the plug plugin
				return fmt.Sprintf("%s; %s is alsa-lib's %s plugin over hw:%s,%d: give --device hw:%s,%d", direct, s, plugin, card, d.device, card, d.device)
			}
		}
	}
	return direct + "; give hw:CARD or hw:CARD,DEV (CARD an index or id from /proc/asound/cards, e.g. hw:0,0 or hw:Dummy)"
}

// card is one sound card as the control device describes it.
type card struct {
	index int
	id    string
	name  string
}

// system is where the ALSA device nodes and their descriptions live:
// /dev/snd, /proc/asound and /sys normally, a fixture in tests.
type system struct {
	dev  string
	proc string
	sys  string
}

func defaultSystem() system { return system{dev: "/dev/snd", proc: "/proc/asound", sys: "/sys"} }

// cards lists the cards that have a control device, by index.
func (s system) cards() ([]card, error) {
	paths, _ := filepath.Glob(filepath.Join(s.dev, "controlC*"))
	var cs []card
	for _, p := range paths {
		n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(p), "controlC"))
		if err != nil {
			continue
		}
		c := card{index: n, id: strconv.Itoa(n)}
		if info, err := cardInfo(p); err == nil {
			c.id, c.name = cstr(info.ID[:]), cstr(info.Name[:])
		} else if b, err := os.ReadFile(filepath.Join(s.proc, fmt.Sprintf("card%d", n), "id")); err == nil {
			c.id = strings.TrimSpace(string(b))
		}
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].index < cs[j].index })
	return cs, nil
}

func cardInfo(control string) (ctlCardInfo, error) {
	var info ctlCardInfo
	fd, err := unix.Open(control, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return info, err
	}
	defer unix.Close(fd)
	if e := ioctl(fd, ioctlCtlCardInfo, unsafe.Pointer(&info)); e != 0 {
		return info, e
	}
	return info, nil
}

// resolve finds the card a name refers to.
func (s system) resolve(d deviceName) (card, error) {
	cs, _ := s.cards()
	if len(cs) == 0 {
		return card{}, fmt.Errorf("no sound card: %s has no control device (is a sound driver loaded? see /proc/asound/cards)", s.dev)
	}
	if d.card == "" {
		return cs[0], nil
	}
	for _, c := range cs {
		if d.card == strconv.Itoa(c.index) || d.card == c.id {
			return c, nil
		}
	}
	var have []string
	for _, c := range cs {
		have = append(have, fmt.Sprintf("%d [%s]", c.index, c.id))
	}
	return card{}, fmt.Errorf("no sound card %q; cards here: %s", d.card, strings.Join(have, ", "))
}

// pcmPath is the device node of one stream of a PCM device.
func (s system) pcmPath(c card, device, stream int) string {
	dir := "p"
	if stream == streamCapture {
		dir = "c"
	}
	return filepath.Join(s.dev, fmt.Sprintf("pcmC%dD%d%s", c.index, device, dir))
}

// holder names the process that has a busy PCM stream open, from
// /proc/asound/cardN/pcmDx/subS/status ("owner_pid : 1234").
func (s system) holder(c card, device, stream int) string {
	dir := "p"
	if stream == streamCapture {
		dir = "c"
	}
	subs, _ := filepath.Glob(filepath.Join(s.proc, fmt.Sprintf("card%d", c.index), fmt.Sprintf("pcm%d%s", device, dir), "sub*", "status"))
	var who []string
	for _, f := range subs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok || strings.TrimSpace(k) != "owner_pid" {
				continue
			}
			// owner_pid is the opening thread's id; name its process.
			pid := strings.TrimSpace(v)
			procDir := filepath.Dir(s.proc)
			if b, err := os.ReadFile(filepath.Join(procDir, pid, "status")); err == nil {
				for _, l := range strings.Split(string(b), "\n") {
					if tgid, ok := strings.CutPrefix(l, "Tgid:"); ok && strings.TrimSpace(tgid) != "" {
						pid = strings.TrimSpace(tgid)
					}
				}
			}
			comm, err := os.ReadFile(filepath.Join(procDir, pid, "comm"))
			if err == nil {
				who = append(who, fmt.Sprintf("pid %s (%s)", pid, strings.TrimSpace(string(comm))))
			} else {
				who = append(who, "pid "+pid)
			}
		}
	}
	return strings.Join(who, ", ")
}

// whatToDo says how to free a device a sound server holds, from the
// holder's description (holder's "pid N (comm)").
func whatToDo(who string) string {
	switch {
	case strings.Contains(who, "(pipewire") || strings.Contains(who, "(wireplumber"):
		return "; PipeWire holds the card: stop it for the run (systemctl --user stop pipewire.socket pipewire wireplumber), or measure through it with --driver portaudio"
	case strings.Contains(who, "(pulseaudio"):
		return "; PulseAudio holds the card: run under pasuspender -- latencytest run ..., or measure through it with --driver portaudio"
	case strings.Contains(who, "(jackd") || strings.Contains(who, "(jackdbus"):
		return "; JACK holds the card: stop jackd, or measure through JACK with --driver portaudio --device JACK"
	}
	return ""
}

// pcmDevices lists the PCM device numbers of a card, through the control
// device's PCM_NEXT_DEVICE, falling back on the device nodes.
func (s system) pcmDevices(c card) []int {
	fd, err := unix.Open(filepath.Join(s.dev, fmt.Sprintf("controlC%d", c.index)), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		defer unix.Close(fd)
		var devs []int
		next := int32(-1)
		for {
			if e := ioctl(fd, ioctlCtlPCMNextDevice, unsafe.Pointer(&next)); e != 0 || next < 0 {
				break
			}
			devs = append(devs, int(next))
		}
		if devs != nil {
			return devs
		}
	}
	seen := map[int]bool{}
	paths, _ := filepath.Glob(filepath.Join(s.dev, fmt.Sprintf("pcmC%dD*", c.index)))
	for _, p := range paths {
		n := strings.TrimPrefix(filepath.Base(p), fmt.Sprintf("pcmC%dD", c.index))
		if v, err := strconv.Atoi(strings.TrimRight(n, "pc")); err == nil {
			seen[v] = true
		}
	}
	var devs []int
	for d := range seen {
		devs = append(devs, d)
	}
	sort.Ints(devs)
	return devs
}

// pcmName is the PCM device's name from the control device ("" if
// unknown).
func (s system) pcmName(c card, device, stream int) string {
	fd, err := unix.Open(filepath.Join(s.dev, fmt.Sprintf("controlC%d", c.index)), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	info := pcmInfo{Device: uint32(device), Subdevice: 0, Stream: int32(stream)}
	if ioctl(fd, ioctlCtlPCMInfo, unsafe.Pointer(&info)) != 0 {
		return ""
	}
	return cstr(info.Name[:])
}

// anyPlayback reports whether a playback PCM node exists.
func (s system) anyPlayback() bool {
	m, _ := filepath.Glob(filepath.Join(s.dev, "pcmC*D*p"))
	return len(m) > 0
}

// cstr is a NUL-terminated C string.
func cstr(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
