//go:build !portaudio

package main

// portaudioDrivers is empty in the default, pure-Go build; build with
// -tags portaudio (and portaudio19-dev installed) to get the PortAudio
// driver.
func portaudioDrivers() []driverEntry { return nil }
