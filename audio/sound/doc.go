// Package sound is the signal side of a loopback measurement: what is
// played and what is looked for in what came back. It generates a maximum
// length sequence (MLS) for the round trip and finds it in a capture to the
// frame, and generates a sine and finds the glitches in a captured one
// (where the sound broke: a dropout, a block of silence, a repeated or
// skipped block).
//
// It is pure computation on float32 samples of one channel, and allocates:
// it runs in the parent on a capture the engine handed over, never in the
// period loop. docs/method.md ("The sound") says what its figures mean and
// what they do not.
package sound
