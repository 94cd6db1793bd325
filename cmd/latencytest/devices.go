package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"latencytest/audio"
)

// devicesMain lists, for every built-in driver that can enumerate what it
// opens (audio.Devices), its devices and what each offers.
// devicesDoc is devices' help besides its flags.
func devicesDoc() cmdDoc {
	return cmdDoc{
		synopsis: []string{"latencytest devices [-driver NAME]"},
		about: `Lists the devices each built-in driver can open, with the rates,
formats, channels, period and buffer sizes they offer.`,
		examples: []string{"latencytest devices", "latencytest devices -driver alsa", "latencytest devices -driver portaudio"},
	}
}

// devicesFlagSet defines devices' flags: the one definition its parsing,
// its -h, its man page and its completion are made from.
func devicesFlagSet() (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("devices", flag.ContinueOnError)
	var driver string
	choiceVar(fs, &driver, "driver", "", driverNames(), "list only this driver's devices ("+strings.Join(driverNames(), ", ")+")")
	return fs, &driver
}

func devicesMain(args []string, stdout, stderr io.Writer) int {
	fs, driver := devicesFlagSet()
	if code, ok := parseFlags(fs, args, stdout, stderr, devicesDoc()); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "latencytest devices: unexpected argument %q; only -driver NAME is allowed\n", fs.Arg(0))
		return 2
	}
	if *driver != "" {
		if _, ok := lookupDriver(*driver); !ok {
			fmt.Fprintf(stderr, "latencytest devices: -driver %q: built-in drivers are %s\n", *driver, strings.Join(driverNames(), ", "))
			return 2
		}
	}
	listed, failed := 0, false
	for _, e := range drivers() {
		if *driver != "" && e.name != *driver {
			continue
		}
		lister, ok := e.new().(audio.Devices)
		if !ok {
			continue
		}
		devs, err := lister.Devices()
		if err != nil {
			fmt.Fprintf(stderr, "latencytest devices: %s: %v\n", e.name, err)
			failed = true
			continue
		}
		listed++
		writeDevices(stdout, e.name, devs)
	}
	if listed == 0 && !failed {
		fmt.Fprintf(stdout, "no built-in driver lists devices (built in: %s)\n", strings.Join(driverNames(), ", "))
	}
	if failed {
		return 1
	}
	return 0
}

// writeDevices prints one driver's devices, one block each.
func writeDevices(w io.Writer, driver string, devs []audio.DeviceInfo) {
	fmt.Fprintf(w, "%s:\n", driver)
	if len(devs) == 0 {
		fmt.Fprintln(w, "  no devices")
	}
	for _, d := range devs {
		fmt.Fprintf(w, "  %s  %s\n", d.Name, d.Description)
		field := fieldWriter(w, "      ")
		field("driver", d.Driver)
		field("streams", strings.Join(d.Streams, ", "))
		if d.Sides == nil {
			writeOffers(field, audio.StreamInfo{Rates: d.Rates, Formats: d.Formats, Channels: d.Channels, PeriodSize: d.PeriodSize, BufferSize: d.BufferSize, Flags: d.Flags})
			continue
		}
		// Each stream with its own figures: a device's playback and
		// capture may differ (2 inputs and 4 outputs, a capture at
		// 44.1 kHz only).
		for _, s := range d.Sides {
			head := s.Stream + ":"
			if s.Busy != "" {
				head += " busy, held by " + s.Busy
			}
			fmt.Fprintf(w, "      %s\n", head)
			writeOffers(fieldWriter(w, "        "), s)
		}
	}
}

// fieldWriter prints "name: value" lines at an indent, none for an empty
// value.
func fieldWriter(w io.Writer, indent string) func(name, value string) {
	return func(name, value string) {
		if value != "" {
			fmt.Fprintf(w, "%s%-12s %s\n", indent, name+":", value)
		}
	}
}

// writeOffers prints what a stream offers.
func writeOffers(field func(name, value string), s audio.StreamInfo) {
	field("rates", s.Rates)
	field("formats", strings.Join(s.Formats, " "))
	field("channels", s.Channels)
	field("period", framesText(s.PeriodSize))
	field("buffer", framesText(s.BufferSize))
	field("flags", strings.Join(s.Flags, " "))
}

func framesText(s string) string {
	if s == "" {
		return ""
	}
	return s + " frames"
}
