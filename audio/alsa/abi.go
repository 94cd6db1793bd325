//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

// The kernel ABI of the ALSA PCM and control devices, transcribed from the
// uapi header <sound/asound.h>, for little-endian Linux. What is the same
// on every architecture is here; what depends on the size of long
// (snd_pcm_uframes_t) and on the time64 ABI is in abi_64.go (amd64, arm64)
// and abi_32.go (arm, 386): uframes and sframes, sw_params and the
// mmap_status/mmap_control/sync_ptr records. abi_layout_test.go checks
// every size and offset against the C header compiled by gcc for each of
// the four architectures.

import "unsafe"

// Protocol version this package speaks, SNDRV_PCM_VERSION (2.0.15): it is
// what we pass to USER_PVERSION so the kernel enables what we rely on (the
// status mmap beside a SYNC_APPLPTR driver, TTSTAMP).
const pcmVersion = 2<<16 | 0<<8 | 15

// Stream directions (SNDRV_PCM_STREAM_*).
const (
	streamPlayback = 0
	streamCapture  = 1
)

// Access types (SNDRV_PCM_ACCESS_*).
const (
	accessMmapInterleaved = 0
	accessRWInterleaved   = 3
)

// Sample formats (SNDRV_PCM_FORMAT_*) this package can produce.
const (
	formatS16LE   = 2
	formatS24LE   = 6 // 24 bits in the low three bytes of four
	formatS32LE   = 10
	formatFloatLE = 14
	formatS24_3LE = 32 // 24 bits in three bytes: what many USB interfaces offer alone
)

// PCM states (SNDRV_PCM_STATE_*).
const (
	stateOpen         = 0
	stateSetup        = 1
	statePrepared     = 2
	stateRunning      = 3
	stateXrun         = 4
	stateDraining     = 5
	statePaused       = 6
	stateSuspended    = 7
	stateDisconnected = 8
)

// hw_params parameter indexes (SNDRV_PCM_HW_PARAM_*). Masks come first,
// intervals from paramFirstInterval on.
const (
	paramAccess      = 0
	paramFormat      = 1
	paramSubformat   = 2
	paramSampleBits  = 8
	paramFrameBits   = 9
	paramChannels    = 10
	paramRate        = 11
	paramPeriodTime  = 12
	paramPeriodSize  = 13
	paramPeriodBytes = 14
	paramPeriods     = 15
	paramBufferTime  = 16
	paramBufferSize  = 17
	paramBufferBytes = 18
	paramTickTime    = 19

	paramFirstMask     = paramAccess
	paramLastMask      = paramSubformat
	paramFirstInterval = paramSampleBits
	paramLastInterval  = paramTickTime
)

// atstampReported is the audio timestamp type a STATUS_EXT's answer says
// the driver gave (audio_tstamp_data), 0 when it has no report.
func atstampReported(data uint32) uint32 {
	if data&(1<<16) == 0 {
		return 0
	}
	return data >> 17 & 0xf
}

// Timestamp settings.
const (
	tstampEnable        = 1 // SNDRV_PCM_TSTAMP_ENABLE
	tstampTypeMonotonic = 1 // SNDRV_PCM_TSTAMP_TYPE_MONOTONIC
)

// Audio timestamp types (SNDRV_PCM_AUDIO_TSTAMP_TYPE_*): what a STATUS_EXT
// asks the driver for in audio_tstamp_data's low 4 bits (bit 4 asks it to
// subtract the codec's delay, which we never do). The kernel keeps the
// request (runtime->audio_tstamp_config) and takes an audio timestamp of
// that type at every pointer update after it, the interrupt's included.
// A plain STATUS asks for COMPAT: the link time where the driver sets
// HAS_WALL_CLOCK (the same bit as HAS_LINK_ATIME), else DEFAULT.
const (
	atstampCompat        = 0 // SNDRV_PCM_AUDIO_TSTAMP_TYPE_COMPAT
	atstampDefault       = 1 // from the hardware pointer
	atstampLink          = 2 // the link's clock, reset at the start (HD-Audio's wall clock)
	atstampLinkAbsolute  = 3 // the link's clock, not reset
	atstampLinkEstimated = 4
	atstampLinkSync      = 5 // cross-timestamped with the system clock (needs a non-monotonic tstamp type on HD-Audio)
)

// SYNC_PTR flags: without syncPtrAppl and syncPtrAvailMin the kernel takes
// appl_ptr and avail_min *from* our struct, so a read-only sync sets both.
const (
	syncPtrHWSync   = 1 << 0
	syncPtrAppl     = 1 << 1
	syncPtrAvailMin = 1 << 2
)

// snd_interval. The C bitfield "openmin:1, openmax:1, integer:1, empty:1"
// packs into one unsigned int from the least significant bit on both
// little-endian ABIs.
type interval struct {
	Min, Max uint32
	Flags    uint32
}

const (
	intervalOpenMin = 1 << 0
	intervalOpenMax = 1 << 1
	intervalInteger = 1 << 2
	intervalEmpty   = 1 << 3
)

// snd_mask: 256 bits.
type mask struct {
	Bits [8]uint32
}

// snd_pcm_hw_params.
type hwParams struct {
	Flags     uint32
	Masks     [paramLastMask - paramFirstMask + 1]mask
	Mres      [5]mask
	Intervals [paramLastInterval - paramFirstInterval + 1]interval
	Ires      [9]interval
	Rmask     uint32
	Cmask     uint32
	Info      uint32
	Msbits    uint32
	RateNum   uint32
	RateDen   uint32
	FifoSize  uframes // 8-aligned on 64-bit: the compiler's hole after RateDen is C's
	Reserved  [64]byte
}

