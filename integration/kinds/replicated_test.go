package kinds

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
)

// The replicated mode (Options.Replicas) on one Sentinel group, the setup
// it is for: one master with a replica, no quorum of masters. While the
// replica receives nothing (CutReplication), the quorum mode alone takes a
// lock that a failover then loses, so a second owner gets it too (the
// hazard, shown as the control); the replicated mode refuses the lock with
// ErrNotReplicated and leaves nothing on the master. Once replication runs,
// a lock taken in the replicated mode is on the replica when Lock returns;
// once replication stops, an Unlock reports ErrNotReplicated and a hold
// whose renewals no longer reach the replica is reported lost.
func TestReplicatedModeRefusesWhatAFailoverWouldLose(t *testing.T) {
	resetSentinels(t)
	ctx := testCtx(t, 90*time.Second)
	g := sentinels.Groups[0]
	newClient := func(replicas int) *lock.Client {
		rdb := g.NewClient(replicaReads)
		closeLater(t, rdb)
		c := newLockClient(t, replicatedOptions(replicas, rdb))
		warm(ctx, t, c)
		return c
	}
	quorumOnly, replicated, other := newClient(0), newClient(1), newClient(1)

	_, err := g.CutReplication(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.RestoreReplication(t.Context()) })
	oldMaster, err := g.Master(ctx)
	require.NoError(t, err)

	// The quorum mode alone: the master takes the lock, the replica never
	// hears of it.
	control := quorumOnly.NewMutex("kinds-replicated-control")
	ok, err := control.TryLock(ctx)
	require.NoError(t, err)
	require.True(t, ok, "the quorum mode takes the lock on the master alone")

	// The replicated mode: the master ran the acquire, WAIT counted no
	// replica, so the attempt failed and was undone.
	refused := replicated.NewMutex("kinds-replicated-refused")
	ok, err = refused.TryLock(ctx)
	require.False(t, ok)
	require.ErrorIs(t, err, lock.ErrNotReplicated)
	require.ErrorIs(t, err, lock.ErrNoQuorum)
	require.Eventually(t, func() bool {
		n, err := oldMaster.Direct().Exists(ctx, lockKey(refused.Name())).Result()
		return err == nil && n == 0
	}, 2*replicatedLease, 20*time.Millisecond, "the refused attempt was not undone on the master")

	// The failover promotes the replica, which never had either lock: the
	// control's lock is gone, and another owner takes it while its holder
	// still believes it holds (Redis's asynchronous replication losing a
	// lock; what the replicated mode refuses to hand out).
	promoted, err := g.Failover(ctx)
	require.NoError(t, err)
	require.NotEqual(t, oldMaster, promoted)
	second := other.NewMutex(control.Name())
	require.NoError(t, second.Lock(ctx), "the lost lock is free on the promoted master")
	require.NoError(t, second.Unlock(ctx))
	require.ErrorIs(t, control.Unlock(ctx), lock.ErrLost, "the control's holder learns of its loss")

	// Replication runs again (the old master is now the replica): a lock
	// taken in the replicated mode is on the replica as soon as Lock
	// returns, no waiting; also when the master has lost its scripts, so
	// that the acquire goes again with its source, WAIT behind it.
	require.NoError(t, promoted.Direct().ScriptFlush(ctx).Err())
	held := replicated.NewMutex("kinds-replicated-held")
	require.NoError(t, held.Lock(ctx))
	require.NoError(t, held.Lock(ctx))
	replica, err := g.Replica(ctx)
	require.NoError(t, err)
	require.Equal(t, oldMaster, replica)
	require.EqualValues(t, 2, holdCount(ctx, t, replica.Direct(), held.Name(), held.Owner()),
		"a write the replicated mode confirmed must be on the replica")
	require.NoError(t, held.Unlock(ctx))
	unlocked := replicated.NewMutex("kinds-replicated-unlocked")
	require.NoError(t, unlocked.Lock(ctx))

	// Replication stops while the locks are held. An Unlock runs on the
	// master but is not acknowledged: it says so (the release goes on in
	// the background).
	_, err = g.CutReplication(ctx)
	require.NoError(t, err)
	require.ErrorIs(t, unlocked.Unlock(ctx), lock.ErrNotReplicated)
	n, err := promoted.Direct().Exists(ctx, lockKey(unlocked.Name())).Result()
	require.NoError(t, err)
	require.Zero(t, n, "the release ran on the master")

	// Renewals run on the master but are not acknowledged, so they do not
	// count, and the hold is reported lost before its lease could outlive
	// a failover.
	select {
	case <-held.Lost():
	case <-time.After(3 * replicatedLease):
		t.Fatal("a hold whose renewals no replica acknowledged was not reported lost")
	}
	require.ErrorIs(t, held.Unlock(ctx), lock.ErrLost)
}

