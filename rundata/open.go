package rundata

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Limits on what a reader accepts, so that a hostile or damaged results
// directory costs memory in proportion to its real content: run.json is a
// few KB for a real run, and a report holds at most MaxPhases histograms.
const (
	MaxRunFileBytes = 16 << 20
	MaxPhases       = 128
	// MaxCPUPhases bounds a run --cpus's CPUs × phases: each is a record
	// of up to some 100 values in run.json, which with MaxPhases phases
	// must stay within the values a reader decodes (runShape;
	// TestMaxCPUPhasesRead): 7 phases of 128 CPUs, say.
	MaxCPUPhases = 1024
)

// ErrNotRegular is returned for a path that is a FIFO, a device, a socket
// or a directory where a file is expected: reading one could block or
// never end.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens path for reading, refusing anything but a regular
// file. The open itself does not block on a FIFO (O_NONBLOCK) and, with
// noFollow, does not follow a symbolic link in the last element: files a
// run wrote itself (the samples) are never links, so one found there was
// planted.
func OpenRegular(path string, noFollow bool) (*os.File, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	if noFollow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		if noFollow && errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s: is a symbolic link, refused", path)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, fileKind(fi.Mode()))
	}
	return f, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// ReadFileLimited reads a regular file of at most limit bytes, into one
// buffer of the file's size (not the doubling of io.ReadAll).
func ReadFileLimited(path string, limit int64) ([]byte, error) {
	f, err := OpenRegular(path, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(max(size, 0), limit)+512))
	_, err = buf.ReadFrom(io.LimitReader(f, limit+1))
	b := buf.Bytes()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %d MB, more than this kind of file ever holds", path, limit>>20)
	}
	return b, nil
}
