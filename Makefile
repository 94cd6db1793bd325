# latencytest — the two commands that set up everything on a fresh
# Debian/Ubuntu machine:
#   make run    installs what is missing, builds, runs the default suite
#   make test   installs what the tests need and runs them all
# Everything else here is what those two are made of.

# `go`, in every recipe and in the scripts they run, is scripts/gobin/go:
# the newest Go 1.21+ on the machine (scripts/findgo), looked up at each
# call, so that the Go `scripts/setup` has just installed is the one used
# (on Debian 12, /usr/lib/go-1.23/bin/go, which is on no PATH); gofmt is
# that toolchain's.
export PATH := $(CURDIR)/scripts/gobin:$(PATH)
GO ?= go
BIN := ./latencytest
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
# Arguments for `make run`, e.g. make run ARGS="--tests idle,hackbench --duration 10s"
ARGS ?=

.PHONY: race-full run test rehearse rehearse-wait vmtest-long build build-static build-portaudio dist debtest setup setup-test vet unit race fuzz fuzz-short fuzz-targets portaudio-test pipewire-test vmtest vmtest-cards vmtest-arm64 vmtest-arm vmtest-arm-time32 bench clean

run: setup build
	$(BIN) run $(ARGS)

# The default build is pure Go and static; the PortAudio driver and the
# JACK driver are added when their headers are there (scripts/setup
# installs portaudio19-dev, which brings libjack-jackd2-dev).
build:
	@tags=; \
	if [ -e /usr/include/portaudio.h ]; then tags=portaudio; fi; \
	if [ -e /usr/include/jack/jack.h ]; then tags=$${tags:+$$tags,}jack; fi; \
	if [ -n "$$tags" ]; then \
		echo "building with the drivers of tags $$tags"; \
		$(GO) build -tags $$tags -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/latencytest; \
	else \
		CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/latencytest; \
	fi

build-static:
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/latencytest

build-portaudio:
	$(GO) build -tags portaudio -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/latencytest

# Static release binaries (amd64, arm64, armv7, armv6) and .deb packages
# (amd64, arm64, armhf) in dist/: scripts/dist says what each holds;
# docs/arm.md the boards each binary runs on.
dist:
	scripts/dist $(VERSION)

# What dist wrote, against dpkg-deb, qemu-user and a Debian 12 chroot
# (scripts/debtest says what; the chroot is cached in /var/cache/latencytest).
debtest: dist
	scripts/debtest dist $(VERSION)

setup:
	scripts/setup run

setup-test:
	scripts/setup test

# The gate: what CI runs (.ci/run) and what an issue lands through, in
# 25 minutes on this machine kind once its packages are there (README.md,
# "Tests", has each stage's time). scripts/gate runs the stages in order,
# stops at the first that fails and ends with one line saying so. The
# comparisons with a reference whose false alarms are not bounded at 1 in
# 1000 runs, the tests not steady here, every card at every size and the
# ARM suites are the long tier's: make vmtest-long (docs/vmtest.md).
GATE_STAGES = setup-test vet unit race fuzz-short portaudio-test pipewire-test debtest vmtest vmtest-arm-time32

test:
	@scripts/gate $(GATE_STAGES)

# A fresh clone of HEAD running CI=true bash .ci/run in the background,
# under a time limit: one line at the end, passed or failed, each stage's
# time, the first failure (scripts/rehearse; `make rehearse-wait` waits
# for it).
rehearse:
	@scripts/rehearse

rehearse-wait:
	@scripts/rehearse -wait

vet:
	@out=$$(gofmt -l .) && { test -z "$$out" || { echo "$$out"; echo "gofmt: files above need formatting"; exit 1; }; }
	$(GO) vet ./...
	$(GO) vet -tags portaudio,jack ./...
	$(GO) vet -tags pipewire ./internal/pwprofile/
	@# The 32-bit architectures the tool builds for (docs/arm.md), whose
	@# records and alignment differ: vet compiles every package and its
	@# tests for each (arm64's are compiled by make dist and the long
	@# tier's arm64 VM).
	@set -e; for a in arm 386; do \
		echo "GOARCH=$$a go vet ./..."; \
		GOARCH=$$a GOARM=7 CGO_ENABLED=0 $(GO) vet ./...; \
	done

