//go:build !linux || !(amd64 || arm64)

package main

// alsaDrivers is empty where the ALSA driver's kernel structures are not
// transcribed (it knows 64-bit little-endian Linux: amd64 and arm64).
func alsaDrivers() []driverEntry { return nil }
