package stress

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// xSetup is a connection setup reply with one screen of one depth, whose
// depth claims visuals visuals (one is present).
func xSetup(visuals uint16) []byte { return xSetupOf(visuals, 1) }

// xSetupOf is xSetup with present visuals present.
func xSetupOf(visuals uint16, present int) []byte {
	data := make([]byte, 32+40+8+24*present)            // fixed fields after the header, a screen, a depth, the visuals
	binary.LittleEndian.PutUint32(data[4:], 0x00200000) // resource id base
	binary.LittleEndian.PutUint32(data[8:], 0x001fffff) // resource id mask
	binary.LittleEndian.PutUint16(data[18:], 0xffff)    // maximum request length
	data[20] = 1                                        // screens
	screen := data[32:]
	binary.LittleEndian.PutUint16(screen[20:], 1024) // width
	binary.LittleEndian.PutUint16(screen[22:], 768)  // height
	screen[38], screen[39] = 24, 1                   // root depth, depths
	depth := screen[40:]
	depth[0] = 24
	binary.LittleEndian.PutUint16(depth[2:], visuals)
	head := []byte{1, 0, 11, 0, 0, 0, 0, 0}
	binary.LittleEndian.PutUint16(head[6:], uint16(len(data)/4))
	return append(head, data...)
}

// fakeX is a server on the other end of a pipe: it reads the connection
// request, sends setup, then for each request it reads (4 bytes: the
// requests here have no body) sends the next of replies.
func fakeX(t *testing.T, setup []byte, replies ...[]byte) net.Conn {
	client, server := net.Pipe()
	t.Cleanup(func() { client.Close(); server.Close() })
	go func() {
		req := make([]byte, 12)
		if _, err := io.ReadFull(server, req); err != nil {
			return
		}
		pad := func(n uint16) int { return (int(n) + 3) / 4 * 4 }
		io.CopyN(io.Discard, server, int64(pad(binary.LittleEndian.Uint16(req[6:]))+pad(binary.LittleEndian.Uint16(req[8:]))))
		if _, err := server.Write(setup); err != nil {
			return
		}
		for _, r := range replies {
			if _, err := io.ReadFull(server, make([]byte, 4)); err != nil {
				return
			}
			server.Write(r)
		}
		io.Copy(io.Discard, server)
	}()
	return client
}

// reply is a GetInputFocus reply to request 1 claiming extra bytes after
// its 32 (none present).
func reply(extra uint32) []byte {
	r := make([]byte, 32)
	r[0] = 1
	binary.LittleEndian.PutUint16(r[2:], 1)
	binary.LittleEndian.PutUint32(r[4:], extra/4)
	return r
}

// allocatedBy is what f allocated, in bytes, in the whole process.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Through x11Wire a server that follows the protocol is read as xgb reads
// it: the setup's screen, and a reply.
func TestX11WireFollowsProtocol(t *testing.T) {
	conn, err := xgb.NewConnNet(newX11Wire(fakeX(t, xSetup(1), reply(0))))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if s := xproto.Setup(conn); len(s.Roots) != 1 || s.Roots[0].WidthInPixels != 1024 || len(s.Roots[0].AllowedDepths[0].Visuals) != 1 {
		t.Fatalf("setup read as %+v", s)
	}
	if _, err := xproto.GetInputFocus(conn).Reply(); err != nil {
		t.Fatal(err)
	}
	// A setup larger than a read buffer (3000 visuals, 72 KB) is whole.
	big, err := xgb.NewConnNet(newX11Wire(fakeX(t, xSetupOf(3000, 3000))))
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	if s := xproto.Setup(big); len(s.Roots[0].AllowedDepths[0].Visuals) != 3000 {
		t.Errorf("%d visuals read", len(s.Roots[0].AllowedDepths[0].Visuals))
	}
}

// A hostile server cannot make the x11 load allocate what it claims: a
// setup whose depth claims 65535 visuals (xproto.Setup would allocate
// them, then panic reading past the setup) is refused, and so is a reply
// claiming 4 GB (xgb would allocate it whole before reading): each costs
// well under 16 MB, and the connection fails with errX11Bounds.
func TestX11WireHostileServer(t *testing.T) {
	var err error
	a := allocatedBy(func() { _, err = xgb.NewConnNet(newX11Wire(fakeX(t, xSetup(65535)))) })
	if !errors.Is(err, errX11Bounds) || a > 16<<20 {
		t.Errorf("65535 visuals claimed: %v, %d bytes allocated; want refused", err, a)
	}

	a = allocatedBy(func() {
		conn, cerr := xgb.NewConnNet(newX11Wire(fakeX(t, xSetup(1), reply(0xfffffffc))))
		if cerr != nil {
			err = cerr
			return
		}
		defer conn.Close()
		done := make(chan error, 1)
		go func() { _, err := xproto.GetInputFocus(conn).Reply(); done <- err }()
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			err = errors.New("no answer within 5 s")
		}
	})
	if err == nil || a > 16<<20 {
		t.Errorf("a reply of 4 GB: %v, %d bytes allocated; want an error and little memory", err, a)
	}
}

// checkSetup accepts exactly the setups whose counts fit.
func TestCheckSetup(t *testing.T) {
	if err := checkSetup(xSetup(1)); err != nil {
		t.Errorf("a setup with its one visual: %v", err)
	}
	for _, b := range [][]byte{xSetup(2), xSetup(1)[:50], xSetup(1)[:100]} {
		if err := checkSetup(b); !errors.Is(err, errX11Bounds) {
			t.Errorf("%d bytes: %v", len(b), err)
		}
	}
}

// Displays are found where xgb finds them, and the cookie is the one
// filed for this host and the display's number.
func TestXDisplayAndCookie(t *testing.T) {
	for display, want := range map[string][2]string{
		":1":              {"unix", "/tmp/.X11-unix/X1"},
		":1.0":            {"unix", "/tmp/.X11-unix/X1"},
		"unix:2":          {"unix", "/tmp/.X11-unix/X2"},
		"host:3.1":        {"tcp", "host:6003"},
		"tcp/host:0":      {"tcp", "host:6000"},
		"/tmp/launch-x:0": {"unix", "/tmp/launch-x:0"},
	} {
		network, addr, _, _, err := xDisplayAddr(display)
		if err != nil || network != want[0] || addr != want[1] {
			t.Errorf("%s: %s %s %v; want %v", display, network, addr, err, want)
		}
	}
	for _, bad := range []string{"", "nocolon", ":x", ":-1"} {
		if _, _, _, _, err := xDisplayAddr(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	host, _ := os.Hostname()
	var b []byte
	entry := func(family uint16, addr, disp string, cookie byte) {
		b = binary.BigEndian.AppendUint16(b, family)
		for _, f := range []string{addr, disp, "MIT-MAGIC-COOKIE-1", strings.Repeat(string(rune(cookie)), 16)} {
			b = binary.BigEndian.AppendUint16(b, uint16(len(f)))
			b = append(b, f...)
		}
	}
	entry(256, "otherhost", "5", 'a')
	entry(256, host, "4", 'b')
	entry(256, host, "5", 'c')
	path := filepath.Join(t.TempDir(), "xauth")
	os.WriteFile(path, b, 0o600)
	t.Setenv("XAUTHORITY", path)
	if got := xAuthCookie("", "5"); got != strings.Repeat("63", 16) {
		t.Errorf("cookie of :5 %q, want c×16", got)
	}
	if got := xAuthCookie("", "7"); got != "" {
		t.Errorf("cookie of :7 %q, want none", got)
	}
}