// The replicated mode over a quorum of Sentinel groups: each group's
// master waits for its own replica. With one group's replication cut, that
// group's answers do not count (ErrNotReplicated) and the other two carry
// the lock, which both their replicas have when Lock returns; the Unlock
// is confirmed by those two too, and leaves every master empty.
func TestReplicatedModeOverAQuorumOfGroups(t *testing.T) {
	resetSentinels(t)
	ctx := testCtx(t, 60*time.Second)
	rdbs := sentinels.Clients()
	closeLater(t, rdbs...)
	// Group 0's acquire fails: ErrNotReplicated after ReplicaTimeout, or,
	// when groups 1 and 2 agreed first, cut short as a straggler (the
	// fan-out then waits no longer than a usual round trip).
	var group0 sync.Map // the kinds of group 0's acquire errors
	observer := &lock.Observer{NodeError: func(_ context.Context, e lock.NodeErrorInfo) {
		if e.Node == 0 && e.Op == lock.OpAcquire {
			group0.Store(e.Kind, e.Err)
		}
	}}
	opts := replicatedOptions(1, rdbs...)
	opts.Observer = observer
	c := newLockClient(t, opts)
	warm(ctx, t, c)

	cut := sentinels.Groups[0]
	_, err := cut.CutReplication(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cut.RestoreReplication(t.Context()) })

	m := c.NewMutex("kinds-replicated-quorum")
	require.NoError(t, m.Lock(ctx))
	var kinds []lock.NodeErrorKind
	require.Eventually(t, func() bool { // a straggler is reported as it is cut short
		kinds = kinds[:0]
		group0.Range(func(kind, _ any) bool {
			kinds = append(kinds, kind.(lock.NodeErrorKind))
			return true
		})
		return len(kinds) > 0
	}, 5*time.Second, 10*time.Millisecond, "group 0's acquire did not fail")
	require.Subset(t, []lock.NodeErrorKind{lock.NodeNotReplicated, lock.NodeTimeout}, kinds)
	if err, ok := group0.Load(lock.NodeNotReplicated); ok {
		require.ErrorIs(t, err.(error), lock.ErrNotReplicated)
	}
	t.Logf("group 0's acquire errors: %v", kinds)
	for _, g := range sentinels.Groups[1:] {
		replica, err := g.Replica(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, holdCount(ctx, t, replica.Direct(), m.Name(), m.Owner()), "%s's replica", g.Name)
	}
	require.NoError(t, m.Unlock(ctx))
	for _, master := range masters(ctx, t) {
		// Group 0's release may still be on its way when the quorum's
		// confirmations come back.
		require.Eventually(t, func() bool {
			return holdCount(ctx, t, master.Direct(), m.Name(), m.Owner()) == 0
		}, 5*time.Second, 20*time.Millisecond, master.Name())
	}
}

// replicatedLease is the lease of the replicated mode's tests: 10 node
// timeouts of 1 s. A WAIT may take 400 ms (ReplicaTimeout) on a loaded
// machine before an acknowledged write counts as not acknowledged; one
// that no replica can acknowledge takes all of it, and its round trip
// must still end within the node timeout for the test to see why the
// write failed. With 500 ms, on CI beside a second test run, it did not
// (2026-11-29: "node did not answer in time" instead of ErrNotReplicated).
const replicatedLease = 10 * time.Second

// replicatedOptions are the options of the replicated mode's tests over
// the given failover clients.
// replicaReads gives a client of the replicated mode's tests a read timeout
// well above their WAIT (ReplicaTimeout, 400 ms): a WAIT that no replica
// answers takes all of it, and on a loaded machine the fixture's 500 ms left
// too little for the round trip around it ("i/o timeout" instead of
// ErrNotReplicated, 2026-11-29).
func replicaReads(o *redis.FailoverOptions) { o.ReadTimeout = 2 * time.Second }

func replicatedOptions[C redis.UniversalClient](replicas int, nodes ...C) lock.Options {
	o := lock.Options{Nodes: universal(nodes...), Lease: replicatedLease, NodeTimeout: time.Second, Replicas: replicas}
	if replicas > 0 {
		o.ReplicaTimeout = 400 * time.Millisecond
	}
	return o
}
