package integration_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestCLI builds the relock command once and runs it as a subprocess
// against 1 and 3 Redis masters: run (mutual exclusion, exit codes, waits,
// signals, lost locks), inspect and ls against the library's Inspect,
// unlock --force, bench, bad command lines that must change nothing, and
// the behaviour at a terminal.
func TestCLI(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	cli := relockCLI{bin: buildRelock(t)}
	for _, n := range cliMasters {
		t.Run(itoaName(n), func(t *testing.T) {
			t.Run("RunNeverOverlaps", func(t *testing.T) { testCLIRunNeverOverlaps(t, cli, n) })
			t.Run("RunExitCodes", func(t *testing.T) { testCLIRunExitCodes(t, cli, n) })
			t.Run("RunWhenHeld", func(t *testing.T) { testCLIRunWhenHeld(t, cli, n) })
			t.Run("RunSignals", func(t *testing.T) { testCLIRunSignals(t, cli, n) })
			t.Run("RunLockLost", func(t *testing.T) { testCLIRunLockLost(t, cli, n) })
			t.Run("InspectAndLs", func(t *testing.T) { testCLIInspectAndLs(t, cli, n) })
			t.Run("BadInputChangesNothing", func(t *testing.T) { testCLIBadInput(t, cli, n) })
		})
	}
	t.Run("InspectWithANodeDown", func(t *testing.T) { testCLIInspectNodeDown(t, cli) })
	t.Run("LsMinority", func(t *testing.T) { testCLILsMinority(t, cli) })
	t.Run("InspectAndLsReaders", func(t *testing.T) { testCLIInspectAndLsReaders(t, cli) })
	t.Run("InspectAndLsPermits", func(t *testing.T) { testCLIInspectAndLsPermits(t, cli) })
	t.Run("InspectShowsWaiters", func(t *testing.T) { testCLIInspectShowsWaiters(t, cli) })
	t.Run("UserAndPassword", func(t *testing.T) { testCLIUserPassword(t, cli) })
	t.Run("Replicas", func(t *testing.T) { testCLIReplicas(t, cli) })
	t.Run("Bench", func(t *testing.T) { testCLIBench(t, cli) })
	t.Run("Terminal", func(t *testing.T) { testCLITerminal(t, cli) })
	t.Run("JobGroup", func(t *testing.T) { testCLIJobGroup(t, cli) })
	goleak.VerifyNone(t, append(proxyGoroutines(), ignore)...)
}
