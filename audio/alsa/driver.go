//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"latencytest/audio"
	"latencytest/internal/badinput"
	"latencytest/rundata"
)

// Driver is the ALSA driver. Its zero value is not usable; call New.
type Driver struct {
	sys system
	cfg audio.Config

	play, capt *side
	sides      []*side // the open sides, playback first
	linked     bool    // capture starts and stops with playback

	rate         int // both sides'
	periodFrames int // both sides'

	periodNS int64 // nominal

	content    []byte // playback loop in the device format; nil: silence
	contentPos int
	glitch     audio.Glitch       // the break the next period written gets (audio.Glitcher)
	silence    int                // bytes of the content still to write as silence
	kept       []byte             // what the capture side read, up to its capacity (audio.Keeper)
	stream     *audio.CaptureRing // what the capture side read, on its way out (audio.Streamer)

	pfds      [2]unix.PollFd
	timeoutNS int64
	ts        unix.Timespec // ppoll writes the time left back into it

	grid   gridFit // the primary side's pointer clock
	jumped bool    // the grid saw the pointer jump; reported by the next Transfer

	// forceSyncPtr reads the status with SYNC_PTR even where the status
	// page can be mapped, and forceRW uses read/write access even where
	// mmap is offered: test hooks, so that the paths other machines take
	// are exercised on the VM's too.
	forceSyncPtr bool
	forceRW      bool
	// forceTime32 exchanges STATUS and SYNC_PTR in the 32-bit time_t
	// records on 32-bit, as for a kernel before 5.6 (hasTime32): a test
	// hook, since a 32-bit kernel of today takes both.
	forceTime32 bool

	// probeWith opens a stream for Devices in place of its PCM node: a
	// test hook, so that a fake card's streams can be listed.
	probeWith func(path string, stream int) (r refiner, done func(), err error)

	// blocking: --access rw on a playback stream sleeps inside a
	// blocking WRITEI, as plain aplay does, instead of in poll.
	blocking bool
}

// side is one direction of the stream and where its pointers are.
type side struct {
	pcm   *pcm
	name  string        // "hw:0,0"
	buf   []byte        // one period
	card  *rundata.Card // the card, as run.json names it
	shape shape         // as granted: a duplex's sides differ in channels and format

	raw   uint64 // last hardware pointer read, as the kernel keeps it (wraps at boundary)
	pos   uint64 // frames the hardware has moved since the stream (re)started
	appl  uint64 // frames the application has moved since then
	appl0 uint64 // the kernel's application pointer at the (re)start

	ready bool
	due   int64 // when the pending period became due
	// counted: the card's pointer counts what it moved (a BATCH card's:
	// USB audio adds each transfer's frames) instead of reading a DMA
	// position modulo the buffer, so it cannot lose whole buffers when
	// its update comes late (see lostBuffers).
	counted bool
	xrun    bool  // the stream was found stopped by an xrun
	written bool  // Wait wrote the period in its blocking write
	startTs int64 // the trigger timestamp of the last start

	// The pointer as seen at the last wakeup, and how far it moves per
	// update.
	seen    bool
	lastTs  int64
	lastPos uint64
	// gridFrom is the position from which updates place the grid: a
	// buffer after the first update since the (re)start, whose first
	// buffer is the card's start, not its clock (qemu's intel-hda ran
	// at two thirds of its rate through it after every start, and a grid
	// anchored on the first update put the periods after it 2–3.5 ms
	// before the card reached them).
	gridFrom uint64
	steps    stepStats
	back     paceSpan  // the last updates seen since the (re)start, each pace's start
	paces    stepStats // ns per paceFrames frames over paceSpan's updates
	paceNS   float64   // their median, ns per frame: the card's pace (0 until known)

	// With read/write access each transfer syncs the hardware pointer
	// first (WRITEI and READI do), which rewrites the status timestamp:
	// an update stamped ownTs says when we wrote, not when a period
	// completed. prePos and preTs are the last update before it that was
	// not ours (the period interrupt's).
	ownTs  int64
	preTs  int64
	prePos uint64

	// The card's link clock, where it offers one (pcm.atime): linkOn once
	// the start's STATUS_EXT reported the type asked for; linkZero the
	// link time at the trigger (0 for LINK, which the driver resets at the
	// start); linkSys and linkAt the last pointer update's system and link
	// times, read together from the status (0: none since the start).
	linkOn   bool
	linkZero int64
	linkSys  int64
	linkAt   int64
}

// New returns an ALSA driver.
func New() *Driver { return &Driver{sys: defaultSystem()} }

// Present reports whether there is a playback device to open.
func Present() bool { return defaultSystem().anyPlayback() }

