//go:build linux && (arm || 386)

package alsa

// The parts of the ABI that depend on the size of long, for 32-bit Linux
// (armhf and i386), where long and snd_pcm_uframes_t are 4 bytes.
//
// time64 first: these are the layouts <sound/asound.h> gives a program
// built with _TIME_BITS=64 (__SND_STRUCT_TIME64), which is what glibc's
// 64-bit time_t ABI uses (Debian builds its armhf port so since trixie).
// The kernel has accepted them since 5.6, on a 32-bit kernel and in
// compat mode on a 64-bit one. The ioctl numbers encode the sizes, so an
// older kernel refuses STATUS and SYNC_PTR (ENOTTY) rather than
// misreading them; then the old 32-bit time_t records at the end of this
// file are used (hasTime32), widened into these.
//
// armhf and i386 share this file: the records below have explicit pads
// wherever C's alignment of 64-bit members (8 on arm EABI, 4 on i386)
// could differ, so the two layouts are identical, which the layout test
// checks against gcc for each.

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// snd_pcm_uframes_t and snd_pcm_sframes_t: unsigned long and long.
type (
	uframes = uint32
	sframes = int32
)

// maxLong is LONG_MAX, from which the kernel derives the boundary (a
// 64-bit kernel recomputes it so for a 32-bit task: recalculate_boundary).
const maxLong = 1<<31 - 1

// mapPages: never map the status and control pages on 32-bit. On ARM the
// kernel refuses anyway (not cache-coherent). On x86 a 64-bit kernel
// would map its own 64-bit records, whose control page does not match the
// 32-bit snd_pcm_mmap_control below (avail_min sits at 4 in it, at 8 in
// the kernel's: see syncPtr), so the driver always uses SYNC_PTR, which
// the kernel translates.
const mapPages = false

// mmap offsets of the time64 status and control pages (the _NEW values),
// as the header defines them under __SND_STRUCT_TIME64; unused while
// mapPages is false, kept to match the header.
const (
	mmapOffsetStatus  = 0x82000000
	mmapOffsetControl = 0x83000000
)

// snd_pcm_sw_params: all members 4 bytes, no holes.
type swParams struct {
	TstampMode       int32
	PeriodStep       uint32
	SleepMin         uint32
	AvailMin         uframes
	XferAlign        uframes
	StartThreshold   uframes
	StopThreshold    uframes
	SilenceThreshold uframes
	SilenceSize      uframes
	Boundary         uframes
	Proto            uint32
	TstampType       uint32
	Reserved         [56]byte
}

// __snd_pcm_mmap_status64 on little-endian: hw_ptr is followed by
// __pad_after_uframe so that it fills the low half of a 64-bit slot, and
// the timestamps are 64-bit.
type mmapStatus struct {
	State          int32
	Pad1           uint32
	HWPtr          uframes
	_              uint32 // __pad2 (__pad_after_uframe)
	Tstamp         timespec
	SuspendedState int32
	Pad3           uint32
	AudioTstamp    timespec
}

// __snd_pcm_mmap_control64 on little-endian, as the header spells it:
// the pad after appl_ptr is a __pad_before_uframe (empty on
// little-endian), a known slip the kernel keeps for compatibility
// (snd_pcm_ioctl_sync_ptr_buggy reads this very layout), so avail_min
// sits at 4 and the record is 12 bytes.
type mmapControl struct {
	ApplPtr  uframes
	AvailMin uframes
	_        uint32 // __pad4 (__pad_after_uframe)
}

// __snd_pcm_sync_ptr64: the two unions are 64 bytes each.
type syncPtr struct {
	Flags   uint32
	Pad1    uint32
	Status  mmapStatus
	_       [64 - unsafe.Sizeof(mmapStatus{})]byte
	Control mmapControl
	_       [64 - unsafe.Sizeof(mmapControl{})]byte
}

// loadUframes and storeUframes access a pointer in a mapped page (never
// called while mapPages is false; here so the shared code compiles).
func loadUframes(p *uframes) uframes     { return atomic.LoadUint32(p) }
func storeUframes(p *uframes, v uframes) { atomic.StoreUint32(p, v) }

// hasTime32: a 32-bit kernel older than 5.6 (the vendor kernels of many
// boards) knows STATUS and SYNC_PTR only with 32-bit time_t records, and
// answers the time64 ones ENOTTY. pcm.setup then uses these (pcm.time32).
// Only the timestamps differ; they are widened into the time64 records
// the rest of the package reads, so one code path reads both.
const hasTime32 = true

