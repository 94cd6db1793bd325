// Package alsa is the ALSA driver: it talks to the kernel's PCM devices
// (/dev/snd/pcmC*D*) with ioctls, without alsa-lib, so the default build
// stays pure Go. It opens hw:CARD,DEV devices only.
//
// Each period it reports when the kernel moved the hardware pointer past
// the period boundary (the timestamp the kernel takes in the period
// interrupt, read from the status page without asking the driver for a
// fresh pointer) and when the audio thread ran again after poll. The
// difference is the interrupt-to-thread latency, the figure cyclictest
// cannot see because its timer fires in hard-IRQ context. See docs/alsa.md.
//
// The kernel structures are transcribed for 64-bit little-endian Linux
// (amd64 and arm64); on other platforms the package is empty.
package alsa
