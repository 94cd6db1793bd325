package stress

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"latencytest/internal/badinput"
	"latencytest/internal/child"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/shm"
	"github.com/jezek/xgb/xproto"
	"golang.org/x/sys/unix"
)

// x11Stressor is an X11 redraw load in the spirit of x11perf -scroll500
// and -shmput500: a window scrolled by one line per frame with CopyArea, a
// quarter of it redrawn with a (MIT-SHM when possible) PutImage and
// rectangles filled, with a round
// trip every few frames so that the work lands on the X server rather than
// queueing in the client. It uses $DISPLAY, or a private Xvfb when there is
// none (or with --xvfb).
type x11Stressor struct{}

func (x11Stressor) Name() string { return "x11" }
func (x11Stressor) Description() string {
	return "X11 redraws (CopyArea scroll, PutImage, fills) on $DISPLAY or a private Xvfb; frames/s"
}

type x11Load struct {
	display string
	xvfb    bool
	area    int
	sync    int
	flag    flagPrefix
}

const xvfbStartLimit = 10 * time.Second

func (x11Stressor) Flags(fs *flag.FlagSet, prefix string) Load {
	l := &x11Load{flag: flagPrefix(prefix)}
	fs.StringVar(&l.display, l.flag.def("display"), os.Getenv("DISPLAY"), "X display to draw on (default $DISPLAY; none: start Xvfb)")
	fs.BoolVar(&l.xvfb, l.flag.def("xvfb"), false, "start a private Xvfb even when there is a display")
	fs.IntVar(&l.area, l.flag.def("area"), 500, "side of the square window in pixels, as x11perf's 500")
	fs.IntVar(&l.sync, l.flag.def("sync-every"), 4, "frames between round trips to the server")
	return l
}

func (l *x11Load) Check() error {
	if l.area < 16 || l.area > 4096 {
		return badinput.Errorf("%s %d: want 16 to 4096 pixels", l.flag.name("area"), l.area)
	}
	if l.sync < 1 {
		return badinput.Errorf("%s %d: want 1 or more", l.flag.name("sync-every"), l.sync)
	}
	if l.display == "" || l.xvfb {
		if _, err := exec.LookPath("Xvfb"); err != nil {
			if l.xvfb {
				return badinput.Errorf("%s: no Xvfb found (Debian package xvfb)", l.flag.name("xvfb"))
			}
			return badinput.Errorf("no X server ($DISPLAY is not set) and no Xvfb to start one (Debian package xvfb)")
		}
	}
	return nil
}

func (l *x11Load) Run(ctx context.Context, m *Meter) (err error) {
	// xgb logs to stderr when there is no Xauthority; that is normal here.
	xgb.Logger = log.New(io.Discard, "", 0)
	display := l.display
	if display == "" || l.xvfb {
		x, err := startXvfb(ctx, m)
		if err != nil {
			return err
		}
		defer func() {
			if serr := x.stop(); err == nil {
				err = serr
			}
		}()
		display = x.display
		m.Set("xvfb", true)
	}
	m.Set("display", display)
	conn, err := dialX(display) // bounded: x11wire.go
	if err != nil {
		return fmt.Errorf("connect to X display %q: %w", display, err)
	}
	defer conn.Close()
	go func() { // nothing is asked for, but the queue must never fill
		for {
			ev, xerr := conn.WaitForEvent()
			if ev == nil && xerr == nil {
				return
			}
		}
	}()
	s, err := newScroller(conn, l.area)
	if err != nil {
		return err
	}
	defer s.close()
	m.Unit("frames", 1)
	m.Set("area", l.area)
	m.Set("mit_shm", s.shm != nil)
	m.Ready()
	for frame := 0; ctx.Err() == nil; frame++ {
		s.frame(frame)
		if frame%l.sync == l.sync-1 {
			if _, err := xproto.GetInputFocus(conn).Reply(); err != nil {
				if stoppedSoon(ctx) {
					return nil // our Xvfb got the group's stop signal first
				}
				return fmt.Errorf("X server %s: %w", display, err)
			}
			m.Add(int64(l.sync))
		}
	}
	return nil
}

