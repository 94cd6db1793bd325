//go:build !linux || !(amd64 || arm64 || arm || 386)

package main

// alsaDrivers is empty where the ALSA driver's kernel structures are not
// transcribed (it knows little-endian Linux on amd64, arm64, arm and 386).
func alsaDrivers() []driverEntry { return nil }
