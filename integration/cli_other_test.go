//go:build !linux

package integration_test

import (
	"os"
	"testing"
)

// testCLITerminal needs Linux's pseudo-terminal ioctls.
func testCLITerminal(t *testing.T, _ relockCLI) {
	failInCI(t)
	t.Skip("the terminal tests open pseudo-terminals the Linux way")
}

// testCLIJobGroup needs Linux's /proc.
func testCLIJobGroup(t *testing.T, _ relockCLI) {
	failInCI(t)
	t.Skip("the process group test reads Linux's /proc")
}

// failInCI fails a test that cannot run on this system when CI=true: CI
// runs on Linux, where every one of them runs, and must never skip one.
func failInCI(t *testing.T) {
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true on a system without Linux's pseudo-terminals and /proc: this test cannot run here")
	}
}