// Open opens and configures the device(s) cfg names. Errors the user can
// fix (no such device, busy, a rate or period the device refuses) are
// bad input (internal/badinput).
func (d *Driver) Open(cfg audio.Config) (g audio.Granted, err error) {
	if cfg.Stream == "" {
		cfg.Stream = "playback"
	}
	if err := checkConfig(cfg); err != nil {
		return g, err
	}
	d.cfg = cfg
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	want := shape{access: accessMmapInterleaved, channels: cfg.Channels, rate: cfg.Rate, periodFrames: cfg.PeriodFrames, periods: cfg.Periods, anyRate: !cfg.RateGiven}
	if d.forceRW || cfg.Access == "rw" {
		want.access = accessRWInterleaved
	}
	notes, err := d.openSides(cfg, &want)
	if err != nil {
		return g, err
	}
	d.rate, d.periodFrames = want.rate, want.periodFrames
	d.periodNS = int64(d.periodFrames) * 1e9 / int64(d.rate)
	// A poll that sees no period for as long as the kernel's own blocking
	// write waits (10 s, "DMA or IRQ trouble") means the device died.
	// Shorter is wrong: snd-usb-audio without its low-latency mode, on
	// qemu's usb-audio, restarts its transfers 0.3-1.4 s after an xrun's
	// prepare, and aplay -M waits that out (docs/truth.md, "Real cards").
	d.timeoutNS = max(int64(want.periods)*d.periodNS*20, 10e9)
	if d.play != nil && d.capt != nil {
		notes = append(notes, d.link()...)
	}
	for _, s := range d.sides {
		if s.pcm.status == nil {
			notes = append(notes, fmt.Sprintf("%s: status page not mappable here; pointer timestamps read with SYNC_PTR", s.name))
		}
		if s.pcm.time32 {
			notes = append(notes, fmt.Sprintf("%s: the kernel takes STATUS and SYNC_PTR only with a 32-bit time_t (before 5.6): the old records are used, whose timestamps wrap in 2038", s.name))
		}
	}
	if n, err := d.loadContent(want); err != nil {
		return g, err
	} else if n != "" {
		notes = append(notes, n)
	}
	if cfg.StreamCapture {
		d.makeStream()
	} else {
		d.makeKeep(cfg.KeepFrames)
	}
	access := "rw"
	if want.access == accessMmapInterleaved {
		access = "mmap"
	} else if cfg.Access != "rw" && !d.forceRW {
		notes = append(notes, "read/write access: the device offers no mmap")
	}
	card := d.sides[0].card
	notes = append(notes, cardNote(card))
	if d.play != nil && d.capt != nil {
		notes = append(notes, "capture side: "+cardNote(d.capt.card))
	}
	g = audio.Granted{
		Card:         card,
		Device:       d.describe(),
		Format:       formatName(want.format),
		Access:       access,
		Rate:         want.rate,
		Channels:     want.channels,
		PeriodFrames: want.periodFrames,
		Periods:      want.periods,
		Notes:        notes,
	}
	captureSide(&g, d.play, d.capt)
	return g, nil
}

// captureSide records a duplex's capture side in g apart from the
// playback's: its card (its own stream flags, or another card with
// --capture-device), channels and format, which may differ from the
// playback's (settleCapture).
func captureSide(g *audio.Granted, play, capt *side) {
	if play == nil || capt == nil {
		return
	}
	g.CaptureCard = capt.card
	g.CaptureChannels = capt.shape.channels
	g.CaptureFormat = formatName(capt.shape.format)
}

// checkConfig refuses, as bad input, what no device could fix: the
// stream's direction (cfg.Stream given), shape, access, tone and file.
func checkConfig(cfg audio.Config) error {
	if cfg.Stream != "playback" && cfg.Stream != "capture" && cfg.Stream != "duplex" {
		return badinput.Errorf("--stream %q: want playback, capture or duplex", cfg.Stream)
	}
	if cfg.Rate <= 0 || cfg.Channels <= 0 || cfg.PeriodFrames <= 0 || cfg.Periods < 2 {
		return badinput.Errorf("--rate %d, --channels %d, --period %d, --periods %d: need all > 0 and periods ≥ 2", cfg.Rate, cfg.Channels, cfg.PeriodFrames, cfg.Periods)
	}
	if cfg.Access != "" && cfg.Access != "mmap" && cfg.Access != "rw" {
		return badinput.Errorf("--access %q: want mmap or rw", cfg.Access)
	}
	if cfg.ToneHz != 0 && cfg.File != "" {
		return badinput.New("--tone and --file: choose one")
	}
	if cfg.ToneHz < 0 || cfg.ToneHz >= float64(cfg.Rate)/2 {
		return badinput.Errorf("--tone %g: want a frequency between 0 and %d Hz (half the rate)", cfg.ToneHz, cfg.Rate/2)
	}
	if cfg.Loopback && (cfg.Stream != "duplex" || cfg.ToneHz != 0 || cfg.File != "" || cfg.Channels < 2) {
		return badinput.Errorf("--loopback with --stream %s, --channels %d, --tone %g, --file %q: want --stream duplex, 2 channels or more, and no --tone or --file (it plays its own signals)",
			cfg.Stream, cfg.Channels, cfg.ToneHz, cfg.File)
	}
	return nil
}

// openSides opens the stream's sides, playback then capture, and
// negotiates them (settleSides): *want on the first, which it updates to
// what was granted; a duplex's capture side its own channels, format and
// periods at the playback's rate and period. With --access rw it lets
// playback alone sleep in a blocking write as plain aplay does. The
// notes are the sides' and what --access rw could not do.
func (d *Driver) openSides(cfg audio.Config, want *shape) (notes []string, err error) {
	var play, capt *sideNode
	if cfg.Stream != "capture" {
		if play, err = d.openNode(cfg.Device, streamPlayback); err != nil {
			return nil, err
		}
		d.play = play.s
		d.sides = append(d.sides, d.play)
	}
	if cfg.Stream != "playback" {
		name := cfg.Device
		if cfg.Stream == "duplex" && cfg.CaptureDevice != "" {
			name = cfg.CaptureDevice
		}
		if capt, err = d.openNode(name, streamCapture); err != nil {
			return nil, err
		}
		d.capt = capt.s
		d.sides = append(d.sides, d.capt)
	}
	install := func(n *node, st *settled) error {
		if n == play.nodeOf() {
			return d.install(play, st)
		}
		return d.install(capt, st)
	}
	ps, cs, err := settleSides(play.nodeOf(), capt.nodeOf(), *want, install)
	if err != nil {
		return nil, err
	}
	for _, st := range []*settled{ps, cs} {
		if st != nil {
			notes = append(notes, st.notes...)
		}
	}
	if ps != nil {
		*want = ps.got
	} else {
		*want = cs.got
	}
	if cfg.Access == "rw" && !d.forceRW {
		if d.capt != nil {
			notes = append(notes, "--access rw with capture: the transfers wait in poll; only playback alone sleeps in a blocking write as plain aplay")
		} else if err := d.play.pcm.setBlocking(); err != nil {
			return nil, err
		} else {
			d.blocking = true
		}
	}
	return notes, nil
}

