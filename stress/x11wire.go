package stress

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/jezek/xgb"
)

// What the x11 stressor reads from an X server is bounded here, below
// xgb, which allocates whatever a length field says: a reply's length
// (up to 16 GB) and, in the setup, the counts of screens, depths and
// visuals that xproto.Setup allocates before it reads them. A hostile or
// broken server (DISPLAY can name any host) could otherwise make the
// stressor allocate gigabytes, or panic on a setup shorter than its
// counts. x11Wire sees the stream as xgb frames it and refuses, as a read
// error, a reply longer than maxReply or a setup whose counts do not fit
// in its bytes.

// maxReply bounds one reply: the stressor asks for nothing larger than a
// few hundred bytes (GetInputFocus, QueryExtension, the MIT-SHM version).
const maxReply = 1 << 20

// errX11Bounds is the read error for what x11Wire refuses.
var errX11Bounds = errors.New("X server sent more than the x11 load reads")

// x11Wire is a connection to an X server whose reads stop at what the x11
// load accepts. Writes pass through.
type x11Wire struct {
	net.Conn
	r         *bufio.Reader
	setupDone bool
	left      int // bytes of the current setup reply, reply or event still to deliver
}

func newX11Wire(c net.Conn) *x11Wire {
	// Room for the largest setup (a 16-bit count of 4 bytes) to be
	// checked whole before xgb reads it.
	return &x11Wire{Conn: c, r: bufio.NewReaderSize(c, 8+4*0xffff)}
}

// Read delivers the stream packet by packet, looking at each header
// before it passes any of it on.
func (w *x11Wire) Read(p []byte) (int, error) {
	if w.left == 0 {
		n, err := w.next()
		if err != nil {
			return 0, err
		}
		w.left = n
	}
	n, err := w.r.Read(p[:min(len(p), w.left)])
	w.left -= n
	return n, err
}

// next checks the packet that begins the unread stream and returns its
// length.
func (w *x11Wire) next() (int, error) {
	if !w.setupDone {
		head, err := w.r.Peek(8)
		if err != nil {
			return 0, err
		}
		n := 8 + 4*int(binary.LittleEndian.Uint16(head[6:])) // at most 256 KB: a 16-bit count of 4 bytes
		b, err := w.r.Peek(n)
		if err != nil {
			return 0, err
		}
		if head[0] == 1 { // success: the setup xproto.Setup will read
			if err := checkSetup(b); err != nil {
				return 0, err
			}
		}
		w.setupDone = true
		return n, nil
	}
	head, err := w.r.Peek(32)
	if err != nil {
		return 0, err
	}
	if head[0] != 1 { // an error or an event: 32 bytes, as xgb reads them
		return 32, nil
	}
	extra := 4 * uint64(binary.LittleEndian.Uint32(head[4:]))
	if extra > maxReply {
		return 0, fmt.Errorf("%w: a reply of %d bytes (at most %d)", errX11Bounds, extra, maxReply)
	}
	return 32 + int(extra), nil
}

// checkSetup checks that the counts of a successful connection setup
// (X11 protocol, "Connection Setup", little-endian as xgb asks) fit in
// its bytes: each screen, depth and visual xproto.Setup makes is there.
func checkSetup(b []byte) error {
	bad := func(what string) error {
		return fmt.Errorf("%w: a setup whose %s do not fit in its %d bytes", errX11Bounds, what, len(b))
	}
	if len(b) < 40 {
		return bad("fixed fields")
	}
	vendor := int(binary.LittleEndian.Uint16(b[24:]))
	roots, formats := int(b[28]), int(b[29])
	off := 40 + (vendor+3)/4*4 + 8*formats
	for range roots {
		if off+40 > len(b) {
			return bad("screens")
		}
		depths := int(b[off+39])
		off += 40
		for range depths {
			if off+8 > len(b) {
				return bad("depths")
			}
			off += 8 + 24*int(binary.LittleEndian.Uint16(b[off+2:]))
			if off > len(b) {
				return bad("visuals")
			}
		}
	}
	if off > len(b) {
		return bad("formats")
	}
	return nil
}

// dialX connects to display as xgb.NewConnDisplay does (":N", "HOST:N",
// "PROTOCOL/HOST:N", "/PATH:N", with ".SCREEN"), with the MIT cookie of
// the X authority file if it has one for the display, through an
// x11Wire.
func dialX(display string) (*xgb.Conn, error) {
	network, addr, host, num, err := xDisplayAddr(display)
	if err != nil {
		return nil, err
	}
	c, err := net.Dial(network, addr)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to %s: %w", display, err)
	}
	w := newX11Wire(c)
	if cookie := xAuthCookie(host, num); cookie != "" {
		return xgb.NewConnNetWithCookieHex(w, cookie)
	}
	return xgb.NewConnNet(w)
}

// xDisplayAddr is where display's server listens, and the host and
// display number its authority entry is filed under.
func xDisplayAddr(display string) (network, addr, host, num string, err error) {
	colon := strings.LastIndex(display, ":")
	if colon < 0 {
		return "", "", "", "", fmt.Errorf("bad display string %q", display)
	}
	num, _, _ = strings.Cut(display[colon+1:], ".")
	if n, err := strconv.Atoi(num); err != nil || n < 0 {
		return "", "", "", "", fmt.Errorf("bad display string %q", display)
	}
	if display[0] == '/' {
		return "unix", display[:colon] + ":" + num, "", num, nil
	}
	protocol, host := "", display[:colon]
	if i := strings.LastIndex(host, "/"); i >= 0 {
		protocol, host = host[:i], host[i+1:]
	}
	if host == "" || host == "unix" {
		return "unix", "/tmp/.X11-unix/X" + num, "", num, nil
	}
	if protocol == "" {
		protocol = "tcp"
	}
	port, _ := strconv.Atoi(num)
	return protocol, net.JoinHostPort(host, strconv.Itoa(6000+port)), host, num, nil
}

// xAuthCookie is the MIT-MAGIC-COOKIE-1 of display num on host ("" and
// "localhost": this machine) in $XAUTHORITY or ~/.Xauthority, hex
// encoded; "" when there is none (a server without access control, as
// the load's own Xvfb, needs none).
func xAuthCookie(host, num string) string {
	if host == "" || host == "localhost" {
		host, _ = os.Hostname()
	}
	name := os.Getenv("XAUTHORITY")
	if name == "" {
		home := os.Getenv("HOME")
		if home == "" {
			return ""
		}
		name = home + "/.Xauthority"
	}
	f, err := os.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	r := bufio.NewReader(io.LimitReader(f, 1<<20))
	field := func() (string, bool) {
		var n uint16
		if binary.Read(r, binary.BigEndian, &n) != nil {
			return "", false
		}
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return string(b), err == nil
	}
	const familyLocal, familyWild = 256, 65535
	for {
		var family uint16
		if binary.Read(r, binary.BigEndian, &family) != nil {
			return ""
		}
		addr, ok1 := field()
		disp, ok2 := field()
		auth, ok3 := field()
		data, ok4 := field()
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return ""
		}
		if (family == familyWild || family == familyLocal && addr == host) && (disp == "" || disp == num) &&
			auth == "MIT-MAGIC-COOKIE-1" && len(data) == 16 {
			return hex.EncodeToString([]byte(data))
		}
	}
}
