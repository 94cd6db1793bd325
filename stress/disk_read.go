package stress

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

// diskReadStressor reads a file sequentially in 1 MiB blocks, over and
// over, dropping it from the page cache before every pass
// (posix_fadvise DONTNEED, and with --drop-caches every file's cache) so
// that the reads reach the disk.
type diskReadStressor struct{}

func (diskReadStressor) Name() string { return "disk-read" }
func (diskReadStressor) Description() string {
	return "read a --size file in --dir sequentially, dropped from the page cache before every pass; MB/s"
}

type diskRead struct{ *disk }

func (diskReadStressor) Flags(fs *flag.FlagSet, prefix string) Load {
	return diskRead{diskFlags(fs, flagPrefix(prefix), true, 1)}
}

func (d diskRead) Run(ctx context.Context, m *Meter) (err error) {
	f, err := d.create("read")
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeRemove(f); err == nil {
			err = cerr
		}
	}()
	n, err := d.prepare(ctx, f, m)
	if err != nil {
		return err
	}
	m.Unit("MB", 1e6)
	d.describe(m)
	m.Ready()
	buf := make([]byte, diskBlock)
	for ctx.Err() == nil {
		if d.dropCaches {
			if err := dropAllCaches(); err != nil {
				return err
			}
		}
		for off := int64(0); off < n && ctx.Err() == nil; {
			k, err := f.ReadAt(buf, off)
			if k > 0 {
				off += int64(k)
				m.Add(int64(k))
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", f.Name(), err)
			}
		}
		if err := dropCache(f); err != nil {
			return err
		}
	}
	return nil
}