// sideNode is a side opened and not yet configured: its device node
// (for settleSides) and the card it is of.
type sideNode struct {
	node
	s *side
	c card
}

// nodeOf is n's node for settleSides (nil: no such side).
func (n *sideNode) nodeOf() *node {
	if n == nil {
		return nil
	}
	return &n.node
}

// link links a duplex's two sides so that they start and stop together;
// where the kernel cannot, the note says they start one after the other.
func (d *Driver) link() []string {
	// LINK takes the other stream's descriptor by value, not through
	// a pointer.
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(d.play.pcm.fd), ioctlLink, uintptr(d.capt.pcm.fd))
	d.linked = e == 0
	if !d.linked {
		return []string{fmt.Sprintf("the two sides could not be linked (%v): they start one after the other", e)}
	}
	return nil
}

// openNode opens one direction of name, with a one-line error naming
// the device when it is not there, busy or not allowed.
func (d *Driver) openNode(name string, stream int) (*sideNode, error) {
	dn, err := parseDevice(name)
	if err != nil {
		return nil, badinput.New(err.Error())
	}
	c, err := d.sys.resolve(dn)
	if err != nil {
		return nil, badinput.Errorf("--device %q: %v", name, err)
	}
	dir := "playback"
	if stream == streamCapture {
		dir = "capture"
	}
	hw := fmt.Sprintf("hw:%d,%d", c.index, dn.device)
	label := fmt.Sprintf("%s (%s %s)", hw, c.id, dir)
	path := d.sys.pcmPath(c, dn.device, stream)
	p, err := d.openPCM(c, dn, path, stream)
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOENT):
			return nil, badinput.Errorf("--device %q: card %d [%s] has no %s device %d (it has %s)", name, c.index, c.id, dir, dn.device, d.sys.describeDevices(c, stream))
		case errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EAGAIN):
			who := d.sys.holder(c, dn.device, stream)
			if who == "" {
				who = "another process"
			}
			return nil, badinput.Errorf("--device %q: %s is busy: held by %s%s", name, label, who, whatToDo(who))
		case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
			return nil, badinput.Errorf("--device %q: %v (join the audio group, or run as root)", name, err)
		}
		return nil, fmt.Errorf("open %s: %w", label, err)
	}
	p.time32 = d.forceTime32 && hasTime32
	s := &side{pcm: p, name: fmt.Sprintf("%s (%s)", hw, c.id)}
	return &sideNode{node: node{r: p, label: label, dir: dir}, s: s, c: c}, nil
}

// install sets a negotiated side up (HW_PARAMS, SW_PARAMS, the mappings)
// before the next side is negotiated (settleSides), and takes its period
// buffer and card record.
func (d *Driver) install(sn *sideNode, st *settled) error {
	s, p := sn.s, sn.s.pcm
	if err := p.setup(&st.h, st.got); err != nil {
		return err
	}
	if d.forceSyncPtr {
		p.unmapStatus()
		if p.controlMap != nil {
			unix.Munmap(p.controlMap)
			p.controlMap, p.control = nil, nil
		}
	}
	s.shape = st.got
	s.card = d.sys.describeCard(sn.c, st.h.Info)
	s.counted = st.h.Info&infoBatch != 0
	p.atime = linkRequest(st.h.Info)
	s.buf = make([]byte, st.got.periodFrames*p.frameBytes)
	// Present before the loop (see audio.Driver): the kernel writes each
	// captured period into buf, the loop reads and writes the mapping.
	clear(s.buf)
	audio.TouchPages(p.data)
	return nil
}

