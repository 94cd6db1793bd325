package initramfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"latencytest/internal/initramfs/cpiotest"
)

// entry is one parsed archive member.
type entry struct {
	name               string
	mode, nlink        uint32
	rmajor, rminor     uint32
	data               string
	offset, dataOffset int
}

// parse reads a newc archive independently of Writer's code, checking the
// invariants the kernel's unpacker relies on: the magic, 4-byte alignment
// of every header and body, the NUL after the name, and the trailer last.
func parse(t *testing.T, b []byte) []entry {
	t.Helper()
	var out []entry
	off := 0
	for {
		if off%4 != 0 {
			t.Fatalf("header at %d is not 4-byte aligned", off)
		}
		if len(b) < off+110 {
			t.Fatalf("archive ends at %d without a trailer", off)
		}
		h := string(b[off : off+110])
		if h[:6] != "070701" {
			t.Fatalf("bad magic %q at %d", h[:6], off)
		}
		field := func(i int) uint32 {
			v, err := strconv.ParseUint(h[6+8*i:14+8*i], 16, 32)
			if err != nil {
				t.Fatalf("header at %d field %d: %v", off, i, err)
			}
			return uint32(v)
		}
		e := entry{mode: field(1), nlink: field(4), rmajor: field(9), rminor: field(10), offset: off}
		if uid, gid, mtime := field(2), field(3), field(5); uid != 0 || gid != 0 || mtime != 0 {
			t.Errorf("entry at %d: uid %d gid %d mtime %d, want all 0", off, uid, gid, mtime)
		}
		size, namesize := int(field(6)), int(field(11))
		nameEnd := off + 110 + namesize
		if b[nameEnd-1] != 0 {
			t.Fatalf("name at %d is not NUL-terminated", off)
		}
		e.name = string(b[off+110 : nameEnd-1])
		e.dataOffset = (nameEnd + 3) &^ 3
		e.data = string(b[e.dataOffset : e.dataOffset+size])
		off = (e.dataOffset + size + 3) &^ 3
		if e.name == "TRAILER!!!" {
			if off != len(b) {
				t.Fatalf("%d bytes after the trailer", len(b)-off)
			}
			return out
		}
		out = append(out, e)
	}
}

func writeSample(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, err := range []error{
		w.Dir("/proc", 0o555),
		w.CharDev("/dev/console", 0o600, 5, 1),
		w.File("/bin/hello", 0o755, []byte("#!/bin/sh\necho hi\n")), // 19 bytes: needs padding
		w.File("etc/empty", 0o644, nil),
		w.Symlink("/sbin/init", "/bin/hello"),
		w.Dir("/proc", 0o555), // a directory again is harmless
		w.Close(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestWriterRoundTrip(t *testing.T) {
	got := parse(t, writeSample(t))
	type member struct {
		name           string
		mode, nlink    uint32
		rmajor, rminor uint32
		data           string
	}
	var members []member
	for _, e := range got {
		members = append(members, member{e.name, e.mode, e.nlink, e.rmajor, e.rminor, e.data})
	}
	want := []member{
		{"proc", 0o040555, 2, 0, 0, ""},
		{"dev", 0o040755, 2, 0, 0, ""}, // parent added before its child
		{"dev/console", 0o020600, 1, 5, 1, ""},
		{"bin", 0o040755, 2, 0, 0, ""},
		{"bin/hello", 0o100755, 1, 0, 0, "#!/bin/sh\necho hi\n"},
		{"etc", 0o040755, 2, 0, 0, ""},
		{"etc/empty", 0o100644, 1, 0, 0, ""},
		{"sbin", 0o040755, 2, 0, 0, ""},
		{"sbin/init", 0o120777, 1, 0, 0, "/bin/hello"},
	}
	if !reflect.DeepEqual(members, want) {
		t.Fatalf("archive members:\n got %v\nwant %v", members, want)
	}
	for _, e := range got {
		if e.dataOffset%4 != 0 {
			t.Errorf("%s: body at %d not 4-byte aligned", e.name, e.dataOffset)
		}
	}
}

func TestWriterIsReproducible(t *testing.T) {
	if a, b := writeSample(t), writeSample(t); !bytes.Equal(a, b) {
		t.Fatal("two identical archives differ")
	}
}

func TestWriterRejectsDuplicatesAndLateWrites(t *testing.T) {
	w := NewWriter(&bytes.Buffer{})
	if err := w.File("a", 0o644, []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := w.File("/a", 0o644, []byte("2")); err == nil || !strings.Contains(err.Error(), "added twice") {
		t.Fatalf("second /a: err = %v, want added twice", err)
	}
	if err := w.File("/", 0o644, nil); err == nil {
		t.Fatal("a file named / was accepted")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.File("b", 0o644, nil); err == nil {
		t.Fatal("write after Close succeeded")
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestWriterReportsWriteErrors(t *testing.T) {
	w := NewWriter(&failWriter{n: 2})
	err := w.File("bin/x", 0o755, []byte("data"))
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v, want disk full", err)
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close after a failed write succeeded")
	}
}

func TestCopyTree(t *testing.T) {
	src := t.TempDir()
	must(t, os.Chmod(src, 0o711))
	must(t, os.MkdirAll(filepath.Join(src, "sub", "deeper"), 0o750))
	must(t, os.WriteFile(filepath.Join(src, "sub", "deeper", "f"), []byte("x"), 0o600))
	must(t, os.Symlink("deeper/f", filepath.Join(src, "sub", "link")))
	var buf bytes.Buffer
	w := NewWriter(&buf)
	must(t, w.CopyTree("/tests/pkg", src))
	must(t, w.Close())
	var got []string
	for _, e := range parse(t, buf.Bytes()) {
		got = append(got, fmt.Sprintf("%s %o %q", e.name, e.mode, e.data))
	}
	want := []string{
		`tests 40755 ""`,
		`tests/pkg 40711 ""`,
		`tests/pkg/sub 40750 ""`,
		`tests/pkg/sub/deeper 40750 ""`,
		`tests/pkg/sub/deeper/f 100600 "x"`,
		`tests/pkg/sub/link 120777 "deeper/f"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CopyTree:\n got %q\nwant %q", got, want)
	}
}

// TestCpioReadsArchive checks the archive with GNU cpio, a reader that
// shares nothing with this package (scripts/setup test installs it).
func TestCpioReadsArchive(t *testing.T) {
	cpiotest.Need(t)
	archive := filepath.Join(t.TempDir(), "initrd.cpio")
	must(t, os.WriteFile(archive, writeSample(t), 0o644))

	list := cpiotest.Run(t, archive, "-it")
	want := "proc\ndev\ndev/console\nbin\nbin/hello\netc\netc/empty\nsbin\nsbin/init\n"
	if list != want {
		t.Errorf("cpio -it:\n%s\nwant:\n%s", list, want)
	}
	verbose := cpiotest.Run(t, archive, "-itv")
	for _, s := range []string{"crw-------", "-rwxr-xr-x", "sbin/init -> /bin/hello", "dr-xr-xr-x"} {
		if !strings.Contains(verbose, s) {
			t.Errorf("cpio -itv lacks %q:\n%s", s, verbose)
		}
	}
	if got := cpiotest.Run(t, archive, "-i", "--to-stdout", "bin/hello"); got != "#!/bin/sh\necho hi\n" {
		t.Errorf("cpio extracted bin/hello = %q", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
