// Package vmsmoke holds the smoke test of the VM harness (scripts/vmtest):
// its tests, built only with -tags vm, check inside the VM that the sound
// modules are loaded, the PCM device nodes exist and latencytest is on
// PATH — what every other in-VM test takes for granted.
package vmsmoke
