package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/reentrant"
)

// holdOn reports owner's hold count of the lock name on node i, and false
// when the node could not be read (for Eventually conditions, which must
// not call require).
func holdOn(i int, name, owner string) (int64, bool) {
	key, err := reentrant.NewKey("", name)
	if err != nil {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	info, err := reentrant.NewNode(cluster.Nodes[i].Direct(), 0).Inspect(ctx, key)
	if err != nil {
		return 0, false
	}
	return info.Holders[owner], true
}

// TestHandOffTargetFillsInTheNodeTheReleaseHadNotReached: a hand-off's
// target that wins the quorum while another owner still holds one node (the
// releaser, whose release there is still on its way) writes its hold there
// as soon as that node is free, rather than a third of a lease later at its
// first renewal. A plain Lock refused on a node does not (nothing says the
// hold there is about to go).
//
// The release still on its way is played by a planted owner on that node,
// taken off 300 ms after the target got the lock.
func TestHandOffTargetFillsInTheNodeTheReleaseHadNotReached(t *testing.T) {
	reset(t)
	ctx := ctxFor(t, 60*time.Second)
	const name = "fill-in"
	tie := tieBreakerOf(t, name, 3)
	late := (tie + 1) % 3
	dead := plantHolder(t, ctx, name, late)

	// Default lease (30 s): the first renewal, which would repair the node
	// too, comes 10 s after the target's Lock.
	holderClient := newLockClient(t, 3, lock.Options{})
	holder := holderClient.NewMutex(name)
	require.NoError(t, holder.Lock(ctx)) // on the two other nodes: a plain Lock
	clients, waiters, got := waitersAsleep(t, ctx, name, 3, 1)
	target := waiters[0]

	require.NoError(t, holder.Unlock(ctx))
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the hand-off's target did not get the lock")
	}
	gotAt := time.Now()
	for _, i := range []int{tie, (tie + 2) % 3} {
		// At once, unless the target's attempt overtook the holder's
		// release there too: then the fill-in writes it shortly.
		require.Eventually(t, func() bool {
			n, ok := holdOn(i, name, target.Owner())
			return ok && n == 1
		}, 5*time.Second, 5*time.Millisecond, "the target holds node %d", i)
	}

	// While the other owner is there, the target's tries change nothing.
	time.Sleep(300 * time.Millisecond)
	n, ok := holdOn(late, name, "dead:1")
	require.True(t, ok)
	require.Equal(t, int64(1), n, "the other owner's hold on node %d", late)
	unplantHolder(t, ctx, dead, late)
	require.Eventually(t, func() bool {
		n, ok := holdOn(late, name, target.Owner())
		return ok && n == 1
	}, 5*time.Second, 5*time.Millisecond, "the target did not write its hold on node %d once it was free", late)
	filled := time.Since(gotAt)
	t.Logf("the target held node %d %v after its Lock returned", late, filled.Round(time.Millisecond))
	require.Less(t, filled, lock.DefaultLease/3, "written by the renewal, not the fill-in")
	// Counted once the fill-in's reply is in, which may be just after its
	// write shows on the node.
	require.Eventually(t, func() bool { return clients[0].Stats().FilledIn > 0 },
		5*time.Second, time.Millisecond, "the fill-in was not counted")
	require.Equal(t, uint64(0), holderClient.Stats().FilledIn, "the plain Lock refused on a node filled it in")
	require.Empty(t, queueOn(t, late, name), "the fill-in took the target out of the queue there")

	require.NoError(t, target.Unlock(ctx))
	requireFree(t, 3, name, 2*time.Second)
}
