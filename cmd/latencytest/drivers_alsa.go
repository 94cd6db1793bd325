package main

// alsaDrivers returns the ALSA driver once it exists (issue: ALSA driver).
func alsaDrivers() []driverEntry { return nil }
