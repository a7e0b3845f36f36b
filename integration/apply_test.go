package integration_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/reentrant"
)

// TestReentrantApplyRunsABatchInOrder: Node.Apply sends acquires and
// releases of several owners in one batch, in order, with the rules of
// Acquire and Release (sequence numbers, other holders, bad input), and
// loads the scripts itself after SCRIPT FLUSH.
func TestReentrantApplyRunsABatchInOrder(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	a, b := mustKey(t, "apply-a"), mustKey(t, "apply-b")
	var alice, bob int64
	stale := opFor(a, "c:alice", 5, &alice) // a sequence number the batch overtakes
	require.NoError(t, direct.ScriptFlush(ctx).Err())

	bad := opFor(a, "", 1, &bob)
	results := node.Apply(ctx, []reentrant.Change{
		{Op: opFor(a, "c:alice", 2, &alice)},                                 // 0: alice takes a with count 2
		{Op: opFor(a, "c:bob", 1, &bob)},                                     // 1: a is alice's
		{Op: opFor(b, "c:bob", 1, &bob)},                                     // 2: bob takes b
		{Op: opFor(a, "c:alice", 1, &alice), Release: true, ReleaseID: "r1"}, // 3: a down to 1
		{Op: stale, Release: true, ReleaseID: "stale"},                       // 4: older than 3: no change
		{Op: bad}, // 5: invalid, not sent
		{Op: opFor(b, "c:bob", 0, &bob), Release: true, ReleaseID: "r2"}, // 6: b released
		{Op: opFor(b, "c:alice", 1, &alice)},                             // 7: alice takes b after it
	})
	require.Len(t, results, 8)
	require.NoError(t, results[0].Err)
	require.Equal(t, reentrant.Acquisition{Acquired: true, Count: 2}, results[0].Acquisition)
	require.NoError(t, results[1].Err)
	require.False(t, results[1].Acquisition.Acquired)
	require.Positive(t, results[1].Acquisition.HolderTTL, "the holder's TTL comes back")
	require.True(t, results[2].Acquisition.Acquired)
	require.Equal(t, reentrant.StillHeld, results[3].Released)
	require.NoError(t, results[4].Err)
	require.ErrorIs(t, results[5].Err, reentrant.ErrInvalidArgument)
	require.Equal(t, reentrant.Released, results[6].Released)
	require.True(t, results[7].Acquisition.Acquired)

	for key, want := range map[reentrant.Key]map[string]int64{a: {"c:alice": 1}, b: {"c:alice": 1}} {
		info, err := node.Inspect(ctx, key)
		require.NoError(t, err)
		require.Equal(t, want, info.Holders, key.Name)
	}
}