// openPCM opens the node, asking the control device for a particular
// subdevice when the name gives one.
func (d *Driver) openPCM(c card, dn deviceName, path string, stream int) (*pcm, error) {
	if dn.subdevice >= 0 {
		fd, err := unix.Open(filepath.Join(d.sys.dev, fmt.Sprintf("controlC%d", c.index)), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		defer unix.Close(fd)
		sub := int32(dn.subdevice)
		if e := ioctl(fd, ioctlCtlPCMPreferSub, unsafe.Pointer(&sub)); e != 0 {
			return nil, fmt.Errorf("prefer subdevice %d: %w", dn.subdevice, e)
		}
	}
	return openPCM(path, stream)
}

// describe is Granted.Device.
func (d *Driver) describe() string {
	var parts []string
	for _, s := range d.sides {
		dir := "playback"
		if s == d.capt {
			dir = "capture"
		}
		parts = append(parts, fmt.Sprintf("%s %s", s.name, dir))
	}
	return strings.Join(parts, " + ")
}

// loadContent renders what the playback side plays into one loop.
func (d *Driver) loadContent(s shape) (note string, err error) {
	var data *pcmData
	switch {
	case d.cfg.File != "":
		src, err := readWAV(d.cfg.File)
		if err != nil {
			return "", badinput.New(err.Error())
		}
		// Played as aplay plays it: at its own rate and channels, which
		// the device must grant; never resampled.
		if src.rate != s.rate || src.channels != s.channels {
			return "", badinput.Errorf("--file %s: %d Hz, %d channels, but the device granted %d Hz, %d channels; latencytest never resamples (convert the file, or choose a device that takes it)",
				d.cfg.File, src.rate, src.channels, s.rate, s.channels)
		}
		data = src
	case d.cfg.Loopback:
		if s.channels < 2 {
			return "", badinput.Errorf("--loopback: the device granted %d channel; the loop needs 2 (its sine on the first, its MLS on the second)", s.channels)
		}
		// The capture side has channels of its own (settleCapture); the
		// MLS must come back on its second.
		if c := d.capt; c != nil && c.shape.channels < 2 {
			return "", badinput.Errorf("--loopback: the capture side %s granted %d channel; the loop needs 2 (its MLS comes back on the second)", c.name, c.shape.channels)
		}
		if data, err = loopContent(s.rate, s.channels); err != nil {
			return "", err
		}
	case d.cfg.ToneHz > 0:
		var hz float64
		data, hz = tone(d.cfg.ToneHz, s.rate, s.channels)
		if hz != d.cfg.ToneHz {
			note = fmt.Sprintf("tone %g Hz rounded to %g Hz so that it loops without a click", d.cfg.ToneHz, hz)
		}
	default:
		return "", nil
	}
	if d.play == nil {
		return "nothing is played on a capture stream: --tone and --file ignored", nil
	}
	d.content = encode(data, s.format)
	return note, nil
}

// Start fills the playback buffer and starts the stream. It returns the
// kernel's trigger timestamp.
func (d *Driver) Start() (int64, error) {
	if err := d.restart(); err != nil {
		return 0, err
	}
	s := d.sides[0]
	if e := s.pcm.statusNow(); e != 0 {
		return audio.Now(), nil
	}
	return s.pcm.st.TriggerTstamp.ns(), nil
}

// restart (re)prepares every side, refills the playback buffer, starts
// the stream and resets the pointer bookkeeping. After an xrun the period
// grid starts afresh, as on any ALSA application that recovers.
func (d *Driver) restart() error {
	for _, s := range d.sides {
		s.pcm.drop()
		if e := s.pcm.prepare(); e != 0 {
			return fmt.Errorf("%s: prepare: %w", s.name, e)
		}
		_, raw, _, e := s.pcm.readStatus()
		if e != 0 {
			return fmt.Errorf("%s: status: %w", s.name, e)
		}
		appl, err := s.pcm.applPtr()
		if err != nil {
			return err
		}
		s.raw, s.pos, s.appl, s.appl0, s.ready, s.xrun, s.seen = raw, 0, 0, appl, false, false, false
		s.ownTs, s.preTs, s.prePos, s.written = 0, 0, 0, false
		s.linkOn, s.linkSys, s.linkAt = false, 0, 0
	}
	if s := d.play; s != nil {
		for n := 0; n < s.pcm.bufferFrames; n += d.periodFrames {
			if e := d.xfer(s); e != 0 {
				return fmt.Errorf("%s: prefill: %w", s.name, e)
			}
		}
	}
	for i, s := range d.sides {
		if i > 0 && d.linked {
			break
		}
		if e := s.pcm.start(); e != 0 {
			return fmt.Errorf("%s: start: %w", s.name, e)
		}
	}
	for _, s := range d.sides {
		// The prefill's writes left a stale timestamp, not one of ours.
		s.ownTs, s.preTs, s.prePos, s.startTs = 0, 0, 0, 0
		if s.pcm.statusNow() == 0 {
			s.startTs = s.pcm.st.TriggerTstamp.ns()
			s.linkOn, s.linkZero = linkStarted(s.pcm.atime, &s.pcm.st)
		}
	}
	d.grid.reset(float64(d.periodNS)/float64(d.periodFrames), float64(d.periodNS)/2)
	d.grid.lateJump = float64(d.sides[0].pcm.bufferFrames) * float64(d.periodNS) / float64(d.periodFrames) * 3 / 4
	d.jumped = false
	return nil
}

// linkStarted says, from the STATUS_EXT made right after a start that
// asked for the audio timestamp atime (linkRequest), whether the driver
// gave it (a driver that cannot demotes it to DEFAULT, the pointer's own
// position in ns, which says nothing new), and the link time at the
// trigger: 0 for LINK, which the driver resets at the start (HD-Audio's
// timecounter starts at 0 at the trigger); for a link clock that is not
// reset, the link time of the status less the time since the trigger, so
// that frame 0 is on the link clock where the trigger was on the system
// clock. The STATUS_EXT updated the pointer with the new request, so its
// pair of timestamps is of that type already.
func linkStarted(atime uint32, st *pcmStatus) (on bool, zero int64) {
	if atime == 0 || atstampReported(st.AudioTstampData) != atime&0xf || st.State != stateRunning {
		return false, 0
	}
	if atime&0xf == atstampLink {
		return true, 0
	}
	return true, st.AudioTstamp.ns() - (st.Tstamp.ns() - st.TriggerTstamp.ns())
}

// linkEnd is the instant side s's period ending at frame end (since the
// start) ended on the card's link clock, at rate frames per second: the
// last pair of timestamps read (the update's system time and link time,
// taken together by the driver) carried along the link clock to end.
// 0 without a link clock.
func (d *Driver) linkEnd(s *side, end uint64) int64 {
	if !s.linkOn || s.linkSys == 0 || d.rate == 0 {
		return 0
	}
	r := uint64(d.rate) // whole seconds apart: end·1e9 overflows after 13 h at 192 kHz
	endNS := int64(end/r)*1e9 + int64(end%r*1e9/r) + s.linkZero
	return s.linkSys - (s.linkAt - endNS)
}

// Glitch breaks the next period written (audio.Glitcher): a test hook.
func (d *Driver) Glitch(g audio.Glitch) { d.glitch = g }

// fill copies the next period of the playback loop into buf (left as
// silence when there is nothing to play), broken as d.glitch says: a
// period's frames of silence, the content's position moved on (a skip) or
// back (a repeat). A period can take two fills, where it wraps around the
// ring: the silence runs on into the second.
func (d *Driver) fill(buf []byte) {
	if d.content == nil {
		return
	}
	if g := d.glitch; g.Kind != audio.GlitchNone {
		fb := d.play.pcm.frameBytes
		switch g.Kind {
		case audio.GlitchSilence:
			d.silence = d.periodFrames * fb
		case audio.GlitchSkip:
			d.contentPos = (d.contentPos + g.Frames*fb) % len(d.content)
		case audio.GlitchRepeat:
			d.contentPos = ((d.contentPos-g.Frames*fb)%len(d.content) + len(d.content)) % len(d.content)
		}
		d.glitch = audio.Glitch{}
	}
	for n := 0; n < len(buf); {
		c := copy(buf[n:], d.content[d.contentPos:])
		n += c
		d.contentPos += c
		if d.contentPos == len(d.content) {
			d.contentPos = 0
		}
	}
	d.silent(buf)
}

// silent clears what of buf is still owed as silence (fill).
func (d *Driver) silent(buf []byte) {
	k := min(d.silence, len(buf))
	clear(buf[:k])
	d.silence -= k
}

// need is the hardware position at which side s has its next period: room
// for one in the playback buffer, or one captured.
func (d *Driver) need(s *side) uint64 {
	if s == d.play {
		return s.appl + uint64(d.periodFrames) - uint64(s.pcm.bufferFrames)
	}
	return s.appl + uint64(d.periodFrames)
}

// read reads side s's status and advances its hardware position.
func (d *Driver) read(s *side) (state int32, ts int64, e unix.Errno) {
	state, raw, ts, e := s.pcm.readStatus()
	if e != 0 {
		return 0, 0, e
	}
	s.pos += (raw + s.pcm.boundary - s.raw) % s.pcm.boundary
	s.raw = raw
	if s.linkOn {
		s.linkSys, s.linkAt = ts, s.pcm.audioTs
	}
	return state, ts, 0
}

// check reads side s's status and marks it ready when its next period is
// complete (or the stream stopped), with s.due the instant it became due.
func (d *Driver) check(s *side) error {
	state, ts, e := d.read(s)
	if e != 0 {
		return fmt.Errorf("%s: status: %w", s.name, e)
	}
	need := d.need(s)
	if state != stateRunning {
		if state != stateXrun && state != stateSuspended {
			return fmt.Errorf("%s: stream %s", s.name, stateName(state))
		}
		// ts is the update that found the buffer empty, (periods − 1)
		// periods after the pending one became due: the period carries
		// its lateness from then, as on the timer driver.
		s.ready, s.xrun = true, true
		s.due, _ = d.back(s, s.pos-min(need, s.pos), ts, uint64(d.periodFrames))
		return nil
	}
	pos := s.pos
	if ts == s.ownTs {
		// No update since our own transfer's sync. The period completed
		// either by the last interrupt before it, or after it, seen only
		// through our sync: then it became due when the pointer passed
		// need, interpolated on the fitted clock.
		if s.preTs == 0 || s.prePos < need {
			if pos >= need {
				s.ready = true
				s.due = ts - int64(float64(pos-need)*d.clock(s))
			}
			return nil
		}
		pos, ts = s.prePos, s.preTs
	} else if pos < need {
		return nil
	}
	var k uint64
	s.due, k = d.back(s, pos-need, ts, 0)
	s.ready = true
	jumpDue, known := d.jumpDue(s)
	jumped := d.jumped
	d.track(s, pos, ts, k == 0)
	if d.jumped && !jumped && known {
		s.due = min(s.due, jumpDue)
	}
	return nil
}

// jumpDue is when side s's next period was due on the card's clock, as of
// the last update seen: the first period boundary after it. It is the due
// instant of a period whose pointer jumped (lostBuffers): the pointer's
// timestamp is then that of an interrupt a buffer or more late, and a
// period counted from it would read as on time.
func (d *Driver) jumpDue(s *side) (int64, bool) {
	if !s.seen {
		return 0, false
	}
	next := (s.lastPos/uint64(d.periodFrames) + 1) * uint64(d.periodFrames)
	return s.lastTs + int64(float64(next-s.lastPos)*s.pace(d.grid.nominal)), true
}

// track notes side s's pointer at pos at ts (onTime: the update that
// completed the period, not a later one): pointer jumps of the first
// side, the fitted grid, and the pointer's steps and pace.
func (d *Driver) track(s *side, pos uint64, ts int64, onTime bool) {
	lost := s == d.sides[0] && d.lostBuffers(s, pos, ts, onTime)
	if lost {
		// The card's clock is a buffer or more from where it was: the
		// grid and the pace start afresh from this update. Kept, they
		// read every update after it as late by as much, each a jump
		// of its own (HD-Audio under qemu, whose updates jitter by its
		// 1 ms timer so that the grid's own restart rule, eight mean
		// delays, never came: 40 periods flagged after one pause).
		d.jumped = true
		d.grid.reset(d.grid.nominal, d.grid.minJump)
	}
	switch {
	case !s.seen:
		s.gridFrom = pos + uint64(s.pcm.bufferFrames)
	case lost:
		s.gridFrom = pos
	}
	if s == d.sides[0] && onTime && pos >= s.gridFrom {
		d.grid.add(pos, ts)
	}
	if !s.seen || lost {
		s.back.reset()
	}
	if s.seen && !lost && ts > s.lastTs && pos-s.lastPos >= uint64(d.periodFrames)/2 {
		s.steps.add(pos - s.lastPos)
		if p0, t0, ok := s.back.oldest(); ok && ts > t0 && pos > p0 {
			s.paces.add(uint64(ts-t0) * paceFrames / (pos - p0))
			s.paceNS = float64(s.paces.typical()) / paceFrames // once here, not at each of its uses in the period
		}
	}
	if !s.seen || (ts > s.lastTs && pos-s.lastPos >= uint64(d.periodFrames)/2) {
		s.back.add(pos, ts)
	}
	s.seen, s.lastTs, s.lastPos = true, ts, pos
}

// lostBuffers says whether a pointer at pos at ts is a buffer or more
// behind the card's clock: it lost whole buffers, the period interrupt
// having come more than a buffer late, and the driver, reading its
// position modulo the buffer, could not tell. That is a pointer jump,
// not proof of an xrun: the kernel saw none and the stream ran on.
// Behind the grid (on-time updates only), or behind the clock since the
// last update seen (which needs no fit, so it also holds right after a
// restart and after a late wakeup). The clock is the card's own pace,
// not the nominal rate: a card whose clock runs slow (an emulated one at
// a seventh of its rate) falls behind the nominal clock by a buffer
// every few periods and has lost nothing; and the grid, whose slope is
// held near the nominal rate, is then no reference at all.
//
// A counted pointer (BATCH) is never read as one that lost buffers: the
// kernel skips its own lost-buffer check (snd_pcm_update_hw_ptr0's
// jiffies check) for BATCH hardware for the same reason, "it can't give
// any strange position". An emulated USB card whose transfers complete
// a buffer late has paused, not lost frames.
func (d *Driver) lostBuffers(s *side, pos uint64, ts int64, onTime bool) bool {
	// Until the pace is known (the stream's first paceSpanN periods) a
	// card that is slow cannot be told from one that lost buffers, on
	// either clock: the grid holds a card of unknown pace to the nominal
	// rate.
	if s.counted || s.paceNS == 0 {
		return false
	}
	pace := s.paceNS
	bufNS := int64(float64(s.pcm.bufferFrames) * pace)
	// The grid is the updates' lower envelope, the earliest of them: an
	// update on time is up to a pointer step after it (its interrupt
	// comes at the step, on a tick of its own), so lateness is judged
	// beyond a step. Without that, where a step is half the buffer
	// (ES1370 at 2×64 under qemu: a period a step, interrupts on the 1 ms
	// audio timer) an update a millisecond behind the one before read as
	// a lost buffer, the kernel's reads showing the card moving.
	stepNS := int64(float64(s.steps.granularity()) * pace)
	if onTime && d.grid.n >= 8 && d.gridHolds(s) && ts-d.grid.at(pos)-stepNS > bufNS*3/4 {
		return true
	}
	return s.seen && ts-s.lastTs-int64(float64(pos-s.lastPos)*pace) > bufNS*3/4
}

// clock is side s's ns per frame: the fitted grid's where it holds,
// else the card's own pace.
func (d *Driver) clock(s *side) float64 {
	if d.gridHolds(s) {
		return d.grid.slope()
	}
	return s.pace(d.grid.nominal)
}

// gridHolds says whether side s's card keeps its nominal rate closely
// enough for the fitted grid, whose slope is held within maxDrift of it:
// its pace within clockOff. A crystal is off by a few hundred ppm; a
// card further off than clockOff is an emulator's or a broken one, and
// a grid for it would read every period as late.
func (d *Driver) gridHolds(s *side) bool {
	r := s.pace(d.grid.nominal) / d.grid.nominal
	return r > 1-clockOff && r < 1+clockOff
}

// back steps the update at ts back to the one that completed the period:
// when the pointer moved whole update steps past need (excess frames),
// later updates came after the one that completed it (the thread woke
// late), so ts goes back by them on the fitted clock. A step is what the
// pointer moves per update, learnt from the wakeups: about a period for
// cards that update in the period interrupt, coarser for some (snd-aloop
// moves in timer ticks of 8 ms, so one update can complete two periods).
// Until steps are known, fallback is used (0: none). It returns the
// instant and the steps taken.
func (d *Driver) back(s *side, excess uint64, ts int64, fallback uint64) (int64, uint64) {
	step := s.steps.granularity()
	if step == 0 {
		step = fallback
	}
	if step == 0 {
		return ts, 0
	}
	k := excess / step
	return ts - int64(float64(k*step)*d.clock(s)), k
}

// Wait blocks in poll until every side has its next period, then fills
// p.Due (the later side's pointer timestamp), p.PlaybackDue and
// p.CaptureDue (in duplex, each side's: a card may raise separate
// interrupts for the two, and the wakeup after each is its own
// distribution), p.Woke, p.Avail (of the
// first side), p.Grid and p.PollNS (the time spent in ppoll, summed over
// the calls this period took, as jack-test measured jackd's).
//
// Woke is read right after the status that shows the period complete,
// not before it: an update of the pointer between the two would otherwise
// give a Due after Woke. Reading the status page costs nanoseconds (a
// SYNC_PTR ioctl about a microsecond), so Woke is still "right after poll
// returned".
func (d *Driver) Wait(p *rundata.Sample) error {
	if d.blocking {
		if err := d.waitInWrite(p); err != nil {
			return err
		}
		return d.woke(p)
	}
	for {
		n := 0
		for _, s := range d.sides {
			if s.ready {
				continue
			}
			if err := d.syncCheck(s); err != nil {
				return err
			}
			if !s.ready {
				ev := int16(unix.POLLOUT)
				if s == d.capt {
					ev = unix.POLLIN
				}
				d.pfds[n] = unix.PollFd{Fd: int32(s.pcm.fd), Events: ev}
				n++
			}
		}
		if n == 0 {
			break
		}
		t0 := audio.Now()
		k, err := d.poll(n)
		p.PollNS += audio.Now() - t0
		if err == unix.EINTR {
			continue
		}
		if err != 0 {
			return fmt.Errorf("poll: %w", err)
		}
		if k == 0 {
			return fmt.Errorf("%s: no period in %d ms: the device stopped moving", d.sides[0].name, d.timeoutNS/1e6)
		}
	}
	return d.woke(p)
}

// woke fills the sample once every side has its period.
func (d *Driver) woke(p *rundata.Sample) error {
	p.Woke = audio.Now()
	for _, s := range d.sides {
		p.Due = max(p.Due, s.due)
	}
	if d.play != nil && d.capt != nil {
		p.PlaybackDue, p.CaptureDue = d.play.due, d.capt.due
	}
	first := d.sides[0]
	avail := int64(first.pos) - int64(first.appl)
	if first == d.play {
		avail += int64(first.pcm.bufferFrames)
	}
	if first.written {
		avail += int64(d.periodFrames) // as found, before the write
	}
	if !first.xrun && first.seen {
		avail = availAt(avail, int64(first.pcm.bufferFrames), p.Woke-first.lastTs, d.clock(first))
	}
	p.Avail = int32(avail)
	switch {
	case d.jumped:
		p.Grid = first.due // the grid restarted at the late update; the period was due before it (jumpDue)
	case !first.xrun && d.gridHolds(first):
		need := d.need(first)
		if first.written {
			need -= uint64(d.periodFrames)
		}
		// Never after the update that showed the period complete: an
		// update comes late, never before the card reached what it
		// reports. A grid later than that is anchored on a late update
		// (the first after a restart, under a machine's stops: HD-Audio
		// rw under qemu read a period as woken 3.0 ms before it ended).
		p.Grid = min(d.grid.at(need), first.due)
	}
	if !first.xrun && !d.jumped {
		need := d.need(first)
		if first.written {
			need -= uint64(d.periodFrames)
		}
		p.Link = d.linkEnd(first, need)
	}
	return nil
}

// availAt is the room found at the last pointer update, avail frames,
// as it stood sinceNS later at the wakeup: the card went on playing (or
// capturing) meanwhile, a frame every nsPerFrame, up to the whole buffer.
// The pointer is as of its last update (the interrupt), so without this
// the headroom would read up to a period more than there was.
func availAt(avail, buffer, sinceNS int64, nsPerFrame float64) int64 {
	if sinceNS > 0 && nsPerFrame > 0 {
		avail += int64(float64(sinceNS) / nsPerFrame)
	}
	return min(avail, buffer)
}

// waitInWrite is Wait for --access rw playback: when there is no room yet
// it writes the next period with a blocking WRITEI, which sleeps in the
// kernel until a period interrupt makes room and copies right after it,
// before returning: plain aplay's path from the interrupt to the write.
// The period is then written (Transfer has only to note an xrun); its due
// is the update that woke the write. When there is room already (the
// thread is late) it returns at once and Transfer writes, as in poll.
func (d *Driver) waitInWrite(p *rundata.Sample) error {
	s := d.play
	// The status as the last update left it, without a sync of our own:
	// plain aplay's blocking write goes straight to WRITEI, which syncs
	// the pointer itself, and an HWSYNC before it cost 72–113 µs a
	// period on qemu's cards, against plain aplay's median answer to
	// the interrupt of about 560 µs (TestVMCardPauses' answer split).
	if err := d.check(s); err != nil || s.ready {
		return err
	}
	d.fill(s.buf)
	t0 := audio.Now()
	e := s.pcm.writeAll(s.buf, d.periodFrames)
	p.PollNS += audio.Now() - t0
	switch e {
	case 0, unix.EPIPE, unix.ESTRPIPE:
	case unix.EIO:
		return fmt.Errorf("%s: no period for 10 s: the device stopped moving", s.name)
	default:
		return fmt.Errorf("%s: write: %w", s.name, e)
	}
	// The write's own sync at its start may have moved the pointer; what
	// woke it is the interrupt after that, the last update now.
	if err := d.check(s); err != nil {
		return err
	}
	if !s.ready {
		return fmt.Errorf("%s: the write returned without room for its period", s.name)
	}
	if e == 0 {
		s.written = true
		s.appl += uint64(d.periodFrames)
	}
	return nil
}

// Transfer writes (and reads) the period. An xrun found on the way is
// measured as aplay measures it (now minus the trigger timestamp of the
// stop) and recovered from by restarting the stream. A pointer jump (the
// pointer lost whole buffers, see check) is only flagged: it is not an
// xrun, and the stream runs on.
func (d *Driver) Transfer(p *rundata.Sample) error {
	if d.jumped {
		p.Flags |= rundata.FlagPointerJump
		d.jumped = false
	}
	for _, s := range d.sides {
		s.ready = false
		e := unix.EPIPE
		switch {
		case s.written:
			s.written, e = false, 0
		case !s.xrun:
			e = d.xfer(s)
		}
		switch e {
		case 0:
			if s == d.capt {
				d.keep(s.buf)
			}
			continue
		case unix.EPIPE, unix.ESTRPIPE:
			p.Xrun = d.xrunLength(s, p)
			if s == d.capt {
				p.Flags |= rundata.FlagCapture
			}
			return d.restart()
		default:
			return fmt.Errorf("%s: transfer: %w", s.name, e)
		}
	}
	return nil
}

// xrunLength measures side s's xrun, found at the transfer of period p,
// as aplay does: now minus the trigger timestamp of the stop. A driver
// that latches its own trigger timestamps (snd-hda-intel) leaves the
// stop's unset, so the trigger timestamp is still the start's and aplay's
// figure is the time since the start (seconds, where the stop was
// 300 ms); then the stop is the pointer update that found the buffer
// empty, the status' last. aplay, which does no work between its wakeup
// and its write, notices a stop that came before the wakeup right then:
// so the simulated DSP work after it is not part of the length. A stop
// that came during that work is the work's xrun, from the stop to now.
func (d *Driver) xrunLength(s *side, p *rundata.Sample) int64 {
	now := audio.Now()
	_, _, ts, e := s.pcm.readStatus()
	if s.pcm.statusNow() != 0 || s.pcm.st.State != stateXrun {
		return 1
	}
	stop := s.pcm.st.TriggerTstamp.ns()
	if stop <= s.startTs && e == 0 && ts > s.startTs {
		stop = ts
	}
	return xrunSince(stop, now, p)
}

// xrunSince is the length of an xrun that stopped the stream at stop and
// was found now, at the transfer of period p (xrunLength).
func xrunSince(stop, now int64, p *rundata.Sample) int64 {
	if stop <= p.Woke {
		now -= p.DSP
	}
	return max(now-stop, 1)
}

// poll waits for the first n of d.pfds, with a raw ppoll like every call
// of the period loop.
func (d *Driver) poll(n int) (int, unix.Errno) {
	// unix.Timespec is 32-bit on 32-bit Linux, as SYS_PPOLL (not ppoll_time64)
	// expects there; a timeout fits.
	d.ts = unix.NsecToTimespec(d.timeoutNS)
	k, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&d.pfds[0])), uintptr(n),
		uintptr(unsafe.Pointer(&d.ts)), 0, 0, 0)
	return int(k), e
}

