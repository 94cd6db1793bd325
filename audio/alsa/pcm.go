//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pcm is one open PCM substream: /dev/snd/pcmCxDyp or ...c.
type pcm struct {
	fd     int
	path   string
	stream int // streamPlayback or streamCapture

	// status points into the kernel's status page when it could be
	// mapped (x86 and other cache-coherent architectures); elsewhere sync
	// carries the same record through the SYNC_PTR ioctl.
	status    *mmapStatus
	statusMap []byte
	sync      syncPtr

	st   pcmStatus // STATUS ioctl, for the trigger timestamp of an xrun
	xfer xferi

	// atime is the audio timestamp asked for where the card offers a
	// link timestamp (linkRequest; 0: none): statusNow then asks for it
	// with STATUS_EXT, and the kernel, which keeps the request, takes
	// one at every pointer update from then on, with the update's system
	// time. audioTs is the one readStatus read last, ns.
	atime   uint32
	audioTs int64

	// time32: the kernel takes STATUS and SYNC_PTR only in the 32-bit
	// time_t records (a 32-bit kernel before 5.6; hasTime32), exchanged
	// through t32 and widened into sync and st.
	time32 bool
	t32    time32Records

	// With mmap access the ring buffer itself is mapped (data), and the
	// application pointer is moved through the mapped control page or,
	// where that cannot be mapped, SYNC_PTR.
	mmap       bool
	data       []byte
	control    *mmapControl
	controlMap []byte

	frameBytes   int
	periodFrames int
	bufferFrames int
	boundary     uint64 // pointers wrap here
}

// ioctl calls the PCM ioctl req with arg, retrying on EINTR. It returns
// the errno (0 on success) rather than an error so that the period loop
// can test it without allocating. The call is raw (the runtime is not
// told), so the engine can pin its loop: see audio.Pinnable.
func ioctl(fd int, req uintptr, arg unsafe.Pointer) unix.Errno {
	for {
		_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
		if e != unix.EINTR {
			return e
		}
	}
}

func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// openPCM opens a PCM node non-blocking: open fails at once with EBUSY
// instead of waiting for the owner to let go, and the period loop never
// blocks anywhere but in poll.
func openPCM(path string, stream int) (*pcm, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	p := &pcm{fd: fd, path: path, stream: stream}
	// Tell the kernel which protocol we speak; it gates the status mmap on
	// drivers that need an explicit appl_ptr sync. Kernels older than 4.14
	// lack the ioctl, which is harmless.
	v := int32(pcmVersion)
	ioctl(fd, ioctlUserPVersion, unsafe.Pointer(&v))
	return p, nil
}

func (p *pcm) refine(h *hwParams) error {
	if e := ioctl(p.fd, ioctlHWRefine, unsafe.Pointer(h)); e != 0 {
		if e == unix.EINVAL {
			return errEmpty
		}
		return fmt.Errorf("%s: HW_REFINE: %w", p.path, e)
	}
	return nil
}