# -p 1: packages one at a time, so that the stressors' own tests (fork
# storms, hackbench) never run beside the tests that measure latency.
unit:
	$(GO) test -count=1 -p 1 -timeout 20m ./...

# Every parser of a file latencytest reads is a Go fuzz target with a seed
# corpus of real files in its package's testdata/ (docs/reliability.md).
# The targets are found by `go test -list`, every Fuzz function of every
# package, so a new one runs without being listed here. `make fuzz` runs
# each for FUZZTIME; `make test` runs each for 20000 executions (a count,
# not a time: Go 1.26's coordinator can fail a clean run with "context
# deadline exceeded" at a -fuzztime deadline, go.dev/issue/75804). An
# input that fails is written to the package's testdata/fuzz/ and from
# then on runs with the unit tests.
FUZZTIME ?= 60s

# fuzz-targets prints PACKAGE FUNCTION, one target a line: `go test -list`
# prints a package's Fuzz functions, then the package on its "ok" line.
fuzz-targets:
	@out=$$($(GO) test -list '^Fuzz' ./...) || { echo "$$out"; exit 1; }; \
	echo "$$out" | while read -r word pkg rest; do \
		case $$word in \
		Fuzz*) fns="$$fns $$word" ;; \
		ok) for fn in $$fns; do echo "$$pkg $$fn"; done; fns= ;; \
		esac; \
	done

