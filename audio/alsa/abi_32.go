//go:build linux && (arm || 386)

package alsa

// The parts of the ABI that depend on the size of long, for 32-bit Linux
// (armhf and i386), where long and snd_pcm_uframes_t are 4 bytes.
//
// time64 always: these are the layouts <sound/asound.h> gives a program
// built with _TIME_BITS=64 (__SND_STRUCT_TIME64), which is what glibc's
// 64-bit time_t ABI uses (Debian builds its armhf port so since trixie).
// The kernel has accepted them since 5.6, on a 32-bit kernel and in
// compat mode on a 64-bit one; the old 32-bit time_t records overflow in
// 2038 and exist for old binaries. One layout means one code path to
// check. The ioctl numbers encode the sizes, so an older kernel refuses
// STATUS and SYNC_PTR (ENOTTY) rather than misreading them.
//
// armhf and i386 share this file: the records below have explicit pads
// wherever C's alignment of 64-bit members (8 on arm EABI, 4 on i386)
// could differ, so the two layouts are identical, which the layout test
// checks against gcc for each.

import (
	"sync/atomic"
	"unsafe"
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
