//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"latencytest/audio"
)

// standardRates are probed one by one, since HW_REFINE reports a rate
// range even for a device that only takes a few rates within it.
var standardRates = []uint32{8000, 11025, 16000, 22050, 32000, 44100, 48000, 64000, 88200, 96000, 176400, 192000, 352800, 384000}

// Devices lists every PCM device of every card, each of its streams with
// what it offers as HW_REFINE reports it from "anything": a device's
// playback and capture may differ (an interface with 2 inputs and 4
// outputs), so each is probed on its own.
func (d *Driver) Devices() ([]audio.DeviceInfo, error) {
	cs, err := d.sys.cards()
	if err != nil {
		return nil, err
	}
	var out []audio.DeviceInfo
	for _, c := range cs {
		for _, dev := range d.sys.pcmDevices(c) {
			if info, ok := d.deviceInfo(c, dev); ok {
				out = append(out, info)
			}
		}
	}
	return out, nil
}

// deviceInfo describes device dev of card c and each of its streams; ok
// is false when it has none. The device's own Rates to Flags are its
// first free stream's, for readers of one set (audio.DeviceInfo).
func (d *Driver) deviceInfo(c card, dev int) (info audio.DeviceInfo, ok bool) {
	info.Name = fmt.Sprintf("hw:%s,%d", c.id, dev)
	var name string
	var busy []string
	for _, stream := range []int{streamPlayback, streamCapture} {
		si, ok := d.streamInfo(c, dev, stream)
		if !ok {
			continue
		}
		if name == "" {
			name = d.sys.pcmName(c, dev, stream)
		}
		info.Streams = append(info.Streams, si.Stream)
		info.Sides = append(info.Sides, si)
		if si.Busy != "" {
			b := si.Stream + " busy"
			if si.Busy != "another process" {
				b += " (" + si.Busy + ")"
			}
			busy = append(busy, b)
		} else if info.Rates == "" {
			info.Rates, info.Formats, info.Channels = si.Rates, si.Formats, si.Channels
			info.PeriodSize, info.BufferSize, info.Flags = si.PeriodSize, si.BufferSize, si.Flags
		}
	}
	if info.Streams == nil {
		return info, false
	}
	info.Description = fmt.Sprintf("card %d [%s] %s: %s", c.index, c.id, c.name, name)
	info.Driver = cardSummary(d.sys.describeCard(c, 0))
	if busy != nil {
		info.Description += "; " + strings.Join(busy, ", ")
	}
	return info, true
}

// streamInfo probes one stream of a device; ok is false when the device
// has no such stream. A busy stream is named with its holder.
func (d *Driver) streamInfo(c card, dev, stream int) (si audio.StreamInfo, ok bool) {
	si.Stream = map[int]string{streamPlayback: "playback", streamCapture: "capture"}[stream]
	r, done, err := d.probe(d.sys.pcmPath(c, dev, stream), stream)
	if errors.Is(err, unix.ENOENT) {
		return si, false
	}
	if err != nil {
		if errors.Is(err, unix.EBUSY) {
			si.Busy = d.sys.holder(c, dev, stream)
			if si.Busy == "" {
				si.Busy = "another process"
			}
		}
		return si, true
	}
	defer done()
	describe(r, &si)
	return si, true
}

// probe opens a stream for describe: the PCM node, or the fake card the
// tests put in d.probeWith.
func (d *Driver) probe(path string, stream int) (refiner, func(), error) {
	if d.probeWith != nil {
		return d.probeWith(path, stream)
	}
	p, err := openPCM(path, stream)
	if err != nil {
		return nil, nil, err
	}
	return p, func() { p.close() }, nil
}

// describe fills si from what the stream offers.
func describe(r refiner, si *audio.StreamInfo) {
	h := anyParams()
	if r.refine(&h) != nil {
		return
	}
	si.Rates = rates(r, &h)
	si.Formats = formatNames(h.mask(paramFormat))
	si.Channels = h.interval(paramChannels).String()
	si.PeriodSize = h.interval(paramPeriodSize).String()
	si.BufferSize = h.interval(paramBufferSize).String()
	si.Flags = infoFlags(h.Info)
}

// rates is "lo-hi" when the device takes every standard rate in its
// range, else the list of standard rates it takes.
func rates(r refiner, h *hwParams) string {
	iv := h.interval(paramRate)
	lo, hi := iv.lo(), iv.hi()
	var ok []string
	all := true
	for _, rate := range standardRates {
		if rate < lo || rate > hi {
			continue
		}
		q := *h
		if trySet(r, &q, paramRate, rate) {
			ok = append(ok, strconv.FormatUint(uint64(rate), 10))
		} else {
			all = false
		}
	}
	if all || ok == nil {
		return iv.String()
	}
	return strings.Join(ok, ", ")
}

// describeDevices names a card's devices of one direction, for the error
// about a device that is not there.
func (s system) describeDevices(c card, stream int) string {
	var have []string
	for _, dev := range s.pcmDevices(c) {
		var st unix.Stat_t
		if unix.Stat(s.pcmPath(c, dev, stream), &st) == nil {
			have = append(have, strconv.Itoa(dev))
		}
	}
	if have == nil {
		return "none"
	}
	return "device " + strings.Join(have, ", ")
}
