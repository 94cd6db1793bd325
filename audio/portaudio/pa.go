//go:build portaudio

package portaudio

// A small binding to the PortAudio C API: the calls this driver makes and
// no more. Its callback is in C so that the period's wakeup is timestamped
// before Go is entered (audio/cthread.h): entering Go from a foreign
// thread needs a scheduler P, and on a busy machine that wait
// (milliseconds at worst, see docs/portaudio.md) would otherwise be
// counted as the thread's wakeup latency.

/*
#cgo LDFLAGS: -lportaudio
#cgo CFLAGS: -I${SRCDIR}/../cthread
#include <stdint.h>
#include <portaudio.h>
#include "cthread.h" // (with lt_keep_rt_to_itself: the build cache does not hash the header)

extern void ltGoCallback(uintptr_t handle, int64_t woke, void *in, void *out, unsigned long frames, double now, unsigned long flags);

// ltCallback timestamps the wakeup and names the thread (cthread.h's
// lt_callback_begin) before it enters Go.
static int ltCallback(const void *in, void *out, unsigned long frames,
		const PaStreamCallbackTimeInfo *ti, PaStreamCallbackFlags flags, void *user) {
	int64_t woke = lt_callback_begin();
	ltGoCallback((uintptr_t)user, woke, (void *)in, out, frames, ti ? ti->currentTime : 0, flags);
	return paContinue;
}

static PaError ltOpenStream(PaStream **s, int inDev, int inCh, double inLat,
		int outDev, int outCh, double outLat, double rate, unsigned long frames, uintptr_t handle) {
	PaStreamParameters in = {inDev, inCh, paFloat32, inLat, NULL};
	PaStreamParameters out = {outDev, outCh, paFloat32, outLat, NULL};
	return Pa_OpenStream(s, inCh > 0 ? &in : NULL, outCh > 0 ? &out : NULL, rate, frames,
		paClipOff | paDitherOff, ltCallback, (void *)handle);
}
*/
import "C"

import (
	"runtime/cgo"
	"time"
	"unsafe"
)

// paError is a PortAudio error code.
type paError C.PaError

func (e paError) Error() string { return C.GoString(C.Pa_GetErrorText(C.PaError(e))) }

const (
	paDeviceUnavailable      paError = C.paDeviceUnavailable
	paInvalidSampleRate      paError = C.paInvalidSampleRate
	paInvalidChannelCount    paError = C.paInvalidChannelCount
	paInvalidDevice          paError = C.paInvalidDevice
	paBadIODeviceCombination paError = C.paBadIODeviceCombination
	paSampleFormatNotSupp    paError = C.paSampleFormatNotSupported
	paUnanticipatedHostError paError = C.paUnanticipatedHostError
)

func paErr(e C.PaError) error {
	if e >= 0 {
		return nil
	}
	return paError(e)
}

// Status flags of a callback.
const (
	inputOverflow   = C.paInputOverflow
	outputUnderflow = C.paOutputUnderflow
)

// Host API types.
const (
	typeALSA = C.paALSA
	typeOSS  = C.paOSS
	typeJACK = C.paJACK
)

// hostAPI and device are PortAudio's host API and device infos, copied.
type hostAPI struct {
	typ                   int
	name                  string
	defaultIn, defaultOut *device
	devices               []*device
}

type device struct {
	index         int
	name          string
	maxIn, maxOut int
	lowIn, lowOut time.Duration
	highOut       time.Duration
	rate          float64
	host          *hostAPI
}

func paInitialize() error { return paErr(C.Pa_Initialize()) }
func paTerminate() error  { return paErr(C.Pa_Terminate()) }

func seconds(s C.PaTime) time.Duration { return time.Duration(float64(s) * 1e9) }

