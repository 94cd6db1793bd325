package stress

import (
	"context"
	"flag"
	"time"
)

// diskWriteStressor writes a file sequentially, as dd does, over and over:
// each pass writes --size bytes in 1 MiB blocks from the start and ends
// with fdatasync. It overwrites rather than truncates (dd conv=notrunc):
// freeing a 1 GiB file's blocks takes ext4 a second in which nothing is
// written, and a pass should be the writes it is counted for.
type diskWriteStressor struct{}

func (diskWriteStressor) Name() string { return "disk-write" }
func (diskWriteStressor) Description() string {
	return "write a --size file in --dir sequentially (as dd), again and again; MB/s"
}

type diskWrite struct{ *disk }

func (diskWriteStressor) Flags(fs *flag.FlagSet, prefix string) Load {
	return diskWrite{diskFlags(fs, flagPrefix(prefix), false, 1)}
}

func (d diskWrite) Run(ctx context.Context, m *Meter) (err error) {
	f, err := d.create("write")
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeRemove(f); err == nil {
			err = cerr
		}
	}()
	m.Unit("MB", 1e6)
	m.Set("size_bytes", d.bytes)
	d.describe(m)
	m.Ready()
	for ctx.Err() == nil {
		if _, err := fill(ctx, f, blockSource, d.bytes, time.Time{}, m.Add); err != nil {
			return err
		}
		if err := dropCache(f); err != nil {
			return err
		}
	}
	return nil
}
