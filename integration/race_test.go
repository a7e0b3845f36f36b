//go:build race

package integration_test

// raceEnabled reports whether this test binary runs with the race detector:
// the relock binary the CLI tests build then has it too.
const raceEnabled = true