// setup installs the negotiated hw_params and the sw_params the period
// loop relies on: wake when one period is available, timestamp every
// pointer update with CLOCK_MONOTONIC, stop (xrun) only when the whole
// buffer ran out, and never start by itself.
func (p *pcm) setup(h *hwParams, s shape) error {
	if e := ioctl(p.fd, ioctlHWParams, unsafe.Pointer(h)); e != 0 {
		return fmt.Errorf("%s: HW_PARAMS: %w", p.path, e)
	}
	g := grantedShape(h)
	p.frameBytes = g.channels * bytesPerSample(g.format)
	p.periodFrames = g.periodFrames
	p.bufferFrames = int(h.interval(paramBufferSize).lo())
	// The kernel's boundary: the largest buffer_size × 2^n that leaves
	// room for one more buffer below LONG_MAX (snd_pcm_hw_params); LONG_MAX
	// is 2^31-1 on 32-bit, where the pointers are 32-bit.
	p.boundary = uint64(p.bufferFrames)
	for p.boundary*2 <= maxLong-uint64(p.bufferFrames) {
		p.boundary *= 2
	}
	tt := int32(tstampTypeMonotonic)
	if e := ioctl(p.fd, ioctlTTstamp, unsafe.Pointer(&tt)); e != 0 {
		return fmt.Errorf("%s: TTSTAMP monotonic: %w", p.path, e)
	}
	sw := swParams{
		TstampMode:     tstampEnable,
		PeriodStep:     1,
		AvailMin:       uframes(p.periodFrames),
		StartThreshold: uframes(p.boundary), // we start explicitly
		StopThreshold:  uframes(p.bufferFrames),
		Boundary:       uframes(p.boundary),
		Proto:          pcmVersion,
		TstampType:     tstampTypeMonotonic,
	}
	if e := ioctl(p.fd, ioctlSWParams, unsafe.Pointer(&sw)); e != 0 {
		return fmt.Errorf("%s: SW_PARAMS: %w", p.path, e)
	}
	p.chooseRecords()
	p.mapStatus()
	if g.access == accessMmapInterleaved {
		b, err := unix.Mmap(p.fd, 0, p.bufferFrames*p.frameBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("%s: mmap the buffer: %w", p.path, err)
		}
		p.mmap, p.data = true, b
		// The control page only where the status page may be mapped too
		// (see mapPages); the ring buffer itself maps everywhere.
		if mapPages {
			if c, err := unix.Mmap(p.fd, mmapOffsetControl, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err == nil {
				p.controlMap = c
				p.control = (*mmapControl)(unsafe.Pointer(&c[0]))
			}
		}
	}
	return nil
}

// commit moves the application pointer to appl (in the kernel's
// wrapping coordinates) after the period was written into or read from
// the mapped buffer, and returns the stream state.
func (p *pcm) commit(appl uint64) (int32, unix.Errno) {
	if p.control != nil && p.status != nil {
		storeUframes(&p.control.ApplPtr, uframes(appl))
		return atomic.LoadInt32(&p.status.State), 0
	}
	// Without the flags the kernel takes appl_ptr and avail_min from us.
	p.sync.Flags = 0
	p.sync.Control.ApplPtr = uframes(appl)
	p.sync.Control.AvailMin = uframes(p.periodFrames)
	if e := p.syncPtr(); e != 0 {
		return 0, e
	}
	return p.sync.Status.State, 0
}

// mapStatus maps the kernel's status page read-only. Only cache-coherent
// architectures allow it (x86, powerpc, alpha); elsewhere mmap fails with
// ENXIO and readStatus uses SYNC_PTR instead, as it does on every 32-bit
// architecture (mapPages).
func (p *pcm) mapStatus() {
	if p.statusMap != nil || !mapPages {
		return
	}
	b, err := unix.Mmap(p.fd, mmapOffsetStatus, os.Getpagesize(), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return
	}
	p.statusMap = b
	p.status = (*mmapStatus)(unsafe.Pointer(&b[0]))
}

// readStatus returns the stream state, the hardware pointer and the
// timestamp of the pointer's last update, without asking the driver for a
// fresh pointer: the point is when the kernel last moved it (the period
// interrupt), not where it is now. The audio timestamp taken with it goes
// to p.audioTs: no call more than the status already takes.
func (p *pcm) readStatus() (state int32, hw uint64, tstamp int64, err unix.Errno) {
	if s := p.status; s != nil {
		// The kernel updates the page under its stream lock, which we
		// cannot take: read until two reads agree.
		for {
			hw = uint64(loadUframes(&s.HWPtr))
			sec := atomic.LoadInt64(&s.Tstamp.Sec)
			nsec := atomic.LoadInt64(&s.Tstamp.Nsec)
			asec := atomic.LoadInt64(&s.AudioTstamp.Sec)
			ansec := atomic.LoadInt64(&s.AudioTstamp.Nsec)
			state = atomic.LoadInt32(&s.State)
			if uint64(loadUframes(&s.HWPtr)) == hw && atomic.LoadInt64(&s.Tstamp.Sec) == sec && atomic.LoadInt64(&s.Tstamp.Nsec) == nsec &&
				atomic.LoadInt64(&s.AudioTstamp.Sec) == asec && atomic.LoadInt64(&s.AudioTstamp.Nsec) == ansec {
				p.audioTs = asec*1e9 + ansec
				return state, hw, sec*1e9 + nsec, 0
			}
		}
	}
	// Read-only sync: take appl_ptr and avail_min from the kernel instead
	// of giving it ours, and no HWSYNC.
	p.sync.Flags = syncPtrAppl | syncPtrAvailMin
	if e := p.syncPtr(); e != 0 {
		return 0, 0, 0, e
	}
	p.audioTs = p.sync.Status.AudioTstamp.ns()
	return p.sync.Status.State, uint64(p.sync.Status.HWPtr), p.sync.Status.Tstamp.ns(), 0
}

// applPtr asks the kernel for the application pointer.
func (p *pcm) applPtr() (uint64, error) {
	p.sync.Flags = syncPtrAppl | syncPtrAvailMin
	if e := p.syncPtr(); e != 0 {
		return 0, fmt.Errorf("%s: SYNC_PTR: %w", p.path, e)
	}
	return uint64(p.sync.Control.ApplPtr), nil
}

// statusNow reads the STATUS ioctl into p.st, whose trigger timestamp is
// when the stream last changed state (started, or stopped by an xrun).
// Where the card offers a link timestamp (p.atime) it is STATUS_EXT
// asking for it, which a plain STATUS would undo: the kernel keeps the
// type of the last request, and a plain STATUS asks for COMPAT (the link
// time only where HAS_WALL_CLOCK is set). A kernel that refuses
// STATUS_EXT (before 4.x, or a request it does not know) gets plain
// STATUS from then on, and no link time is read.
func (p *pcm) statusNow() unix.Errno {
	for {
		var e unix.Errno
		if p.time32 {
			e = p.status32()
		} else {
			p.st.AudioTstampData = p.atime
			e = ioctl(p.fd, p.statusReq(), unsafe.Pointer(&p.st))
		}
		if p.atime == 0 || (e != unix.ENOTTY && e != unix.EINVAL) {
			return e
		}
		p.atime = 0
	}
}

// statusReq is the ioctl statusNow makes in the time64 record: a test
// hook, so that a card without a link timestamp is seen to get plain
// STATUS.
func (p *pcm) statusReq() uintptr {
	if p.atime != 0 {
		return ioctlStatusExt
	}
	return ioctlStatus
}

// linkRequest is the audio_tstamp_data a stream whose driver set the info
// flags info asks for: the link time where the card offers it (HD-Audio's
// wall clock, HAS_LINK_ATIME, reset at the start), else the link's
// absolute or estimated time; 0 (nothing asked, no STATUS_EXT ever) for
// a card with none of them. HAS_LINK_SYNCHRONIZED_ATIME alone is not
// asked for: HD-Audio gives it only against a non-monotonic system
// clock (azx_get_time_info refuses CLOCK_MONOTONIC), and every instant
// here is CLOCK_MONOTONIC.
func linkRequest(info uint32) uint32 {
	switch {
	case info&infoHasLinkAtime != 0:
		return atstampLink
	case info&infoHasLinkAbsAtime != 0:
		return atstampLinkAbsolute
	case info&infoHasLinkEstAtime != 0:
		return atstampLinkEstimated
	}
	return 0
}

// syncPtr exchanges p.sync with the kernel (SYNC_PTR) in the record it
// takes.
func (p *pcm) syncPtr() unix.Errno {
	if p.time32 {
		return p.syncPtr32()
	}
	return ioctl(p.fd, ioctlSyncPtr, unsafe.Pointer(&p.sync))
}

// chooseRecords finds the records the kernel takes STATUS and SYNC_PTR
// in, once, before the stream runs: a read-only SYNC_PTR in the time64
// record, which a 32-bit kernel older than 5.6 does not know (ENOTTY).
// time32 set already (a test's force) is kept.
func (p *pcm) chooseRecords() {
	if !hasTime32 || p.time32 {
		return
	}
	p.sync.Flags = syncPtrAppl | syncPtrAvailMin
	p.time32 = ioctl(p.fd, ioctlSyncPtr, unsafe.Pointer(&p.sync)) == unix.ENOTTY
}

func (p *pcm) prepare() unix.Errno { return ioctl(p.fd, ioctlPrepare, nil) }

// setBlocking makes the transfers block: the PCM core reads O_NONBLOCK
// from a copy of the file's flags taken at open and at every PREPARE.
func (p *pcm) setBlocking() error {
	fl, err := unix.FcntlInt(uintptr(p.fd), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(p.fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
	if err != nil {
		return fmt.Errorf("%s: blocking mode: %w", p.path, err)
	}
	return nil
}

// writeAll writes frames of buf with WRITEI, resuming after a partial
// write; with a blocking descriptor it sleeps until there is room.
func (p *pcm) writeAll(buf []byte, frames int) unix.Errno {
	for done := 0; done < frames; {
		k, e := p.xferi(buf[done*p.frameBytes:], frames-done)
		if e != 0 {
			return e
		}
		done += k
	}
	return 0
}

// hwsync asks the driver for its pointer now (the kernel's
// snd_pcm_hwsync): alsa-lib does it before every write of a running
// stream, and a driver that moves its pointer when it hands data to the
// hardware rather than in an interrupt (snd-usb-audio in low-latency
// mode queues USB transfers at start and in the appl_ptr callback) shows
// the room it made only then.
func (p *pcm) hwsync() unix.Errno { return ioctl(p.fd, ioctlHWSync, nil) }
func (p *pcm) start() unix.Errno  { return ioctl(p.fd, ioctlStart, nil) }
func (p *pcm) drop() unix.Errno   { return ioctl(p.fd, ioctlDrop, nil) }

// xfer writes (playback) or reads (capture) frames of buf, which must hold
// them. It returns the frames moved.
func (p *pcm) xferi(buf []byte, frames int) (int, unix.Errno) {
	p.xfer.Result = 0
	p.xfer.Buf = uintptr(unsafe.Pointer(&buf[0]))
	p.xfer.Frames = uframes(frames)
	req := uintptr(ioctlWriteiFrames)
	if p.stream == streamCapture {
		req = ioctlReadiFrames
	}
	e := ioctl(p.fd, req, unsafe.Pointer(&p.xfer))
	p.xfer.Buf = 0
	return int(p.xfer.Result), e
}

func (p *pcm) unmapStatus() {
	if p.statusMap != nil {
		unix.Munmap(p.statusMap)
		p.statusMap, p.status = nil, nil
	}
}

func (p *pcm) close() error {
	p.unmapStatus()
	if p.controlMap != nil {
		unix.Munmap(p.controlMap)
		p.controlMap, p.control = nil, nil
	}
	if p.data != nil {
		unix.Munmap(p.data)
		p.data = nil
	}
	ioctl(p.fd, ioctlDrop, nil)
	return unix.Close(p.fd)
}
