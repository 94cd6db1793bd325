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
// The kernel structures are transcribed for little-endian Linux on amd64,
// arm64, arm and 386 (abi_64.go, abi_32.go; on 32-bit the time64 ABI, and
// SYNC_PTR instead of the mapped status page); on other platforms the
// package is empty.
package alsa