// PinnableLoop reports that Wait and Transfer make only raw system calls,
// so the engine may pin the period loop (audio.Pinnable).
func (d *Driver) PinnableLoop() bool { return true }

// xfer moves one period of side s: the next period of the playback loop
// out, or a captured one into s.buf.
func (d *Driver) xfer(s *side) unix.Errno {
	if s.pcm.mmap {
		return d.xferMmap(s)
	}
	return d.synced(s, d.xferRW)
}

// syncCheck brings side s's pointer up to date and checks it for its
// period (check): the look for room of both ways to wait. An xrun found
// by the sync (EPIPE) is check's to report.
func (d *Driver) syncCheck(s *side) error {
	if e := d.hwsync(s); e != 0 && e != unix.EPIPE {
		return fmt.Errorf("%s: hwsync: %w", s.name, e)
	}
	return d.check(s)
}

// hwsync brings side s's pointer up to date, as alsa-lib does before it
// looks for room in a running stream (see pcm.hwsync).
func (d *Driver) hwsync(s *side) unix.Errno {
	return d.synced(s, func(s *side) unix.Errno { return s.pcm.hwsync() })
}

// synced runs op, a call that syncs the hardware pointer (a transfer, a
// hwsync), and keeps the pointer's timestamps apart: the sync rewrites
// the status timestamp with its own instant, which says when we asked,
// not when a period completed. The last update before it that was not
// our own (the period interrupt's) is kept in prePos and preTs, the
// sync's own stamp in ownTs (see check).
func (d *Driver) synced(s *side, op func(*side) unix.Errno) unix.Errno {
	if _, ts, e := d.read(s); e == 0 && ts != s.ownTs {
		s.prePos, s.preTs = s.pos, ts
	}
	e := op(s)
	if _, ts, e2 := d.read(s); e == 0 && e2 == 0 {
		s.ownTs = ts
	}
	return e
}

