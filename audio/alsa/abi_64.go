//go:build linux && (amd64 || arm64)

package alsa

// The parts of the ABI that depend on the size of long, for LP64 Linux:
// amd64 and arm64 share this layout (natural alignment, and asound.h's
// explicit pads make the same holes on both). time_t is 64-bit, so the
// "old" and the time64 records are one and the same here.

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// snd_pcm_uframes_t and snd_pcm_sframes_t: unsigned long and long.
type (
	uframes = uint64
	sframes = int64
)

// maxLong is LONG_MAX, from which the kernel derives the boundary.
const maxLong = 1<<63 - 1

// mapPages: the status and control pages may be mapped (the kernel lets
// cache-coherent architectures do so; elsewhere mmap fails and SYNC_PTR
// is used).
const mapPages = true

// mmap offsets of the status and control pages. On 64-bit the header maps
// SNDRV_PCM_MMAP_OFFSET_STATUS to the _OLD value (0x80000000): the old and
// the y2038 layouts are the same there, and that is what alsa-lib asks for.
const (
	mmapOffsetStatus  = 0x80000000
	mmapOffsetControl = 0x81000000
)

// snd_pcm_sw_params.
type swParams struct {
	TstampMode       int32
	PeriodStep       uint32
	SleepMin         uint32
	_                uint32 // pad: avail_min is 8-aligned
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

// snd_pcm_mmap_status (also what the status page holds).
type mmapStatus struct {
	State          int32
	Pad1           int32
	HWPtr          uframes
	Tstamp         timespec
	SuspendedState int32
	Pad3           int32 // implicit in the C struct: audio_tstamp is 8-aligned
	AudioTstamp    timespec
}

// snd_pcm_mmap_control.
type mmapControl struct {
	ApplPtr  uframes
	AvailMin uframes
}

// snd_pcm_sync_ptr: the two unions are 64 bytes each.
type syncPtr struct {
	Flags   uint32
	Pad1    uint32 // implicit in the C struct: the unions hold 8-aligned members
	Status  mmapStatus
	_       [64 - unsafe.Sizeof(mmapStatus{})]byte
	Control mmapControl
	_       [64 - unsafe.Sizeof(mmapControl{})]byte
}

// loadUframes and storeUframes access a pointer in a mapped page.
func loadUframes(p *uframes) uframes     { return atomic.LoadUint64(p) }
func storeUframes(p *uframes, v uframes) { atomic.StoreUint64(p, v) }

// hasTime32: on 64-bit time_t has always been 64-bit; there is one ABI.
const hasTime32 = false

type time32Records struct{}

func (p *pcm) syncPtr32() unix.Errno { return unix.ENOTTY }
func (p *pcm) status32() unix.Errno  { return unix.ENOTTY }
