//go:build linux

package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	c, err := readConfig(filepath.Join(dir, "missing.json"))
	must(t, err)
	if c.timeout != defaultTimeout || c.Run != "" {
		t.Errorf("no file: %+v, want the defaults", c)
	}
	p := filepath.Join(dir, "vmtest.json")
	must(t, os.WriteFile(p, []byte(`{"run": "TestX/a\\d", "timeout": "90s", "tests": {"a.test": "^(TestA)$"}, "env": {"VMTEST_NO_X": "why"}}`), 0o644))
	c, err = readConfig(p)
	must(t, err)
	if c.Run != `TestX/a\d` || c.timeout != 90*time.Second || c.Tests["a.test"] != "^(TestA)$" || c.Env["VMTEST_NO_X"] != "why" {
		t.Errorf("got %+v", c)
	}
	for _, bad := range []string{`{"timeout": "soon"}`, `{"timeout": "-1s"}`, `{"run": "("}`, `{"bench": "a("}`, `{"tests": {"a.test": "["}}`, `{"env": {"PATH": "/x"}}`, `{"env": {"VMTEST_a": "b"}}`, `{`} {
		must(t, os.WriteFile(p, []byte(bad), 0o644))
		if _, err := readConfig(p); err == nil {
			t.Errorf("config %s accepted", bad)
		}
	}
}

func TestTestArgs(t *testing.T) {
	cfg := config{timeout: time.Minute, Tests: map[string]string{"a.test": "^(TestA)$"}}
	if got, want := testArgs(cfg, "a.test"), []string{"-test.v", "-test.timeout=1m0s", "-test.run=^(TestA)$"}; !reflect.DeepEqual(got, want) {
		t.Errorf("default: %q, want %q", got, want)
	}
	if got, want := testArgs(cfg, "b.test"), []string{"-test.v", "-test.timeout=1m0s"}; !reflect.DeepEqual(got, want) {
		t.Errorf("binary without vm test list: %q, want %q", got, want)
	}
	cfg.Run = "TestB"
	if got, want := testArgs(cfg, "a.test"), []string{"-test.v", "-test.timeout=1m0s", "-test.run=TestB"}; !reflect.DeepEqual(got, want) {
		t.Errorf("-run given: %q, want %q", got, want)
	}
	cfg.Bench = "BenchmarkX"
	if got, want := testArgs(cfg, "a.test"), []string{"-test.v", "-test.timeout=1m0s", "-test.run=^$", "-test.bench=BenchmarkX", "-test.benchtime=1x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("-bench given: %q, want %q", got, want)
	}
}

func TestLineScanner(t *testing.T) {
	var l lineScanner
	out := "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n    --- FAIL: TestB/sub (0.01s)\n--- FA"
	// Written in pieces that split lines, as a pipe delivers them.
	for _, piece := range []string{out[:10], out[10:50], out[50:]} {
		l.Write([]byte(piece))
	}
	l.Write([]byte("IL: TestB (0.01s)\nok"))
	l.flush()
	if !reflect.DeepEqual(l.failed, []string{"TestB/sub", "TestB"}) || l.passed != 1 {
		t.Fatalf("failed %q passed %d, want [TestB/sub TestB] and 1", l.failed, l.passed)
	}
	// A benchmark that ran counts as passed; its name alone does not.
	var b lineScanner
	b.Write([]byte("BenchmarkVMAccess\n    x_test.go:1: log\nBenchmarkVMAccess-2   \t       1\t70026525738 ns/op\t        72.00 aplay-xruns\nPASS\n"))
	if b.passed != 1 || len(b.failed) != 0 {
		t.Errorf("benchmark output: passed %d failed %q, want 1 and none", b.passed, b.failed)
	}
}

func TestResultLine(t *testing.T) {
	if got := resultLine(nil); got != "\nVMTEST RESULT: PASS\n" {
		t.Errorf("pass: %q", got)
	}
	if got := resultLine([]string{"a.test: TestX", "b.test: timed out"}); got != "\nVMTEST RESULT: FAIL (a.test: TestX; b.test: timed out)\n" {
		t.Errorf("fail: %q", got)
	}
}