// scroller draws the frames.
type scroller struct {
	conn   *xgb.Conn
	win    xproto.Window
	gc     xproto.Gcontext
	area   int
	depth  byte
	stripH int
	rects  []xproto.Rectangle

	// Images go through MIT-SHM when the server shares memory with us (as
	// x11perf -shmput does: the server copies, the client does not), else
	// in PutImage requests; two images, alternated.
	shm    *shmImages
	images [2][]byte
}

// shmImages are the two images in a SysV shared memory segment attached
// by the server.
type shmImages struct {
	seg  shm.Seg
	mem  []byte
	size int // bytes of one image
}

func newScroller(conn *xgb.Conn, area int) (*scroller, error) {
	setup := xproto.Setup(conn)
	screen := setup.DefaultScreen(conn)
	s := &scroller{conn: conn, area: area, depth: screen.RootDepth, rects: make([]xproto.Rectangle, 8)}
	bpp := 0
	for _, f := range setup.PixmapFormats {
		if f.Depth == screen.RootDepth {
			bpp = int(f.BitsPerPixel)
		}
	}
	if bpp < 8 || bpp%8 != 0 {
		return nil, fmt.Errorf("X server: root depth %d has %d bits per pixel; want whole bytes", screen.RootDepth, bpp)
	}
	row := area * bpp / 8
	if sh, err := newShmImages(conn, row*area/4); err == nil {
		s.shm, s.stripH = sh, area/4
	} else {
		// PutImage strips as tall as one request may carry.
		maxData := int(setup.MaximumRequestLength)*4 - 64
		s.stripH = min(area/4, maxData/row)
		if s.stripH < 1 {
			return nil, fmt.Errorf("X server: requests too small (%d bytes) for one row of %d pixels", maxData, area)
		}
		for i := range s.images {
			s.images[i] = make([]byte, row*s.stripH)
		}
	}
	for i := range 2 {
		img := s.image(i)
		for p := range img {
			img[p] = byte(p*(i+1) + p/row)
		}
	}

	var err error
	if s.win, err = xproto.NewWindowId(conn); err != nil {
		return nil, fmt.Errorf("X server: window id: %w", err)
	}
	if err := xproto.CreateWindowChecked(conn, screen.RootDepth, s.win, screen.Root, 0, 0, uint16(area), uint16(area), 0,
		xproto.WindowClassInputOutput, screen.RootVisual, xproto.CwBackPixel|xproto.CwEventMask,
		[]uint32{screen.BlackPixel, 0}).Check(); err != nil {
		s.close()
		return nil, fmt.Errorf("X server: create window: %w", err)
	}
	xproto.ChangeProperty(conn, xproto.PropModeReplace, s.win, xproto.AtomWmName, xproto.AtomString, 8,
		uint32(len("latencytest x11 stressor")), []byte("latencytest x11 stressor"))
	if s.gc, err = xproto.NewGcontextId(conn); err != nil {
		s.close()
		return nil, fmt.Errorf("X server: gc id: %w", err)
	}
	// No GraphicsExpose/NoExpose events: nobody would read them.
	if err := xproto.CreateGCChecked(conn, s.gc, xproto.Drawable(s.win), xproto.GcForeground|xproto.GcGraphicsExposures,
		[]uint32{screen.WhitePixel, 0}).Check(); err != nil {
		s.close()
		return nil, fmt.Errorf("X server: create gc: %w", err)
	}
	// Drawing on an unmapped window is clipped away: map it, and wait.
	if err := xproto.MapWindowChecked(conn, s.win).Check(); err != nil {
		s.close()
		return nil, fmt.Errorf("X server: map window: %w", err)
	}
	return s, nil
}

// newShmImages makes a segment for two images of size bytes and has the
// server attach it. The segment is marked for removal as soon as the
// server has attached it, so that it vanishes with the last detach, even
// if we are killed.
func newShmImages(conn *xgb.Conn, size int) (*shmImages, error) {
	if err := shm.Init(conn); err != nil {
		return nil, err
	}
	id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 2*size, unix.IPC_CREAT|0o600)
	if err != nil {
		return nil, err
	}
	defer unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	mem, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		return nil, err
	}
	seg, err := shm.NewSegId(conn)
	if err == nil {
		err = shm.AttachChecked(conn, seg, uint32(id), true).Check()
	}
	if err != nil {
		_ = unix.SysvShmDetach(mem)
		return nil, err // a remote server cannot share our memory
	}
	return &shmImages{seg: seg, mem: mem, size: size}, nil
}

