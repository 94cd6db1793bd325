package main

import (
	"flag"
	"math"

	"latencytest/audio"
)

// aplayFlags are aplay's names for the stream's shape, so that an aplay
// command line from a bug report translates one to one:
//
//	aplay -D hw:0,0 --period-size=128 --buffer-size=512 song.wav
//	latencytest run --device hw:0,0 --period-size 128 --buffer-size 512 --file song.wav
//
// Sizes are frames, times microseconds (aplay's units). latencytest keeps a
// whole number of periods in the buffer, so a buffer size must be a
// multiple of the period; given alone, a buffer makes periods of a quarter
// of it, as aplay does.
type aplayFlags struct {
	periodSize, bufferSize int
	periodTime, bufferTime int
}

func newAplayFlags(fs *flag.FlagSet) *aplayFlags {
	a := &aplayFlags{}
	fs.IntVar(&a.periodSize, "period-size", 0, "aplay's --period-size: period, frames (same as --period)")
	fs.IntVar(&a.bufferSize, "buffer-size", 0, "aplay's --buffer-size: buffer, frames (a multiple of the period; sets --periods)")
	fs.IntVar(&a.periodTime, "period-time", 0, "aplay's --period-time: period, µs (rounded to whole frames)")
	fs.IntVar(&a.bufferTime, "buffer-time", 0, "aplay's --buffer-time: buffer, µs (rounded to whole periods)")
	return a
}

// apply turns the aplay flags given into --period and --periods, and
// gives the stream --file's rate and channels, as aplay does. The flags
// set explicitly are told by fs.
func (a *aplayFlags) apply(fs *flag.FlagSet, f *runFlags) error {
	set := givenFlags(fs)
	// A rate asked for is kept or refused; else a card that does not take
	// the default plays at its nearest (a file's rate, and aplay's times,
	// count as asked).
	f.rateGiven = set["rate"] || f.file != "" || set["period-time"] || set["buffer-time"]
	if err := fileShape(f, set); err != nil {
		return err
	}
	for _, pair := range [][2]string{{"period", "period-size"}, {"period", "period-time"}, {"period-size", "period-time"},
		{"periods", "buffer-size"}, {"periods", "buffer-time"}, {"buffer-size", "buffer-time"}} {
		if set[pair[0]] && set[pair[1]] {
			return badFlag("--%s and --%s: give one of them", pair[0], pair[1])
		}
	}
	for name, v := range map[string]int{"period-size": a.periodSize, "buffer-size": a.bufferSize, "period-time": a.periodTime, "buffer-time": a.bufferTime} {
		if set[name] && v <= 0 {
			return badFlag("--%s %d: allowed a whole number above 0", name, v)
		}
	}
	buffer := 0 // frames, when a buffer was asked for
	switch {
	case set["buffer-size"]:
		buffer = a.bufferSize
	case set["buffer-time"]:
		buffer = frames(a.bufferTime, f.rate)
	}
	switch {
	case set["period-size"]:
		f.period = a.periodSize
	case set["period-time"]:
		f.period = frames(a.periodTime, f.rate)
	case buffer > 0 && !set["period"]:
		f.period = buffer / 4
	}
	if buffer == 0 {
		return nil
	}
	if f.period <= 0 {
		return badFlag("--buffer-size %d: too small for a period", buffer)
	}
	if set["buffer-size"] && buffer%f.period != 0 {
		return badFlag("--buffer-size %d: allowed a multiple of the period (%d frames): latencytest keeps whole periods in the buffer", buffer, f.period)
	}
	f.periods = int(math.Round(float64(buffer) / float64(f.period)))
	return nil
}

// frames converts aplay's µs to frames at rate, to the nearest.
func frames(us, rate int) int {
	return int(math.Round(float64(us) * float64(rate) / 1e6))
}

// fileShape gives the stream the rate and channels of --file, which is
// played as it is, never resampled; a --rate or --channels given too must
// agree with it.
func fileShape(f *runFlags, set map[string]bool) error {
	if f.file == "" {
		return nil
	}
	wf, err := audio.WAVFileFormat(f.file)
	if err != nil {
		return badFlag("--file %s: %v", f.file, err)
	}
	if set["rate"] && f.rate != wf.Rate {
		return badFlag("--rate %d and --file %s (%d Hz): latencytest never resamples; drop --rate or convert the file", f.rate, f.file, wf.Rate)
	}
	if set["channels"] && f.channels != wf.Channels {
		return badFlag("--channels %d and --file %s (%d channels): drop --channels or convert the file", f.channels, f.file, wf.Channels)
	}
	f.rate, f.channels = wf.Rate, wf.Channels
	return nil
}