// struct timespec with a 32-bit time_t.
type timespec32 struct {
	Sec  int32
	Nsec int32
}

func (t timespec32) wide() timespec { return timespec{Sec: int64(t.Sec), Nsec: int64(t.Nsec)} }

// snd_pcm_mmap_status with a 32-bit time_t: no pads, 4-byte aligned.
type mmapStatus32 struct {
	State          int32
	Pad1           int32
	HWPtr          uframes
	Tstamp         timespec32
	SuspendedState int32
	AudioTstamp    timespec32
}

// snd_pcm_mmap_control with a 32-bit time_t: appl_ptr and avail_min.
type mmapControl32 struct {
	ApplPtr  uframes
	AvailMin uframes
}

// snd_pcm_sync_ptr with a 32-bit time_t: the unions are 64 bytes each and
// start right after flags (nothing in them is 8-byte aligned).
type syncPtr32 struct {
	Flags   uint32
	Status  mmapStatus32
	_       [64 - unsafe.Sizeof(mmapStatus32{})]byte
	Control mmapControl32
	_       [64 - unsafe.Sizeof(mmapControl32{})]byte
}

// snd_pcm_status with a 32-bit time_t: no pad before the timestamps.
type pcmStatus32 struct {
	State            int32
	TriggerTstamp    timespec32
	Tstamp           timespec32
	ApplPtr          uframes
	HWPtr            uframes
	Delay            sframes
	Avail            uframes
	AvailMax         uframes
	Overrange        uframes
	SuspendedState   int32
	AudioTstampData  uint32
	AudioTstamp      timespec32
	DriverTstamp     timespec32
	AudioTstampAccur uint32
	Reserved         [52 - 2*8]byte
}

// The ioctl numbers encode the records' sizes.
const (
	ioctlStatus32    = iocRead | uintptr(unsafe.Sizeof(pcmStatus32{}))<<16 | 'A'<<8 | 0x20
	ioctlSyncPtr32   = iocRead | iocWrite | uintptr(unsafe.Sizeof(syncPtr32{}))<<16 | 'A'<<8 | 0x23
	ioctlStatusExt32 = iocRead | iocWrite | uintptr(unsafe.Sizeof(pcmStatus32{}))<<16 | 'A'<<8 | 0x24
)

// time32Records are a pcm's exchanges in the 32-bit time_t records.
type time32Records struct {
	sync syncPtr32
	st   pcmStatus32
}

// syncPtr32 is SYNC_PTR in the 32-bit time_t record: p.sync's flags and
// control go out, and its status and control come back, widened.
func (p *pcm) syncPtr32() unix.Errno {
	o := &p.t32.sync
	o.Flags = p.sync.Flags
	o.Control = mmapControl32{ApplPtr: p.sync.Control.ApplPtr, AvailMin: p.sync.Control.AvailMin}
	if e := ioctl(p.fd, ioctlSyncPtr32, unsafe.Pointer(o)); e != 0 {
		return e
	}
	s := &p.sync.Status
	s.State, s.HWPtr, s.SuspendedState = o.Status.State, o.Status.HWPtr, o.Status.SuspendedState
	s.Tstamp, s.AudioTstamp = o.Status.Tstamp.wide(), o.Status.AudioTstamp.wide()
	p.sync.Control.ApplPtr, p.sync.Control.AvailMin = o.Control.ApplPtr, o.Control.AvailMin
	return 0
}

// status32 is STATUS in the 32-bit time_t record, widened into p.st
// (STATUS_EXT asking for p.atime when the card has a link timestamp).
func (p *pcm) status32() unix.Errno {
	o := &p.t32.st
	req := uintptr(ioctlStatus32)
	if p.atime != 0 {
		o.AudioTstampData, req = p.atime, ioctlStatusExt32
	}
	if e := ioctl(p.fd, req, unsafe.Pointer(o)); e != 0 {
		return e
	}
	p.st = pcmStatus{
		State: o.State, TriggerTstamp: o.TriggerTstamp.wide(), Tstamp: o.Tstamp.wide(),
		ApplPtr: o.ApplPtr, HWPtr: o.HWPtr, Delay: o.Delay, Avail: o.Avail, AvailMax: o.AvailMax, Overrange: o.Overrange,
		SuspendedState: o.SuspendedState, AudioTstampData: o.AudioTstampData,
		AudioTstamp: o.AudioTstamp.wide(), DriverTstamp: o.DriverTstamp.wide(), AudioTstampAccur: o.AudioTstampAccur,
	}
	return 0
}