// image is the memory of image i (0 or 1).
func (s *scroller) image(i int) []byte {
	if s.shm != nil {
		return s.shm.mem[i*s.shm.size : (i+1)*s.shm.size]
	}
	return s.images[i]
}

// close detaches the shared images; the window goes with the connection.
func (s *scroller) close() {
	if s.shm != nil {
		shm.Detach(s.conn, s.shm.seg)
		_ = unix.SysvShmDetach(s.shm.mem)
		s.shm = nil
	}
}

// frame scrolls the window up one line, puts a strip of image and fills
// a few rectangles.
func (s *scroller) frame(n int) {
	a := s.area
	d := xproto.Drawable(s.win)
	xproto.CopyArea(s.conn, d, d, s.gc, 0, 1, 0, 0, uint16(a), uint16(a-1))
	y := int16((n * s.stripH / 4) % max(1, a-s.stripH+1))
	if s.shm != nil {
		shm.PutImage(s.conn, d, s.gc, uint16(a), uint16(s.stripH), 0, 0, uint16(a), uint16(s.stripH), 0, y,
			s.depth, xproto.ImageFormatZPixmap, 0, s.shm.seg, uint32((n%2)*s.shm.size))
	} else {
		xproto.PutImage(s.conn, xproto.ImageFormatZPixmap, d, s.gc, uint16(a), uint16(s.stripH), 0, y, 0, s.depth, s.images[n%2])
	}
	// Multiplied in uint32: the constant overflows int on 32-bit targets.
	xproto.ChangeGC(s.conn, s.gc, xproto.GcForeground, []uint32{uint32(n) * 2654435761})
	side := a / 8
	for i := range s.rects {
		s.rects[i] = xproto.Rectangle{X: int16((n*7 + i*side) % (a - side + 1)), Y: int16((n*3 + i*side) % (a - side + 1)), Width: uint16(side), Height: uint16(side)}
	}
	xproto.PolyFillRectangle(s.conn, d, s.gc, s.rects)
}

// xvfb is a private X server.
type xvfb struct {
	cmd     *exec.Cmd
	held    *child.Held
	display string
	files   []string
}

// startXvfb starts Xvfb on a free display (it picks one itself with
// -displayfd) and records the lock file and socket it makes.
func startXvfb(ctx context.Context, m *Meter) (*xvfb, error) {
	path, err := exec.LookPath("Xvfb")
	if err != nil {
		return nil, badinput.Errorf("no Xvfb found (Debian package xvfb)")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	cmd := exec.Command(path, "-displayfd", "3", "-screen", "0", "1024x768x24", "-nolisten", "tcp", "-noreset")
	cmd.ExtraFiles = []*os.File{pw}
	errTail := child.NewTail(2048)
	cmd.Stderr = errTail
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	cmd.WaitDelay = time.Second
	x := &xvfb{cmd: cmd}
	if x.held, err = child.StartHeld(cmd); err != nil {
		pw.Close()
		return nil, fmt.Errorf("start Xvfb: %w", err)
	}
	pw.Close()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(pr).ReadString('\n')
		line <- s
	}()
	var num string
	select {
	case s := <-line:
		num = strings.TrimSpace(s)
	case <-time.After(xvfbStartLimit):
	case <-ctx.Done():
	}
	if _, err := strconv.Atoi(num); err != nil {
		_ = x.stop()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("Xvfb did not start: %s", errTail.LastLine())
	}
	x.display = ":" + num
	x.files = []string{"/tmp/.X" + num + "-lock", "/tmp/.X11-unix/X" + num}
	return x, nil
}

// stop ends Xvfb, which removes its lock file and socket on SIGTERM; if
// it has to be killed, we remove them.
func (x *xvfb) stop() error {
	_ = x.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-x.held.Exited():
	case <-time.After(5 * time.Second):
		_ = x.cmd.Process.Kill()
	}
	x.held.Reap()
	var errs []error
	for _, f := range x.files {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
