package integration_test

import (
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadThreadWaitsSeesThisThread: on Linux every thread of the process
// is read, the calling one among them, and a thread's wait never shrinks.
func TestReadThreadWaitsSeesThisThread(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := syscall.Gettid()
	before := readThreadWaits()
	require.Contains(t, before, tid)
	for i := 0; i < 1_000_000; i++ { // a little CPU time, so the counters can move
		_ = i * i
	}
	after := readThreadWaits()
	require.Contains(t, after, tid)
	require.GreaterOrEqual(t, after[tid], before[tid])
	require.GreaterOrEqual(t, len(after), 2, "the runtime runs more than one thread")
}
