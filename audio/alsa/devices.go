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

// Devices lists every PCM device of every card, with what each offers as
// HW_REFINE reports it from "anything" (the figures of its first stream;
// a device's streams rarely differ).
func (d *Driver) Devices() ([]audio.DeviceInfo, error) {
	cs, err := d.sys.cards()
	if err != nil {
		return nil, err
	}
	var out []audio.DeviceInfo
	for _, c := range cs {
		for _, dev := range d.sys.pcmDevices(c) {
			info := audio.DeviceInfo{Name: fmt.Sprintf("hw:%s,%d", c.id, dev)}
			var name string
			var busy []string
			for _, stream := range []int{streamPlayback, streamCapture} {
				path := d.sys.pcmPath(c, dev, stream)
				dir := map[int]string{streamPlayback: "playback", streamCapture: "capture"}[stream]
				p, err := openPCM(path, stream)
				if errors.Is(err, unix.ENOENT) {
					continue
				}
				if name == "" {
					name = d.sys.pcmName(c, dev, stream)
				}
				info.Streams = append(info.Streams, dir)
				if err != nil {
					if errors.Is(err, unix.EBUSY) {
						b := dir + " busy"
						if who := d.sys.holder(c, dev, stream); who != "" {
							b += " (" + who + ")"
						}
						busy = append(busy, b)
					}
					continue
				}
				if info.Rates == "" {
					describe(p, &info)
				}
				p.close()
			}
			if info.Streams == nil {
				continue
			}
			info.Description = fmt.Sprintf("card %d [%s] %s: %s", c.index, c.id, c.name, name)
			info.Driver = cardSummary(d.sys.describeCard(c, 0))
			if busy != nil {
				info.Description += "; " + strings.Join(busy, ", ")
			}
			out = append(out, info)
		}
	}
	return out, nil
}

// describe fills info from what the device offers.
func describe(r refiner, info *audio.DeviceInfo) {
	h := anyParams()
	if r.refine(&h) != nil {
		return
	}
	info.Rates = rates(r, &h)
	info.Formats = formatNames(h.mask(paramFormat))
	info.Channels = h.interval(paramChannels).String()
	info.PeriodSize = h.interval(paramPeriodSize).String()
	info.BufferSize = h.interval(paramBufferSize).String()
	info.Flags = infoFlags(h.Info)
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
