//go:build portaudio

package portaudio

import (
	"fmt"
	"strconv"
	"strings"

	"latencytest/audio"
	"latencytest/internal/badinput"
	"latencytest/internal/jackserver"
)

// hostAPIs are the host APIs --device names, with the PortAudio type each
// stands for. "pulse" and "pipewire" are not host APIs of Debian's
// libportaudio2: they are the ALSA plugins of those servers, reached as
// ALSA devices of that name.
var hostAPIs = []struct {
	name string
	typ  int
}{
	{"jack", typeJACK},
	{"alsa", typeALSA},
	{"oss", typeOSS},
}

// pluginAliases maps --device names that are ALSA plugins to the ALSA
// device name they stand for.
var pluginAliases = map[string]string{"pulse": "pulse", "pipewire": "pipewire"}

// hostAPIName is the --device name of a host API.
func hostAPIName(h *hostAPI) string {
	for _, a := range hostAPIs {
		if a.typ == h.typ {
			return a.name
		}
	}
	return strings.ToLower(strings.Fields(h.name + " unknown")[0])
}

// deviceName is how a device is shown and what --device HOSTAPI:NAME
// matches.
func deviceName(d *device) string {
	return fmt.Sprintf("%s:%s", hostAPIName(d.host), d.name)
}

// has says whether a device has the channels a direction needs.
func has(d *device, capture bool) bool {
	if capture {
		return d.maxIn > 0
	}
	return d.maxOut > 0
}

// resolve finds the device --device spec names, for playback or capture:
// "" JACK's default device when a server runs, else ALSA's, N a device index, HOSTAPI that host API's
// default device, HOSTAPI:NAME the first of its devices whose name
// contains NAME (case-insensitive). Every failure is the user's to fix.
func resolve(hosts []*hostAPI, devs []*device, spec string, capture bool) (*device, error) {
	dir := "playback"
	if capture {
		dir = "capture"
	}
	bad := func(format string, a ...any) error {
		return badinput.Errorf("--device %q: %s", spec, fmt.Sprintf(format, a...))
	}
	if spec == "" {
		// A running JACK server is where the audio goes; else ALSA's
		// default device (which may be a sound server's plugin).
		for _, typ := range []int{typeJACK, typeALSA} {
			for _, h := range hosts {
				if h.typ == typ {
					return hostDefault(h, capture, spec, dir)
				}
			}
		}
		if len(hosts) == 0 {
			return nil, bad("PortAudio found no host API")
		}
		return hostDefault(hosts[0], capture, spec, dir)
	}
	if n, err := strconv.Atoi(spec); err == nil {
		if n < 0 || n >= len(devs) {
			return nil, bad("no device %d: PortAudio has devices 0-%d (see 'latencytest devices')", n, len(devs)-1)
		}
		if !has(devs[n], capture) {
			return nil, bad("device %d (%s) has no %s channels", n, deviceName(devs[n]), dir)
		}
		return devs[n], nil
	}
	api, name, _ := strings.Cut(spec, ":")
	api = strings.ToLower(api)
	if plugin, ok := pluginAliases[api]; ok && name == "" {
		api, name = "alsa", plugin
	}
	var host *hostAPI
	known := false
	for _, a := range hostAPIs {
		if a.name != api {
			continue
		}
		known = true
		for _, h := range hosts {
			if h.typ == a.typ {
				host = h
			}
		}
	}
	if !known {
		return nil, bad("no host API %q; allowed: jack, alsa, pulse, pipewire, oss, HOSTAPI:NAME or a device index", api)
	}
	if host == nil {
		if api == "jack" {
			return nil, bad("no JACK server is running (start jackd, or set JACK_DEFAULT_SERVER to its name); host APIs found: %s", hostList(hosts))
		}
		return nil, bad("PortAudio has no %s host API here; host APIs found: %s", api, hostList(hosts))
	}
	if name == "" {
		return hostDefault(host, capture, spec, dir)
	}
	for _, d := range host.devices {
		if has(d, capture) && strings.Contains(strings.ToLower(d.name), strings.ToLower(name)) {
			return d, nil
		}
	}
	var names []string
	for _, d := range host.devices {
		if has(d, capture) {
			names = append(names, d.name)
		}
	}
	if len(names) == 0 {
		return nil, bad("%s has no %s devices", host.name, dir)
	}
	return nil, bad("no %s %s device whose name contains %q; there are: %s", host.name, dir, name, strings.Join(names, ", "))
}

func hostDefault(h *hostAPI, capture bool, spec, dir string) (*device, error) {
	d := h.defaultOut
	if capture {
		d = h.defaultIn
	}
	if d == nil || !has(d, capture) {
		return nil, badinput.Errorf("--device %q: %s has no default %s device", spec, h.name, dir)
	}
	return d, nil
}

func hostList(hosts []*hostAPI) string {
	if len(hosts) == 0 {
		return "none"
	}
	var n []string
	for _, h := range hosts {
		n = append(n, h.name)
	}
	return strings.Join(n, ", ")
}

// Devices lists every host API (as --device HOSTAPI) and every device (as
// --device N, its index) PortAudio can open.
func (d *Driver) Devices() ([]audio.DeviceInfo, error) {
	if err := d.init(); err != nil {
		return nil, err
	}
	defer d.terminate()
	hosts, devs, err := paDevices()
	if err != nil {
		return nil, fmt.Errorf("portaudio: listing devices: %w", err)
	}
	var out []audio.DeviceInfo
	for _, h := range hosts {
		info := audio.DeviceInfo{Name: hostAPIName(h), Description: h.name + ": no devices"}
		if def := h.defaultOut; def != nil {
			info.Description = fmt.Sprintf("%s, default device %s", h.name, def.name)
			info = describe(info, def)
		}
		out = append(out, info)
	}
	for _, dev := range devs {
		info := audio.DeviceInfo{Name: strconv.Itoa(dev.index), Description: deviceName(dev)}
		out = append(out, describe(info, dev))
	}
	return out, nil
}

// describe fills what a device offers. PortAudio knows a default rate and
// latency per device, not ranges; JACK devices run at the server's rate
// and period only.
func describe(info audio.DeviceInfo, d *device) audio.DeviceInfo {
	if d.maxOut > 0 {
		info.Streams = append(info.Streams, "playback")
	}
	if d.maxIn > 0 {
		info.Streams = append(info.Streams, "capture")
	}
	info.Rates = strconv.Itoa(int(d.rate))
	info.Formats = []string{"float32"}
	info.Channels = fmt.Sprintf("out 1-%d, in 1-%d", d.maxOut, d.maxIn)
	if d.host.typ == typeJACK {
		if srv, err := probeJack(d); err == nil {
			info.PeriodSize = strconv.Itoa(srv.period)
			info.BufferSize = info.PeriodSize
		}
	} else {
		lo := int(d.lowOut.Seconds()*d.rate + 0.5)
		hi := int(d.highOut.Seconds()*d.rate + 0.5)
		info.BufferSize = fmt.Sprintf("%d-%d (default latency)", lo, hi)
	}
	return info
}

// JackRunning reports whether a JACK server this process would connect to
// is up (internal/jackserver.Running): it looks for the server's socket
// rather than initialising PortAudio, which would probe every ALSA device.
func JackRunning() bool { return jackserver.Running() }
