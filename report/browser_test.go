package report

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"latencytest/report/synth"
)

// chromium finds the browser, failing under CI (where scripts/setup test
// installs it) and skipping elsewhere.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found; scripts/setup test installs it (Debian package chromium)")
	}
	t.Skip("chromium not found; install it with scripts/setup test (Debian package chromium)")
	return ""
}

// runChromium runs headless Chromium with its own profile and HOME, in a
// process group of its own that is killed afterwards, so no renderer or
// zygote outlives the test.
func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars",
		"--user-data-dir=" + filepath.Join(home, "profile")}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // stray helpers, if any
	}
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, lastLines(stderr.String(), 20))
	}
	return stdout.Bytes()
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// probeScript measures, once the page has loaded, every figure's rendered
// size and the page's, and writes the result into the DOM for --dump-dom.
// It goes into a copy of the page only: the report itself has no script.
const probeScript = `<script>
window.addEventListener('load', function () {
  var figs = document.querySelectorAll('svg, img, canvas'), bad = [];
  figs.forEach(function (e, i) {
    var r = e.getBoundingClientRect();
    if (!(r.width >= 100 && r.height >= 50)) bad.push(i + ':' + e.tagName + ':' + r.width + 'x' + r.height);
    if (e.tagName === 'IMG' && !(e.complete && e.naturalWidth > 0)) bad.push(i + ':img-not-loaded');
  });
  var texts = document.querySelectorAll('svg text').length;
  var p = document.createElement('pre');
  p.id = 'probe';
  p.textContent = 'PROBE figures=' + figs.length + ' svgtext=' + texts + ' height=' + document.documentElement.scrollHeight +
    ' chars=' + document.body.innerText.length + ' bad=[' + bad.join(',') + ']';
  document.body.appendChild(p);
});
</script>`

var probeRE = regexp.MustCompile(`PROBE figures=(\d+) svgtext=(\d+) height=(\d+) chars=(\d+) bad=\[([^\]]*)\]`)

// probe loads page in Chromium with the probe and returns its findings.
func probe(t *testing.T, bin, page string) (figures, svgText, height, chars int, bad string) {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.LastIndex(s, "</body>")
	if i < 0 {
		t.Fatalf("%s has no </body>", page)
	}
	probed := filepath.Join(filepath.Dir(page), "probe-"+filepath.Base(page))
	if err := os.WriteFile(probed, []byte(s[:i]+probeScript+s[i:]), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(probed)
	out := runChromium(t, bin, "--virtual-time-budget=10000", "--window-size=1280,900", "--dump-dom", "file://"+probed)
	m := probeRE.FindSubmatch(out)
	if m == nil {
		t.Fatalf("the probe did not report (page not loaded?); DOM tail: %s", lastLines(string(out), 5))
	}
	n := func(i int) int { v, _ := strconv.Atoi(string(m[i])); return v }
	return n(1), n(2), n(3), n(4), string(m[5])
}

func TestBrowser(t *testing.T) {
	bin := chromium(t)
	c := synth.Default()
	c.PhaseLength = 10 * time.Second
	c.Phases[1].StallProb = 5e-3
	c.Phases = append(c.Phases, synth.Phase{Name: "disk-write", Skipped: "no writable temp dir"})
	dir, r := writeRun(t, c)
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(dir, IndexFile)

	// Every figure is laid out with a real size, and there is a page.
	figures, svgText, height, chars, bad := probe(t, bin, index)
	ran := 0
	for _, p := range r.Phases {
		if p.Skipped == "" {
			ran++
		}
	}
	if want := 1 + 3*ran; figures != want {
		t.Errorf("%d figures in the browser, want %d (overview + 3 per phase)", figures, want)
	}
	if bad != "" {
		t.Errorf("figures without a size: %s", bad)
	}
	if svgText < 20*figures/2 || height < 2000 || chars < 2000 {
		t.Errorf("page looks empty: %d SVG texts, %d px tall, %d characters", svgText, height, chars)
	}

	// A screenshot of the top of the page is not blank: much of it is not
	// the background, in many colours (text, tables, graph lines).
	shot := filepath.Join(t.TempDir(), "shot.png")
	runChromium(t, bin, "--window-size=1280,1800", "--screenshot="+shot, "file://"+index)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	fg, colours := inkStats(img)
	if fg < 0.03 || colours < 50 {
		t.Errorf("screenshot looks blank: %.1f %% non-background pixels, %d colours", 100*fg, colours)
	}
	if keep := os.Getenv("LATENCYTEST_SCREENSHOT"); keep != "" {
		b, _ := os.ReadFile(shot)
		if err := os.WriteFile(keep, b, 0o644); err != nil {
			t.Error(err)
		}
	}

	// The compare page, too.
	out := filepath.Join(t.TempDir(), "compare.html")
	if err := compareInputs([]Input{{Path: dir}, {Path: filepath.Join("testdata", "cyclictest", "idle.json"), Phase: "idle"}}, out); err != nil {
		t.Fatal(err)
	}
	figures, _, _, _, bad = probe(t, bin, out)
	if figures != ran || bad != "" {
		t.Errorf("compare: %d figures (want %d), bad %q", figures, ran, bad)
	}
}

// inkStats returns the share of pixels unlike the top-left (background)
// one and the number of distinct colours.
func inkStats(img image.Image) (float64, int) {
	b := img.Bounds()
	br, bg, bb, _ := img.At(b.Min.X, b.Min.Y).RGBA()
	seen := map[uint32]bool{}
	ink, total := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			total++
			if r != br || g != bg || bl != bb {
				ink++
			}
			seen[(r>>8)<<16|(g>>8)<<8|bl>>8] = true
		}
	}
	return float64(ink) / float64(total), len(seen)
}
