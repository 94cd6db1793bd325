// Package cyclictest reads and writes cyclictest's formats, so that
// latencytest's figures and rt-tests' meet: the --histfile histogram
// (which run --histfile also writes, one column per phase, or per CPU of
// each phase under --cpus), the --json
// output of rt-tests 2.x, the terminal log as users paste it, and the
// sniffing that tells them apart (Parse, IsLog). Histograms are
// rundata.Histogram, in the same 1 µs bins, so nothing is resampled.
package cyclictest