// timespec with 64-bit fields: struct timespec on LP64 and with
// _TIME_BITS=64 on 32-bit (tv_nsec is a long there, padded to 8 bytes
// after it on little-endian, which the kernel fills as an s64), and
// __snd_timespec64.
type timespec struct {
	Sec  int64
	Nsec int64
}

func (t timespec) ns() int64 { return t.Sec*1e9 + t.Nsec }

// snd_pcm_status (the STATUS and STATUS_EXT ioctls): trigger_tstamp is
// the only place the instant an xrun stopped the stream can be read.
// STATUS_EXT reads audio_tstamp_data from us first: the audio timestamp
// type wanted (atstamp*), which the kernel then keeps; it answers there
// with the report of the last pointer update: bit 16 set when it is a
// report (not COMPAT), the type the driver gave in bits 17-20 (DEFAULT
// when it could not give the one asked), and in bit 21 whether
// audio_tstamp_accuracy is valid (snd_pcm_pack_audio_tstamp_report).
type pcmStatus struct {
	State            int32
	Pad1             [4]byte // __time_pad
	TriggerTstamp    timespec
	Tstamp           timespec
	ApplPtr          uframes
	HWPtr            uframes
	Delay            sframes
	Avail            uframes
	AvailMax         uframes
	Overrange        uframes
	SuspendedState   int32
	AudioTstampData  uint32
	AudioTstamp      timespec
	DriverTstamp     timespec
	AudioTstampAccur uint32
	Reserved         [52 - 2*16]byte
}

// snd_xferi: one READI/WRITEI call. Buf holds the address of a buffer the
// driver keeps alive; Go's heap does not move, so a uintptr is safe here.
type xferi struct {
	Result sframes
	Buf    uintptr
	Frames uframes
}

// snd_pcm_info.
type pcmInfo struct {
	Device          uint32
	Subdevice       uint32
	Stream          int32
	Card            int32
	ID              [64]byte
	Name            [80]byte
	Subname         [32]byte
	DevClass        int32
	DevSubclass     int32
	SubdevicesCount uint32
	SubdevicesAvail uint32
	Sync            [16]byte
	Reserved        [64]byte
}

// snd_ctl_card_info.
type ctlCardInfo struct {
	Card       int32
	Pad        int32
	ID         [16]byte
	Driver     [16]byte
	Name       [32]byte
	Longname   [80]byte
	Reserved   [16]byte
	Mixername  [80]byte
	Components [128]byte
}

// ioctl request numbers, built as <asm-generic/ioctl.h>'s _IOC does
// (amd64, arm64, arm and 386 all use the generic encoding): direction in bits 30-31,
// argument size in bits 16-29, type in 8-15, number in 0-7.
const (
	iocWrite = 1 << 30
	iocRead  = 2 << 30

	ioctlPVersion     = iocRead | 4<<16 | 'A'<<8 | 0x00
	ioctlInfo         = iocRead | uintptr(unsafe.Sizeof(pcmInfo{}))<<16 | 'A'<<8 | 0x01
	ioctlTTstamp      = iocWrite | 4<<16 | 'A'<<8 | 0x03
	ioctlUserPVersion = iocWrite | 4<<16 | 'A'<<8 | 0x04
	ioctlHWRefine     = iocRead | iocWrite | uintptr(unsafe.Sizeof(hwParams{}))<<16 | 'A'<<8 | 0x10
	ioctlHWParams     = iocRead | iocWrite | uintptr(unsafe.Sizeof(hwParams{}))<<16 | 'A'<<8 | 0x11
	ioctlHWFree       = 'A'<<8 | 0x12
	ioctlSWParams     = iocRead | iocWrite | uintptr(unsafe.Sizeof(swParams{}))<<16 | 'A'<<8 | 0x13
	ioctlStatus       = iocRead | uintptr(unsafe.Sizeof(pcmStatus{}))<<16 | 'A'<<8 | 0x20
	ioctlSyncPtr      = iocRead | iocWrite | uintptr(unsafe.Sizeof(syncPtr{}))<<16 | 'A'<<8 | 0x23
	ioctlStatusExt    = iocRead | iocWrite | uintptr(unsafe.Sizeof(pcmStatus{}))<<16 | 'A'<<8 | 0x24
	ioctlPrepare      = 'A'<<8 | 0x40
	ioctlHWSync       = 'A'<<8 | 0x22
	ioctlStart        = 'A'<<8 | 0x42
	ioctlDrop         = 'A'<<8 | 0x43
	ioctlWriteiFrames = iocWrite | uintptr(unsafe.Sizeof(xferi{}))<<16 | 'A'<<8 | 0x50
	ioctlReadiFrames  = iocRead | uintptr(unsafe.Sizeof(xferi{}))<<16 | 'A'<<8 | 0x51
	ioctlLink         = iocWrite | 4<<16 | 'A'<<8 | 0x60
	ioctlUnlink       = 'A'<<8 | 0x61

	ioctlCtlCardInfo      = iocRead | uintptr(unsafe.Sizeof(ctlCardInfo{}))<<16 | 'U'<<8 | 0x01
	ioctlCtlPCMNextDevice = iocRead | 4<<16 | 'U'<<8 | 0x30
	ioctlCtlPCMInfo       = iocRead | iocWrite | uintptr(unsafe.Sizeof(pcmInfo{}))<<16 | 'U'<<8 | 0x31
	ioctlCtlPCMPreferSub  = iocWrite | 4<<16 | 'U'<<8 | 0x32
)