func TestPCMNodes(t *testing.T) {
	dir := t.TempDir()
	proc, dev := filepath.Join(dir, "asound"), filepath.Join(dir, "snd")
	for _, d := range []string{"card0/pcm0p", "card0/pcm0c", "card1/pcm1p", "card1/pcm10c", "card1/oss"} {
		must(t, os.MkdirAll(filepath.Join(proc, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(proc, "cards"), []byte(" 0 [Dummy ]: Dummy - Dummy\n"), 0o644))
	must(t, os.MkdirAll(dev, 0o755))
	for _, n := range []string{"pcmC0D0p", "pcmC1D10c"} {
		must(t, os.WriteFile(filepath.Join(dev, n), nil, 0o644))
	}
	nodes, missing, err := pcmNodes(proc, dev)
	must(t, err)
	rel := func(ps []string) (r []string) {
		for _, p := range ps {
			r = append(r, filepath.Base(p))
		}
		return r
	}
	if want := []string{"pcmC0D0c", "pcmC0D0p", "pcmC1D10c", "pcmC1D1p"}; !reflect.DeepEqual(rel(nodes), want) {
		t.Errorf("nodes %q, want %q", rel(nodes), want)
	}
	if want := []string{"pcmC0D0c", "pcmC1D1p"}; !reflect.DeepEqual(rel(missing), want) {
		t.Errorf("missing %q, want %q", rel(missing), want)
	}
	var out bytes.Buffer
	err = waitPCMNodes(&out, proc, dev, 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "pcmC0D0c") {
		t.Errorf("waitPCMNodes with nodes missing: %v", err)
	}
	for _, n := range []string{"pcmC0D0c", "pcmC1D1p"} {
		must(t, os.WriteFile(filepath.Join(dev, n), nil, 0o644))
	}
	must(t, waitPCMNodes(&out, proc, dev, 100*time.Millisecond))
	if err := waitPCMNodes(&out, filepath.Join(dir, "none"), dev, 100*time.Millisecond); err == nil || !strings.Contains(err.Error(), "no PCM device") {
		t.Errorf("waitPCMNodes without cards: %v", err)
	}
}

// fakeTest writes an executable shell script standing in for a test
// binary.
func fakeTest(t *testing.T, dir, name, script string) {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script+"\n"), 0o755))
}

func TestRunTests(t *testing.T) {
	dir := t.TempDir()
	fakeTest(t, dir, "a.test", `echo "args: $*"; pwd; echo '--- PASS: TestA (0.00s)'`)
	must(t, os.Mkdir(filepath.Join(dir, "a"), 0o755)) // a.test runs here
	fakeTest(t, dir, "b.test", `echo '--- FAIL: TestB (0.00s)'; echo '--- FAIL: TestC (0.00s)'; exit 1`)
	fakeTest(t, dir, "c.test", `echo 'panic: boom' >&2; exit 2`)
	fakeTest(t, dir, "d.test", `sleep 60 & wait`)
	fakeTest(t, dir, "e.test", `echo 'panic: test timed out after 1m0s'; exit 2`)
	cfg := config{timeout: 200 * time.Millisecond, grace: 100 * time.Millisecond, Tests: map[string]string{"a.test": "^(TestA)$"}}
	var out bytes.Buffer
	start := time.Now()
	failures := runTests(&out, dir, cfg, nil)
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("runTests took %v: the hanging d.test was not killed", took)
	}
	want := []string{"b.test: TestB, TestC", "c.test: panic: boom", "d.test: timed out", "e.test: panic: test timed out after 1m0s"}
	if !reflect.DeepEqual(failures, want) {
		t.Errorf("failures %q, want %q\n%s", failures, want, out.String())
	}
	for _, s := range []string{
		"args: -test.v -test.timeout=200ms -test.run=^(TestA)$\n" + filepath.Join(dir, "a") + "\n",
		"panic: boom", // stderr is streamed too
		"5 test binaries: 1 tests passed, 2 failed, 0 skipped; 4 binaries failed",
	} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
	}
}