// xferRW moves the period with WRITEI or READI.
func (d *Driver) xferRW(s *side) unix.Errno {
	if s == d.play {
		d.fill(s.buf)
	}
	fb := s.pcm.frameBytes
	for done := 0; done < d.periodFrames; {
		k, e := s.pcm.xferi(s.buf[done*fb:], d.periodFrames-done)
		if e == unix.EAGAIN {
			// Not enough room yet: cannot happen after poll said there
			// is a period, but wait rather than spin if it does.
			d.pfds[0] = unix.PollFd{Fd: int32(s.pcm.fd), Events: unix.POLLOUT | unix.POLLIN}
			d.poll(1)
			continue
		}
		if e != 0 {
			return e
		}
		done += k
		s.appl += uint64(k)
	}
	return 0
}

// xferMmap writes or reads the period in place in the mapped buffer and
// moves the application pointer: no system call where the control page
// is mapped. An xrun shows as the stream's state, reported as EPIPE as
// WRITEI would.
func (d *Driver) xferMmap(s *side) unix.Errno {
	p := s.pcm
	// No pointer sync of its own: Wait synced it (HWSYNC) before it
	// looked for room, as alsa-lib does before a write and aplay -M is
	// seen doing (docs/alsa.md).
	fb := p.frameBytes
	buf := uint64(p.bufferFrames)
	for done := 0; done < d.periodFrames; {
		off := int((s.appl0 + s.appl) % p.boundary % buf)
		n := min(d.periodFrames-done, p.bufferFrames-off)
		area := p.data[off*fb : (off+n)*fb]
		if s == d.play {
			if d.content == nil {
				clear(area)
			} else {
				d.fill(area)
			}
		} else {
			copy(s.buf[done*fb:], area)
		}
		done += n
		s.appl += uint64(n)
	}
	state, e := p.commit((s.appl0 + s.appl) % p.boundary)
	if e != 0 {
		return e
	}
	if state == stateXrun || state == stateSuspended {
		return unix.EPIPE
	}
	return 0
}

