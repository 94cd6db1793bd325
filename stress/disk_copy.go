package stress

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
)

// diskCopyStressor copies a file to another in the same directory, over
// and over, with plain reads and writes (not copy_file_range, which some
// filesystems turn into a reflink that moves no data). The source is
// dropped from the page cache before every pass; the copy overwrites the
// previous one (see diskWriteStressor) and ends with fdatasync.
type diskCopyStressor struct{}

func (diskCopyStressor) Name() string { return "disk-copy" }
func (diskCopyStressor) Description() string {
	return "copy a --size file within --dir with reads and writes (as cp), again and again; MB/s copied"
}

type diskCopy struct{ *disk }

func (diskCopyStressor) Flags(fs *flag.FlagSet, prefix string) Load {
	return diskCopy{diskFlags(fs, flagPrefix(prefix), false, 2)}
}

func (d diskCopy) Run(ctx context.Context, m *Meter) (err error) {
	src, err := d.create("copy-src")
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeRemove(src); err == nil {
			err = cerr
		}
	}()
	dst, err := d.create("copy-dst")
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeRemove(dst); err == nil {
			err = cerr
		}
	}()
	n, err := d.prepare(ctx, src, m)
	if err != nil {
		return err
	}
	m.Unit("MB", 1e6)
	d.describe(m)
	m.Ready()
	read := func(off int64, b []byte) (int, error) {
		k, err := src.ReadAt(b, off)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		if err != nil {
			return k, fmt.Errorf("read %s: %w", src.Name(), err)
		}
		return k, nil
	}
	for ctx.Err() == nil {
		if err := dropCache(src); err != nil {
			return err
		}
		if _, err := fill(ctx, dst, read, n, time.Time{}, m.Add); err != nil {
			return err
		}
		if err := dropCache(dst); err != nil {
			return err
		}
	}
	return nil
}