// paDevices lists the host APIs and devices PortAudio found.
func paDevices() ([]*hostAPI, []*device, error) {
	nd := C.Pa_GetDeviceCount()
	if nd < 0 {
		return nil, nil, paError(nd)
	}
	nh := C.Pa_GetHostApiCount()
	if nh < 0 {
		return nil, nil, paError(nh)
	}
	hosts := make([]*hostAPI, nh)
	for i := range hosts {
		hi := C.Pa_GetHostApiInfo(C.PaHostApiIndex(i))
		hosts[i] = &hostAPI{typ: int(hi._type), name: C.GoString(hi.name)}
	}
	devs := make([]*device, nd)
	for i := range devs {
		di := C.Pa_GetDeviceInfo(C.PaDeviceIndex(i))
		d := &device{
			index:   i,
			name:    C.GoString(di.name),
			maxIn:   int(di.maxInputChannels),
			maxOut:  int(di.maxOutputChannels),
			lowIn:   seconds(di.defaultLowInputLatency),
			lowOut:  seconds(di.defaultLowOutputLatency),
			highOut: seconds(di.defaultHighOutputLatency),
			rate:    float64(di.defaultSampleRate),
			host:    hosts[di.hostApi],
		}
		devs[i] = d
		d.host.devices = append(d.host.devices, d)
	}
	for i, h := range hosts {
		hi := C.Pa_GetHostApiInfo(C.PaHostApiIndex(i))
		if n := int(hi.defaultInputDevice); n >= 0 && n < len(devs) {
			h.defaultIn = devs[n]
		}
		if n := int(hi.defaultOutputDevice); n >= 0 && n < len(devs) {
			h.defaultOut = devs[n]
		}
	}
	return hosts, devs, nil
}

// A target receives a stream's callbacks on PortAudio's thread. woke is
// CLOCK_MONOTONIC, read in C before Go was entered; in and out are the
// interleaved float32 buffers of frames frames (nil when the stream has no
// such side); now is PortAudio's stream time in seconds (JACK: the frame
// time).
type target interface {
	period(woke int64, in, out unsafe.Pointer, frames int, now float64, flags uint)
}

// paStream is an open PortAudio stream.
type paStream struct {
	s             unsafe.Pointer // *C.PaStream
	handle        cgo.Handle
	rate          float64
	inLat, outLat time.Duration
}

// streamParams is one side of a stream.
type streamParams struct {
	dev      *device
	channels int
	latency  time.Duration
}

// paOpen opens a float32 callback stream of frames per buffer (0: the
// host's choice) whose callbacks go to t.
func paOpen(in, out streamParams, rate float64, frames int, t target) (*paStream, error) {
	ps := &paStream{handle: cgo.NewHandle(t)}
	inDev, outDev := C.int(C.paNoDevice), C.int(C.paNoDevice)
	if in.dev != nil {
		inDev = C.int(in.dev.index)
	}
	if out.dev != nil {
		outDev = C.int(out.dev.index)
	}
	var s unsafe.Pointer
	err := paErr(C.ltOpenStream(&s, inDev, C.int(in.channels), C.double(in.latency.Seconds()),
		outDev, C.int(out.channels), C.double(out.latency.Seconds()),
		C.double(rate), C.ulong(frames), C.uintptr_t(ps.handle)))
	if err != nil {
		ps.handle.Delete()
		return nil, err
	}
	ps.s = s
	info := C.Pa_GetStreamInfo(s)
	ps.rate = float64(info.sampleRate)
	ps.inLat = seconds(info.inputLatency)
	ps.outLat = seconds(info.outputLatency)
	return ps, nil
}

func (ps *paStream) start() error { return paErr(C.Pa_StartStream(ps.s)) }
func (ps *paStream) stop() error  { return paErr(C.Pa_StopStream(ps.s)) }

func (ps *paStream) close() error {
	err := paErr(C.Pa_CloseStream(ps.s))
	ps.handle.Delete()
	return err
}

//export ltGoCallback
func ltGoCallback(handle C.uintptr_t, woke C.int64_t, in, out unsafe.Pointer, frames C.ulong, now C.double, flags C.ulong) {
	dispatch(cgo.Handle(handle), int64(woke), in, out, int(frames), float64(now), uint(flags))
}

// dispatch hands a callback to its stream's target.
func dispatch(h cgo.Handle, woke int64, in, out unsafe.Pointer, frames int, now float64, flags uint) {
	h.Value().(target).period(woke, in, out, frames, now, flags)
}