func TestRunTestsNothingRan(t *testing.T) {
	dir := t.TempDir()
	fakeTest(t, dir, "a.test", `echo 'testing: warning: no tests to run'; echo PASS`)
	var out bytes.Buffer
	f := runTests(&out, dir, config{timeout: time.Minute, grace: time.Second, Run: "TestTypo"}, nil)
	if len(f) != 1 || f[0] != `no test ran (-run "TestTypo")` {
		t.Errorf("failures %q, want [no test ran (-run \"TestTypo\")]", f)
	}
	fakeTest(t, dir, "a.test", `echo '--- SKIP: TestA (0.00s)'`)
	if f := runTests(&out, dir, config{timeout: time.Minute, grace: time.Second}, nil); f != nil {
		t.Errorf("a skipped test: failures %q, want none (it ran)", f)
	}
}

func TestRunTestsWithoutBinaries(t *testing.T) {
	var out bytes.Buffer
	if f := runTests(&out, t.TempDir(), config{timeout: time.Second}, nil); len(f) != 1 || !strings.Contains(f[0], "no test binaries") {
		t.Errorf("failures %q, want one saying there are no test binaries", f)
	}
}

func TestSafeRunTurnsPanicIntoFailure(t *testing.T) {
	var out bytes.Buffer
	f := safeRun(&out, func(io.Writer) []string { panic("oops") })
	if len(f) != 1 || f[0] != "vminit panic: oops" {
		t.Errorf("failures %q, want [vminit panic: oops]", f)
	}
	if !strings.Contains(out.String(), "vminit: panic: oops") || !strings.Contains(resultLine(f), "VMTEST RESULT: FAIL (vminit panic: oops)") {
		t.Errorf("output %q", out.String())
	}
	if f := safeRun(&out, func(io.Writer) []string { return nil }); f != nil {
		t.Errorf("no panic: failures %q", f)
	}
}

func TestRunTestsCallsAfter(t *testing.T) {
	dir := t.TempDir()
	fakeTest(t, dir, "a.test", `echo '--- PASS: TestA (0.00s)'`)
	fakeTest(t, dir, "b.test", `echo '--- PASS: TestB (0.00s)'`)
	var got []string
	runTests(io.Discard, dir, config{timeout: time.Minute, grace: time.Second}, func(name string) { got = append(got, name) })
	if want := []string{"a.test", "b.test"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after called with %q, want %q", got, want)
	}
}

func TestLeftovers(t *testing.T) {
	proc := t.TempDir()
	for pid, stat := range map[string]string{
		"1":  "1 (init) S 0 1 1 0 -1",
		"2":  "2 (kthreadd) S 0 0 0 0 -1",
		"10": "10 (kworker/0:1-events) I 2 0 0 0 -1",
		"50": "50 (latency test) S 1 50 50 0 -1", // a space in the name
		"51": "51 (a) b) R 50 50 50 0 -1",        // and a parenthesis
		"60": "60 (gone) Z 1 60 60 0 -1",         // a zombie, to be reaped
	} {
		must(t, os.MkdirAll(filepath.Join(proc, pid), 0o755))
		must(t, os.WriteFile(filepath.Join(proc, pid, "stat"), []byte(stat+"\n"), 0o644))
	}
	got, err := leftovers(proc, 1)
	must(t, err)
	want := []leftover{{50, "latency test"}, {51, "a) b"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("leftovers = %+v, want %+v", got, want)
	}
}

func TestCmdlineParams(t *testing.T) {
	got := cmdlineParams("console=ttyS0 panic=-1 snd_usb_audio.lowlatency=0 snd-usb-audio.nrpacks=1 tsc=reliable snd_hda_intel.power_save=0 .x=1 y.=2\n")
	want := map[string]string{
		"snd_usb_audio": "lowlatency=0 nrpacks=1",
		"snd_hda_intel": "power_save=0",
	}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
}
