//go:build !jack

package main

// jackDrivers is empty in the default, pure-Go build; build with -tags
// jack (and libjack-jackd2-dev installed) to get the native JACK driver.
func jackDrivers() []driverEntry { return nil }
