//go:build jack

package jack

// A small binding to libjack: the calls this driver makes and no more.
// Every callback libjack makes is C. The process callback timestamps the
// wakeup first (audio/cthread.h, as the PortAudio driver's callback does),
// reads the cycle's times and the port buffers, and then enters Go with
// all of it, finding the driver through a runtime/cgo.Handle. The
// notification callbacks (xrun, buffer size, sample rate, shutdown) run on
// libjack's notification thread and never enter Go: they count and store
// into the C struct, atomically, and the process callback hands what they
// stored to Go with the period.

/*
#cgo LDFLAGS: -ljack
#cgo CFLAGS: -I${SRCDIR}/../cthread
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jack/jack.h>
#include <jack/thread.h>
#include <stdio.h>
#include "cthread.h" // (with lt_keep_rt_to_itself: the build cache does not hash the header)

#define LT_MAX_PORTS 64

typedef struct {
	jack_client_t *client;
	uintptr_t handle;
	int nout, nin;
	jack_port_t *out[LT_MAX_PORTS], *in[LT_MAX_PORTS];
	// The ports' buffers of the current cycle, for Go to fill.
	void *outbuf[LT_MAX_PORTS], *inbuf[LT_MAX_PORTS];
	// Written on libjack's notification thread, read with __atomic.
	uint32_t xruns;    // xruns the server reported
	uint32_t bufsize;  // buffer size it last announced (0: none yet)
	uint32_t rate;     // sample rate it last announced (0: none yet)
	int32_t shutdown;  // the server shut the client down
	// idle: the process callback plays silence in C and never enters
	// Go; ingo: it is in Go. libjack stops the process thread with an
	// asynchronous pthread_cancel (jack_deactivate, jack_client_close:
	// jack2's JackClient::Deactivate, fThread.Kill), which must never
	// find it in Go, so the client is idle whenever it is not running a
	// measurement, and is made idle, and out of Go, before either call.
	int32_t idle, ingo;
} lt_jack;

extern void ltJackProcess(uintptr_t handle, int64_t woke, int64_t raw, uint32_t nframes, int ok,
	uint32_t frames, uint64_t usecs, uint64_t t1, uint32_t since, uint64_t t2,
	uint32_t xruns, uint32_t bufsize, uint32_t rate);

// lt_process is the client's process callback, on the real-time thread
// libjack made for it.
static void lt_silence(lt_jack *j, jack_nframes_t nframes) {
	for (int i = 0; i < j->nout; i++) {
		memset(jack_port_get_buffer(j->out[i], nframes), 0, nframes * sizeof(jack_default_audio_sample_t));
	}
}

static int lt_process(jack_nframes_t nframes, void *arg) {
	int64_t woke = lt_callback_begin();
	lt_jack *j = arg;
	if (__atomic_load_n(&j->idle, __ATOMIC_SEQ_CST)) {
		lt_silence(j, nframes);
		return 0;
	}
	__atomic_store_n(&j->ingo, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&j->idle, __ATOMIC_SEQ_CST)) { // made idle meanwhile: see lt_idle
		__atomic_store_n(&j->ingo, 0, __ATOMIC_SEQ_CST);
		lt_silence(j, nframes);
		return 0;
	}
	// The same instant on CLOCK_MONOTONIC_RAW, jack_get_time's clock
	// (see jack.go's open): the clocks' offset from a reading of it
	// between two of CLOCK_MONOTONIC, the closest pair of up to four (a
	// preemption between them would move it; 2 µs apart is close
	// enough), added to woke.
	int64_t raw = woke, best = INT64_MAX;
	for (int try = 0; try < 4 && best > 2000; try++) {
		struct timespec m1, r, m2;
		clock_gettime(CLOCK_MONOTONIC, &m1);
		clock_gettime(CLOCK_MONOTONIC_RAW, &r);
		clock_gettime(CLOCK_MONOTONIC, &m2);
		int64_t a = (int64_t)m1.tv_sec * 1000000000 + m1.tv_nsec, b = (int64_t)m2.tv_sec * 1000000000 + m2.tv_nsec;
		if (b - a < best) {
			best = b - a;
			raw = woke + ((int64_t)r.tv_sec * 1000000000 + r.tv_nsec) - (a + (b - a) / 2);
		}
	}
	jack_nframes_t frames = 0;
	jack_time_t usecs = 0, next = 0;
	float period = 0;
	int ok = jack_get_cycle_times(j->client, &frames, &usecs, &next, &period) == 0;
	// The frames since the cycle actually began (jack2: since the
	// instant the server's driver took as the cycle's start,
	// fCurrentCallback, where usecs is its DLL's estimate), between two
	// readings of jack_get_time: where the start was, to a frame.
	jack_time_t t1 = jack_get_time();
	jack_nframes_t since = jack_frames_since_cycle_start(j->client);
	jack_time_t t2 = jack_get_time();
	for (int i = 0; i < j->nout; i++) {
		j->outbuf[i] = jack_port_get_buffer(j->out[i], nframes);
	}
	for (int i = 0; i < j->nin; i++) {
		j->inbuf[i] = jack_port_get_buffer(j->in[i], nframes);
	}
	ltJackProcess(j->handle, woke, raw, nframes, ok, frames, usecs, t1, since, t2,
		__atomic_load_n(&j->xruns, __ATOMIC_ACQUIRE),
		__atomic_load_n(&j->bufsize, __ATOMIC_ACQUIRE),
		__atomic_load_n(&j->rate, __ATOMIC_ACQUIRE));
	__atomic_store_n(&j->ingo, 0, __ATOMIC_SEQ_CST);
	return 0;
}

// lt_idle makes the process callback idle (or not); it returns whether
// the callback is still in Go (called with idle 1, the caller waits for
// it to return 0).
static int lt_idle(lt_jack *j, int idle) {
	__atomic_store_n(&j->idle, idle, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&j->ingo, __ATOMIC_SEQ_CST);
}

static int lt_xrun(void *arg) {
	__atomic_add_fetch(&((lt_jack *)arg)->xruns, 1, __ATOMIC_RELEASE);
	return 0;
}

static int lt_bufsize(jack_nframes_t n, void *arg) {
	__atomic_store_n(&((lt_jack *)arg)->bufsize, n, __ATOMIC_RELEASE);
	return 0;
}

static int lt_rate(jack_nframes_t n, void *arg) {
	__atomic_store_n(&((lt_jack *)arg)->rate, n, __ATOMIC_RELEASE);
	return 0;
}

static void lt_shutdown(void *arg) {
	__atomic_store_n(&((lt_jack *)arg)->shutdown, 1, __ATOMIC_RELEASE);
}

static void lt_silent(const char *msg) {}

// lt_quiet keeps libjack's messages (e.g. "Cannot connect to server
// socket") off stderr.
static void lt_quiet(void) {
	jack_set_error_function(lt_silent);
	jack_set_info_function(lt_silent);
}

// lt_open opens a client of the server named server ("" : the default,
// JACK_DEFAULT_SERVER or "default"), never starting one.
static lt_jack *lt_open(const char *name, const char *server, jack_status_t *status) {
	lt_jack *j = calloc(1, sizeof(lt_jack));
	if (!j) {
		*status = JackFailure;
		return NULL;
	}
	j->idle = 1;
	if (server[0]) {
		j->client = jack_client_open(name, JackNoStartServer | JackServerName, status, server);
	} else {
		j->client = jack_client_open(name, JackNoStartServer, status);
	}
	if (!j->client) {
		free(j);
		return NULL;
	}
	return j;
}

// lt_ports registers nout output and nin input ports and the callbacks.
static int lt_setup(lt_jack *j, int nout, int nin, uintptr_t handle) {
	char name[32];
	j->handle = handle;
	for (int i = 0; i < nout; i++) {
		snprintf(name, sizeof name, "out_%d", i + 1);
		if (!(j->out[i] = jack_port_register(j->client, name, JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0))) {
			return -1;
		}
		j->nout = i + 1;
	}
	for (int i = 0; i < nin; i++) {
		snprintf(name, sizeof name, "in_%d", i + 1);
		if (!(j->in[i] = jack_port_register(j->client, name, JACK_DEFAULT_AUDIO_TYPE, JackPortIsInput, 0))) {
			return -1;
		}
		j->nin = i + 1;
	}
	if (jack_set_process_callback(j->client, lt_process, j) ||
			jack_set_xrun_callback(j->client, lt_xrun, j) ||
			jack_set_buffer_size_callback(j->client, lt_bufsize, j) ||
			jack_set_sample_rate_callback(j->client, lt_rate, j)) {
		return -2;
	}
	jack_on_shutdown(j->client, lt_shutdown, j);
	return 0;
}

// lt_connect connects the client's ports to the physical ones, output i
// to the i-th physical playback port and the i-th physical capture port
// to input i, as far as there are; it returns how many it connected.
static int lt_connect(lt_jack *j) {
	int n = 0;
	const char **ports = jack_get_ports(j->client, NULL, JACK_DEFAULT_AUDIO_TYPE, JackPortIsPhysical | JackPortIsInput);
	for (int i = 0; ports && ports[i] && i < j->nout; i++) {
		if (jack_connect(j->client, jack_port_name(j->out[i]), ports[i]) == 0) {
			n++;
		}
	}
	jack_free(ports);
	ports = jack_get_ports(j->client, NULL, JACK_DEFAULT_AUDIO_TYPE, JackPortIsPhysical | JackPortIsOutput);
	for (int i = 0; ports && ports[i] && i < j->nin; i++) {
		if (jack_connect(j->client, ports[i], jack_port_name(j->in[i])) == 0) {
			n++;
		}
	}
	jack_free(ports);
	return n;
}

// lt_physical counts the server's physical audio ports with flags
// (JackPortIsInput: playback, JackPortIsOutput: capture).
static int lt_physical(lt_jack *j, unsigned long flags) {
	const char **ports = jack_get_ports(j->client, NULL, JACK_DEFAULT_AUDIO_TYPE, JackPortIsPhysical | flags);
	int n = 0;
	while (ports && ports[n]) {
		n++;
	}
	jack_free(ports);
	return n;
}

static void lt_close(lt_jack *j) {
	jack_client_close(j->client);
	free(j);
}

static int32_t lt_shut(lt_jack *j) { return __atomic_load_n(&j->shutdown, __ATOMIC_ACQUIRE); }
static uint32_t lt_xruns(lt_jack *j) { return __atomic_load_n(&j->xruns, __ATOMIC_ACQUIRE); }

// lt_within says whether jack_get_time() falls between two readings of
// clock id (in µs, as jack2 truncates them), and how far off it is.
static int lt_within(clockid_t id, int64_t *skew) {
	struct timespec a, b;
	clock_gettime(id, &a);
	jack_time_t t = jack_get_time();
	clock_gettime(id, &b);
	int64_t lo = (int64_t)a.tv_sec * 1000000 + a.tv_nsec / 1000, hi = (int64_t)b.tv_sec * 1000000 + b.tv_nsec / 1000 + 1;
	*skew = (int64_t)t < lo ? (int64_t)t - lo : (int64_t)t > hi ? (int64_t)t - hi : 0;
	return *skew == 0;
}

// lt_jack_clock says which clock jack_get_time() is: 1 CLOCK_MONOTONIC_RAW,
// 0 CLOCK_MONOTONIC, -1 neither (skew: how far off CLOCK_MONOTONIC).
static int lt_jack_clock(int64_t *skew) {
	for (int try = 0; try < 3; try++) { // a preemption between the readings
		if (lt_within(CLOCK_MONOTONIC_RAW, skew)) return 1;
		if (lt_within(CLOCK_MONOTONIC, skew)) return 0;
	}
	return -1;
}

// lt_cycle_times is jack_get_cycle_times, for the tests (only valid on the
// process thread).
static int lt_cycle_times(lt_jack *j, uint32_t *frames, uint64_t *usecs) {
	jack_nframes_t f;
	jack_time_t u, n;
	float p;
	int r = jack_get_cycle_times(j->client, &f, &u, &n, &p);
	*frames = f;
	*usecs = u;
	return r;
}
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"strings"
	"time"
	"unsafe"
)

// maxPorts is the most channels a stream may have (LT_MAX_PORTS).
const maxPorts = C.LT_MAX_PORTS

// client is an open JACK client with its ports and callbacks.
type client struct {
	j      *C.lt_jack
	handle cgo.Handle
}

// Status bits of jack_client_open.
const (
	statusServerFailed = C.JackServerFailed
	statusNameNotUniq  = C.JackNameNotUnique
)

// quiet keeps libjack's messages off stderr.
func quiet() { C.lt_quiet() }

// openClient opens a client named name of the server named server (""
// the default one), never starting a server. On failure it returns
// jack_client_open's status.
func openClient(name, server string) (*client, int, error) {
	cn, cs := C.CString(name), C.CString(server)
	defer C.free(unsafe.Pointer(cn))
	defer C.free(unsafe.Pointer(cs))
	var status C.jack_status_t
	j := C.lt_open(cn, cs, &status)
	if j == nil {
		return nil, int(status), fmt.Errorf("jack_client_open failed (status 0x%x)", int(status))
	}
	return &client{j: j}, int(status), nil
}

// setup registers the ports and the callbacks, which go to p.
func (c *client) setup(nout, nin int, p processor) error {
	c.handle = cgo.NewHandle(p)
	switch C.lt_setup(c.j, C.int(nout), C.int(nin), C.uintptr_t(c.handle)) {
	case -1:
		return fmt.Errorf("registering %d output and %d input ports failed", nout, nin)
	case -2:
		return fmt.Errorf("setting the callbacks failed")
	}
	return nil
}

func (c *client) rate() int       { return int(C.jack_get_sample_rate(c.j.client)) }
func (c *client) bufferSize() int { return int(C.jack_get_buffer_size(c.j.client)) }
func (c *client) name() string    { return C.GoString(C.jack_get_client_name(c.j.client)) }

// rtPriority is the real-time priority of the client's process thread, or
// -1 when the server does not run real-time.
func (c *client) rtPriority() int { return int(C.jack_client_real_time_priority(c.j.client)) }

func (c *client) activate() error {
	if r := C.jack_activate(c.j.client); r != 0 {
		return fmt.Errorf("jack_activate: %d", int(r))
	}
	return nil
}

func (c *client) deactivate() error {
	if r := C.jack_deactivate(c.j.client); r != 0 {
		return fmt.Errorf("jack_deactivate: %d", int(r))
	}
	return nil
}

// setIdle makes the process callback idle (silence in C, never in Go) or
// not; made idle, it waits (up to wait) until no callback is in Go, and
// reports whether none is.
func (c *client) setIdle(idle bool, wait time.Duration) bool {
	if !idle {
		C.lt_idle(c.j, 0)
		return true
	}
	for deadline := time.Now().Add(wait); C.lt_idle(c.j, 1) != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// connect connects the ports to the physical ones; it returns how many it
// connected.
func (c *client) connect() int { return int(C.lt_connect(c.j)) }

// physical counts the server's physical playback and capture ports.
func (c *client) physical() (playback, capture int) {
	return int(C.lt_physical(c.j, C.JackPortIsInput)), int(C.lt_physical(c.j, C.JackPortIsOutput))
}

// close closes the client and frees what setup made.
func (c *client) close() {
	C.lt_close(c.j)
	if c.handle != 0 {
		c.handle.Delete()
	}
}

// shutDown reports whether the server shut the client down.
func (c *client) shutDown() bool { return C.lt_shut(c.j) != 0 }

// xruns is how many xruns the server has reported to the client.
func (c *client) xruns() uint32 { return uint32(C.lt_xruns(c.j)) }

// out and in are the buffer of output or input port i for this cycle, of
// n frames; valid in the process callback only.
func (c *client) out(i, n int) []float32 {
	return unsafe.Slice((*float32)(c.j.outbuf[i]), n)
}

// cycleTimes is jack_get_cycle_times' frames and usecs, on the process
// thread.
func (c *client) cycleTimes() (frames uint32, usecs uint64, ok bool) {
	var f C.uint32_t
	var u C.uint64_t
	r := C.lt_cycle_times(c.j, &f, &u)
	return uint32(f), uint64(u), r == 0
}

// jackClock says which clock jack_get_time() reads: raw true for
// CLOCK_MONOTONIC_RAW, false for CLOCK_MONOTONIC; ok false when it is
// neither, skew then how far it is off CLOCK_MONOTONIC in µs.
func jackClock() (raw, ok bool, skew int64) {
	var s C.int64_t
	r := C.lt_jack_clock(&s)
	return r == 1, r >= 0, int64(s)
}

// physicalPorts lists the server's physical ports of a direction, for
// the notes.
func (c *client) portConnections(i int, output bool) string {
	p := c.j.in[i]
	if output {
		p = c.j.out[i]
	}
	names := C.jack_port_get_connections(p)
	if names == nil {
		return ""
	}
	defer C.jack_free(unsafe.Pointer(names))
	var out []string
	for k := 0; ; k++ {
		s := *(**C.char)(unsafe.Add(unsafe.Pointer(names), k*int(unsafe.Sizeof(uintptr(0)))))
		if s == nil {
			break
		}
		out = append(out, C.GoString(s))
	}
	return strings.Join(out, ",")
}

// A processor receives the process callbacks on JACK's thread: woke is
// CLOCK_MONOTONIC, read in C first, raw the same instant on
// CLOCK_MONOTONIC_RAW; ok says jack_get_cycle_times
// answered, with frames (the cycle's first frame), usecs (its start) and
// next (the next cycle's), in jack_get_time's µs; xruns, bufsize and rate
// are what the notification callbacks stored. since is
// jack_frames_since_cycle_start between the readings t1 and t2 of
// jack_get_time.
type processor interface {
	process(woke, raw int64, nframes int, ok bool, frames uint32, usecs, t1 uint64, since uint32, t2 uint64, xruns, bufsize, rate uint32)
}

//export ltJackProcess
func ltJackProcess(handle C.uintptr_t, woke, raw C.int64_t, nframes C.uint32_t, ok C.int,
	frames C.uint32_t, usecs, t1 C.uint64_t, since C.uint32_t, t2 C.uint64_t, xruns, bufsize, rate C.uint32_t) {
	cgo.Handle(handle).Value().(processor).process(int64(woke), int64(raw), int(nframes), ok != 0,
		uint32(frames), uint64(usecs), uint64(t1), uint32(since), uint64(t2), uint32(xruns), uint32(bufsize), uint32(rate))
}