// Captured is the last period read on the capture side, in the device's
// format (see Format); it is overwritten by the next Transfer.
func (d *Driver) Captured() []byte {
	if d.capt == nil {
		return nil
	}
	return d.capt.buf
}

// ReportedDelay reads STATUS on each side: the kernel gives its delay as
// the frames in the buffer (playback: the buffer less what is available;
// capture: what is available) plus the driver's runtime->delay, which is
// what is left once the buffer's frames are taken off.
func (d *Driver) ReportedDelay() (rd rundata.ReportedDelay, ok bool) {
	for _, s := range d.sides {
		if e := s.pcm.statusNow(); e != 0 || s.pcm.st.State != stateRunning {
			return rundata.ReportedDelay{}, false
		}
		st := &s.pcm.st
		if s == d.play {
			rd.PlaybackFrames = int64(st.Delay) - (int64(s.pcm.bufferFrames) - int64(st.Avail))
		} else {
			rd.CaptureFrames = int64(st.Delay) - int64(st.Avail)
		}
	}
	return rd, len(d.sides) > 0
}

// Close stops the stream and releases the devices.
func (d *Driver) Close() error {
	var first error
	for _, s := range []*side{d.capt, d.play} {
		if s == nil {
			continue
		}
		if err := s.pcm.close(); err != nil && first == nil {
			first = err
		}
	}
	d.play, d.capt, d.sides = nil, nil, nil
	return first
}

func stateName(s int32) string {
	names := []string{"open", "setup", "prepared", "running", "xrun", "draining", "paused", "suspended", "disconnected"}
	if s >= 0 && int(s) < len(names) {
		return names[s]
	}
	return fmt.Sprintf("state %d", s)
}
