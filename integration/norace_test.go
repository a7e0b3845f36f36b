//go:build !race

package integration_test

// raceEnabled reports whether this test binary runs with the race detector.
const raceEnabled = false
