package main

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"latencytest/audio"
	"latencytest/rundata"
	"latencytest/runner"
)

// The metrics page of a measurement with --loopback (the monitor's, as
// --listen serves it) shows the round trip and the glitches by kind, with
// their HELP and TYPE, as the runner tells them (Config.OnRoundTrip,
// OnGlitch: runner's TestHearingIncremental for what it tells); Prometheus's
// linter accepts the page; without --loopback they are not there.
func TestLoopbackMetricsPage(t *testing.T) {
	page := func(loopback bool, feed func(cfg *runner.Config)) string {
		t.Helper()
		cfg := runner.Config{Driver: "alsa", Audio: audio.Config{Loopback: loopback, PeriodFrames: 256, Rate: 48000}}
		var stderr bytes.Buffer
		_, stop, err := (&metricsFlags{listen: "127.0.0.1:0"}).start(&cfg, &stderr)
		if err != nil {
			t.Fatal(err)
		}
		defer stop(true)
		if loopback != (cfg.OnRoundTrip != nil && cfg.OnGlitch != nil) {
			t.Fatalf("loopback %v: the round trip and the glitches hooked: %v, %v", loopback, cfg.OnRoundTrip != nil, cfg.OnGlitch != nil)
		}
		cfg.OnSample(&rundata.Sample{Due: 1e9, Woke: 1e9 + 20e3}) // the address is said at the first period
		addr := regexp.MustCompile(`metrics: (http://\S+/metrics)`).FindStringSubmatch(stderr.String())
		if addr == nil {
			t.Fatalf("no address said: %q", stderr.String())
		}
		feed(&cfg)
		resp, err := http.Get(addr[1])
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		check := exec.Command("promtool", "check", "metrics")
		check.Stdin = bytes.NewReader(b)
		if out, err := check.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
		return string(b)
	}
	got := page(true, func(cfg *runner.Config) {
		cfg.OnRoundTrip(0.0275)
		cfg.OnRoundTrip(0.02756)
		for _, k := range []string{"alone", "xrun", "alone"} {
			cfg.OnGlitch(k)
		}
	})
	for _, want := range []string{
		"# HELP latencytest_round_trip_seconds ",
		"# TYPE latencytest_round_trip_seconds gauge",
		"# HELP latencytest_glitches_total ",
		"# TYPE latencytest_glitches_total counter",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in the page", want)
		}
	}
	for _, re := range []string{
		`(?m)^latencytest_round_trip_seconds\{[^}]*driver="alsa"[^}]*\} 0\.02756$`,
		`(?m)^latencytest_glitches_total\{[^}]*kind="alone"[^}]*\} 2$`,
		`(?m)^latencytest_glitches_total\{[^}]*kind="xrun"[^}]*\} 1$`,
		`(?m)^latencytest_glitches_total\{[^}]*kind="pointer_jump"[^}]*\} 0$`,
	} {
		if !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("no line matching %s in the page:\n%s", re, got)
		}
	}
	if got := page(false, func(*runner.Config) {}); strings.Contains(got, "round_trip") || strings.Contains(got, "glitches") {
		t.Errorf("without --loopback, the page has the loopback's series")
	}
}
