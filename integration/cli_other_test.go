//go:build !linux

package integration_test

import "testing"

// testCLITerminal needs Linux's pseudo-terminal ioctls.
func testCLITerminal(t *testing.T, _ relockCLI) {
	t.Skip("the terminal tests open pseudo-terminals the Linux way")
}

// testCLIJobGroup needs Linux's /proc.
func testCLIJobGroup(t *testing.T, _ relockCLI) {
	t.Skip("the process group test reads Linux's /proc")
}
