package audio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"latencytest/rundata"
)

// WAVFormat is what a WAV file's fmt chunk says of its audio.
type WAVFormat struct {
	Tag      int // 1 integer PCM, 3 float (WAVE_FORMAT_EXTENSIBLE resolved to its subformat)
	Channels int
	Rate     int
	Bits     int
	Align    int // bytes per frame
}

// ReadWAVHeader reads a RIFF WAVE file up to its data chunk, leaving r at
// the first sample; size is what the data chunk's header claims.
func ReadWAVHeader(r io.Reader) (f WAVFormat, size int64, err error) {
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil || string(hdr[0:4]) != "RIFF" || string(hdr[8:12]) != "WAVE" {
		return f, 0, errors.New("not a WAV file (no RIFF/WAVE header)")
	}
	le := binary.LittleEndian
	haveFmt := false
	for {
		var ch [8]byte
		if _, err := io.ReadFull(r, ch[:]); err != nil {
			return f, 0, errors.New("no data chunk")
		}
		id, size := string(ch[0:4]), int64(le.Uint32(ch[4:8]))
		switch id {
		case "fmt ":
			if size < 16 || size > 1<<16 {
				return f, 0, fmt.Errorf("fmt chunk of %d bytes", size)
			}
			b := make([]byte, size+size%2)
			if _, err := io.ReadFull(r, b); err != nil {
				return f, 0, fmt.Errorf("fmt chunk: %w", err)
			}
			f = WAVFormat{Tag: int(le.Uint16(b[0:])), Channels: int(le.Uint16(b[2:])), Rate: int(le.Uint32(b[4:])),
				Align: int(le.Uint16(b[12:])), Bits: int(le.Uint16(b[14:]))}
			if f.Tag == 0xFFFE && size >= 40 { // WAVE_FORMAT_EXTENSIBLE: the subformat GUID starts with the tag
				f.Tag = int(le.Uint16(b[24:]))
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return f, 0, errors.New("data chunk before fmt chunk")
			}
			return f, size, nil
		default:
			if _, err := io.CopyN(io.Discard, r, size+size%2); err != nil {
				return f, 0, fmt.Errorf("chunk %q: %w", id, err)
			}
		}
	}
}

// WAVFileFormat reads the format of the WAV file at path (a regular file:
// a FIFO or a device is refused, not read forever).
func WAVFileFormat(path string) (WAVFormat, error) {
	fh, err := rundata.OpenRegular(path, false)
	if err != nil {
		return WAVFormat{}, err
	}
	defer fh.Close()
	f, _, err := ReadWAVHeader(fh)
	return f, err
}