fuzz:
	@targets=$$($(MAKE) --no-print-directory -s fuzz-targets) || exit 1; \
	echo "$$targets" | { set -e; while read -r pkg fn; do \
		echo "== $$fn ($$pkg) for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2s $$pkg; \
	done; }

fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=20000x

# The race detector over every package that starts goroutines (a line of
# one of its files begins with a go statement), over the CLI's end-to-end
# tests whose processes hand work between goroutines (RACE_CLI: the
# parent's supervisor and signals, the engine's handover of samples, the
# monitor's rotations, --cpus, the tracer), whose binary (the parent, the
# engine, the stressors) is then built with -race too, and over the
# PortAudio driver against JACK. The gate runs this much: the detector
# makes the CLI's whole suite take five minutes here (make race-full runs
# it, as the long tier).
RACE_PKGS = $(shell for d in $$($(GO) list -f '{{.Dir}}' ./...); do \
	grep -qsE '^[[:space:]]*go [[:alnum:]_]' $$d/*.go && echo $$d; done | grep -v '/cmd/latencytest$$')
RACE_CLI = ^(TestRunTimerIdleCountsPeriods|TestRunStallReadsBack|TestRunInterruptKeepsMeasurement|TestEngineDiesWithParent|TestRunSIGSTOPOfEngineIsOneXrun|TestRunPhasesWithLoads|TestMonitorRotation|TestRunMetricsFile|TestRunCPUsPinnedStallOnItsCPUAndCounted|TestRunCPUsKilledIsRecovered|TestSupervisorSignalIsOneStop|TestHangupAndPipeStopInOrder|TestSecondInterruptExitsAtOnce|TestStuckEngineKilled|TestRunLiftRTBudget|TestRunTraceKnownCulprit|TestCompareCommand|TestReportCommand)$$

# The PortAudio driver's tests that count the server's cycles against the
# time (RACE_COUNTS) are left to portaudio-test: under the race detector
# the callback's Go code runs several times slower, the client misses
# cycles and the dummy server restarts its schedule after them (one
# rehearsal: 24 xruns, the fitted period at its clamp, 3751 counted in
# 3743 periods' time), which judges the server's schedule, not a race.
RACE_COUNTS = TestJackCountsPeriods|TestJackCaptureAndDuplex|TestRunThroughJack

race:
	$(GO) test -race -count=1 -p 1 -timeout 30m $(RACE_PKGS)
	$(GO) test -race -count=1 -p 1 -timeout 30m -run '$(RACE_CLI)' ./cmd/latencytest/
	$(GO) test -race -count=1 -p 1 -timeout 10m -tags portaudio -skip '$(RACE_COUNTS)' ./audio/portaudio/...

race-full:
	$(GO) test -race -count=1 -p 1 -timeout 30m $(RACE_PKGS) ./cmd/latencytest/
	$(GO) test -race -count=1 -p 1 -timeout 10m -tags portaudio ./audio/portaudio/...

# The PortAudio driver against JACK, its binary (the CLI with PortAudio
# linked) run end to end through it (TestRunThroughJack); then the native
# JACK driver (audio/jack, tag jack) the same way, against servers of its
# own at 64 and 256 frames (25-95 s here, quiet to busy). The CLI's own
# end-to-end suite runs in unit (the static build), part of it in race (a
# cgo build, as the PortAudio one is); a pass with PortAudio linked took
# four minutes of the gate's 25.
portaudio-test:
	$(GO) test -count=1 -p 1 -timeout 10m -tags portaudio ./audio/portaudio/...
	$(GO) test -count=1 -p 1 -timeout 5m -tags jack ./audio/jack/...

# PipeWire's profiler read and its late cycles charged, against the
# system's pipewire run headless on its Dummy-Driver with a JACK client
# (pw-jack) that stalls (internal/pwprofile, docs/pipewire.md): 15 s.
pipewire-test:
	$(GO) test -count=1 -timeout 2m -tags pipewire -run TestProfiler ./internal/pwprofile/

# The gate's VM stages: the base suite (snd-dummy, snd-aloop), each
# emulated card played, named, stopped and restarted at 2×256,
# the slow card's clock, and the PREEMPT_RT kernel's tracer tests. Without
# -long no test marked //vmtest:long runs, and the cards are not compared
# with aplay (docs/vmtest.md, "The gate and the long tier").
vmtest:
	scripts/vmtest
	scripts/vmtest -cards all -run 'TestVMCards|TestVMCardStop'
	scripts/vmtest -cards usb,es1370slow -append snd_usb_audio.lowlatency=0 -run 'TestVMCardStop|TestVMCardClock'
	scripts/vmtest -rt -cards hda -run 'TestRawMatchesKernelText|TestVMKilledRunOsnoiseReset|TestVMRTLateInterrupt'

# The long tier: the whole matrix, every card at every size against aplay,
# the tests marked //vmtest:long, arm64 and armhf, each boot twice; a dated
# table in docs/notes/ (scripts/vmtest-long). For releases, not for CI.
vmtest-long:
	scripts/vmtest-long

# Every card at every buffer size of the comparison with aplay (docs/truth.md,
# "Real cards"); part of vmtest-long.
vmtest-cards:
	scripts/vmtest -cards all -long -vmtimeout 3600 -run 'TestVMCards'

# The VM suite on Debian's arm64 kernel under qemu-system-aarch64 (TCG),
# with the stressors' and engine's tests, which qemu-user cannot run
# (docs/vmtest.md), and HD-Audio and USB audio, the emulated cards qemu's
# virt machine offers; part of vmtest-long. 32-bit ARM (armmp-lpae under
# qemu-system-arm) is a target of its own: it runs the same tests, through
# the same code but the ABI's 32-bit records.
vmtest-arm64:
	scripts/vmtest -arch arm64
	scripts/vmtest -arch arm64 -cards hda,usb -run 'TestVMCards'

vmtest-arm:
	scripts/vmtest -arch arm

# The old 32-bit time_t records a 32-bit kernel before 5.6 takes, forced on
# the armhf kernel, which takes both (docs/arm.md): make test runs this
# much of the armhf suite.
vmtest-arm-time32:
	scripts/vmtest -arch arm -run 'TestVMTime32|TestVMSyncPtr'

bench:
	scripts/bench-cyclictest

clean:
	rm -f $(BIN)
	rm -rf dist
