//go:build !linux

package main

// rtcDrivers is empty off Linux: /dev/rtc's periodic interrupt is Linux's.
func rtcDrivers() []driverEntry { return nil }
