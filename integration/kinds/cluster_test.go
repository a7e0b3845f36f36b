package kinds

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/pubsub"
	"github.com/relock-go/relock/reentrant"
)

// clusterTimeout is the NodeTimeout of the cluster tests: a first call on
// a cluster client loads the slot map, and -race on two busy cores is slow.
const clusterTimeout = testNodeTimeout

func resetCluster(t *testing.T) {
	t.Helper()
	require.NoError(t, rcluster.FlushAll(testCtx(t, 10*time.Second)))
	require.NoError(t, plain.FlushAll(testCtx(t, 10*time.Second)))
}

// newClusterClient returns a cluster client closed at the end of the test.
func newClusterClient(t *testing.T) *redis.ClusterClient {
	cc := rcluster.NewClient()
	closeLater(t, cc)
	return cc
}

// namesOnEveryMaster returns one lock name per cluster master, name[i]'s
// slot served by master i.
func namesOnEveryMaster(ctx context.Context, t *testing.T, prefix string) []string {
	t.Helper()
	names := make([]string, len(rcluster.Nodes))
	found := 0
	for i := 0; found < len(names); i++ {
		require.Less(t, i, 1000, "no names over every master")
		name := fmt.Sprintf("%s-%d", prefix, i)
		slot, err := rcluster.KeySlot(ctx, lockKey(name))
		require.NoError(t, err)
		owner, err := rcluster.SlotOwner(ctx, slot)
		require.NoError(t, err)
		if names[owner] == "" {
			names[owner] = name
			found++
		}
	}
	return names
}

// Every key of one lock is in one slot, whatever bytes the name holds: the
// hash tag is {NAME}, with the characters that would end it escaped.
func TestClusterKeysOfALockShareASlot(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	for _, name := range []string{"orders:42", "a}b{c", "}", "{x}", "tag%7D", "space and\nnewline", "日本"} {
		k, err := reentrant.NewKey("", name)
		require.NoError(t, err)
		want, err := rcluster.KeySlot(ctx, k.Lock)
		require.NoError(t, err)
		sem, err := reentrant.NewSemaphoreKey("", name)
		require.NoError(t, err)
		// Every key one script may touch: inspect's six, force-unlock's eight
		// and its tombstones among them.
		for _, key := range []string{k.Channel, k.Fence, k.Tombstone("c:o"), k.Queue, k.QueueDeadlines, k.Readers(), k.ReadLeases(),
			k.ReadChannel(), k.ReadTombstone("c:o"), k.WriterWaiting(), k.Permits(), k.PermitLeases(), sem.Lock, sem.Leases,
			sem.Channel, sem.Tombstone("c:o")} {
			got, err := rcluster.KeySlot(ctx, key)
			require.NoError(t, err)
			require.Equal(t, want, got, "name %q: %s and %s", name, k.Lock, key)
		}
	}
}

// A whole Redis Cluster as the only node (N=1): names spread over its three
// masters, each lock's hash and fence counter sit on the master of their
// slot, and a waiter on each master's lock is woken by the release (plain
// PUBLISH reaches a subscriber on any node of the cluster), long before the
// 30s lease would have run out.
func TestClusterAsOneMember(t *testing.T) {
	resetCluster(t)
	ctx := testCtx(t, 60*time.Second)
	holders := newLockClient(t, lock.Options{Nodes: universal(newClusterClient(t)), NodeTimeout: clusterTimeout})
	waiters := newLockClient(t, lock.Options{Nodes: universal(newClusterClient(t)), NodeTimeout: clusterTimeout})
	warm(ctx, t, holders)
	warm(ctx, t, waiters)

	for owner, name := range namesOnEveryMaster(ctx, t, "kinds-one") {
		t.Run(rcluster.Nodes[owner].Name(), func(t *testing.T) {
			m := holders.NewMutex(name, lock.WithFencing(0))
			require.NoError(t, m.Lock(ctx))
			require.NoError(t, m.Lock(ctx))
			node := rcluster.Nodes[owner].Direct()
			require.EqualValues(t, 2, holdCount(ctx, t, node, name, m.Owner()), "the hash is on the slot's master")
			fence, err := node.Get(ctx, lockKey(name)+":fence").Int64()
			require.NoError(t, err, "the fence counter is on the slot's master")
			require.Equal(t, m.Token(), fence)

			before := waiters.Stats()
			w := waiters.NewMutex(name)
			got := make(chan error, 1)
			go func() { got <- w.Lock(ctx) }()
			require.Eventually(t, func() bool { return waiters.Stats().Sleeping == 1 }, 5*time.Second, 5*time.Millisecond)
			require.NoError(t, m.Unlock(ctx))
			require.NoError(t, m.Unlock(ctx))
			released := time.Now()
			select {
			case err := <-got:
				require.NoError(t, err)
			case <-time.After(5 * time.Second):
				t.Fatal("the waiter was not woken by the release")
			}
			t.Logf("woken %v after the release", time.Since(released).Round(time.Millisecond))
			after := waiters.Stats()
			// One wake, the release's. A change of the subscription's
			// connection wakes every waiter too, and so does a
			// confirmation that came after the waiter's Subscribe stopped
			// waiting for it (a release may have been missed meanwhile;
			// under -race on a loaded machine the cluster may confirm
			// later than NodeTimeout), so each one seen adds at most one.
			woken := after.WokenByPub - before.WokenByPub
			changes := subscriptionEvents(after.Subscription) - subscriptionEvents(before.Subscription)
			require.True(t, woken >= 1 && woken <= 1+changes,
				"woken by the release message: %d wakes, %d connection changes or late confirmations (before %+v, after %+v)", woken, changes, before, after)
			require.Equal(t, before.WokenByTTL, after.WokenByTTL, "not by the lease")
			require.EqualValues(t, 1, holdCount(ctx, t, node, name, w.Owner()))
			require.NoError(t, w.Unlock(ctx))
			n, err := node.Exists(ctx, lockKey(name)).Result()
			require.NoError(t, err)
			require.Zero(t, n)
		})
	}
	// One shared subscription per node: the cluster counts as one node.
	require.Zero(t, waiters.Stats().Subscription.Channels)
}

// N=3 with a mix: a Redis Cluster and two plain masters. Processes contend
// on names that land on different masters of the cluster; never two
// holders at once, and every lock ends free everywhere.
func TestClusterAmongThreeMembers(t *testing.T) {
	resetCluster(t)
	ctx := testCtx(t, 90*time.Second)
	names := namesOnEveryMaster(ctx, t, "kinds-mixed")[:2]
	const (
		processes = 3
		workers   = 2
		rounds    = 8
	)
	var (
		wg        sync.WaitGroup
		exclusive = map[string]*exclusion{names[0]: {}, names[1]: {}}
		errs      = make(chan error, processes*workers)
	)
	for p := range processes {
		nodes := []redis.UniversalClient{newClusterClient(t)}
		for _, c := range plain.Clients() {
			closeLater(t, c)
			nodes = append(nodes, c)
		}
		c := newLockClient(t, lock.Options{Nodes: nodes, NodeTimeout: clusterTimeout})
		warm(ctx, t, c)
		for w := range workers {
			name := names[(p+w)%len(names)]
			wg.Go(func() {
				m := c.NewMutex(name)
				for range rounds {
					if err := m.Lock(ctx); err != nil {
						errs <- fmt.Errorf("lock: %w", err)
						return
					}
					ex := exclusive[name]
					ex.enter()
					time.Sleep(2 * time.Millisecond)
					ex.leave()
					if err := m.Unlock(ctx); err != nil {
						errs <- fmt.Errorf("unlock: %w", err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for _, name := range names {
		require.EqualValues(t, 1, exclusive[name].most.Load(), "%s: two holders at once", name)
		require.EqualValues(t, processes*workers*rounds/len(names), exclusive[name].entries.Load(), name)
	}
	check := newLockClient(t, lock.Options{Nodes: universal[redis.UniversalClient](newClusterClient(t), plain.List[0].Direct(), plain.List[1].Direct())})
	for _, name := range names {
		states, err := check.Inspect(ctx, name)
		require.NoError(t, err)
		for _, st := range states {
			require.NoError(t, st.Err)
			require.Empty(t, st.Info.Holders, "%s still held on node %d", name, st.Node)
		}
	}
}

// A plain client of one of the cluster's masters beside the cluster client
// is the same server twice. With that master among the cluster client's
// seeds, New sees it; with another seed, the first contact does (the
// run_ids of every master).
func TestClusterDuplicateOfPlainNode(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	member := redis.NewClient(fixture.ClientOptions(rcluster.Nodes[1].Addr()))
	oneSeed := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{rcluster.Nodes[0].Addr()}, Protocol: 2, DisableIdentity: true})
	closeLater(t, member)
	closeLater(t, oneSeed)
	want := "and 2 (" + rcluster.Nodes[1].Addr() + ") are the same server ("

	_, err := lock.New(lock.Options{Nodes: universal[redis.UniversalClient](newClusterClient(t), plain.List[0].Direct(), member)})
	require.ErrorIs(t, err, lock.ErrInvalidArgument)
	require.Contains(t, err.Error(), want+"address tcp/")

	c := newLockClient(t, lock.Options{Nodes: universal[redis.UniversalClient](oneSeed, plain.List[0].Direct(), member), NodeTimeout: clusterTimeout})
	_, err = c.NewMutex("kinds-dup").TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrInvalidArgument)
	require.Contains(t, err.Error(), "nodes 0 (cluster ["+rcluster.Nodes[0].Addr()+"]) "+want+"run_id ")
}

// redirects counts MOVED and ASK replies seen by a cluster client's node
// clients, in single commands and pipelines.
type redirects struct{ moved, ask atomic.Int64 }

func (r *redirects) count(err error) {
	switch {
	case err == nil:
	case strings.HasPrefix(err.Error(), "MOVED "):
		r.moved.Add(1)
	case strings.HasPrefix(err.Error(), "ASK "):
		r.ask.Add(1)
	}
}

func (r *redirects) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *redirects) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		r.count(cmd.Err())
		return err
	}
}

func (r *redirects) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			r.count(c.Err())
		}
		return err
	}
}

// A resharding of the slot holding a renewed lock, step by step as
// redis-cli does it, with the Cluster as the only node so that nothing
// else could carry the lock: renewals run while the slot is MIGRATING,
// after its keys moved (ASK) and after the slot changed owner (MOVED). The
// lock is never lost, its hold count and lease are on the new master, a
// waiter gets it once it is released, and it ends free.
func TestClusterReshardingKeepsLock(t *testing.T) {
	resetCluster(t)
	ctx := testCtx(t, 60*time.Second)
	const lease = 10 * clusterTimeout // the least allowed; renewed every lease/3
	var seen redirects
	cc := newClusterClient(t)
	cc.OnNewNode(func(c *redis.Client) { c.AddHook(&seen) })
	holder := newLockClient(t, lock.Options{Nodes: universal(cc), Lease: lease, NodeTimeout: clusterTimeout})
	waiters := newLockClient(t, lock.Options{Nodes: universal(newClusterClient(t)), Lease: lease, NodeTimeout: clusterTimeout})
	warm(ctx, t, holder)
	warm(ctx, t, waiters)

	name := namesOnEveryMaster(ctx, t, "kinds-reshard")[0]
	slot, err := rcluster.KeySlot(ctx, lockKey(name))
	require.NoError(t, err)
	m := holder.NewMutex(name, lock.WithFencing(0))
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Lock(ctx))
	holderToken := m.Token()

	to := 2
	mig, err := rcluster.BeginMigration(ctx, slot, to)
	require.NoError(t, err)
	src, dst := rcluster.Nodes[mig.From()].Direct(), rcluster.Nodes[to].Direct()
	time.Sleep(lease / 2) // a renewal on the MIGRATING source, keys still there
	moved, err := mig.MoveKeys(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, moved, "the lock's hash and its fence counter")
	time.Sleep(lease) // renewals answered ASK by the source
	require.NoError(t, mig.Finish(ctx))
	time.Sleep(lease) // renewals answered MOVED, then sent to the new owner
	t.Logf("redirects seen by the holder: %d ASK, %d MOVED", seen.ask.Load(), seen.moved.Load())
	require.Positive(t, seen.ask.Load(), "no renewal went through ASK")
	require.Positive(t, seen.moved.Load(), "no renewal went through MOVED")

	select {
	case <-m.Lost():
		t.Fatal("the lock was lost during the resharding")
	default:
	}
	require.Equal(t, 2, m.HoldCount())
	require.EqualValues(t, 2, holdCount(ctx, t, dst, name, m.Owner()), "the hold count moved with the slot")
	ttl, err := dst.PTTL(ctx, lockKey(name)).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, lease/3, "the lease is still being renewed on the new owner")
	left, err := src.ClusterCountKeysInSlot(ctx, int(slot)).Result()
	require.NoError(t, err)
	require.Zero(t, left, "keys left on the old owner")

	// Another owner waits; the holder unlocks twice; the waiter gets the
	// lock on the new owner, with a fencing token above the holder's.
	w := waiters.NewMutex(name, lock.WithFencing(0))
	before := waiters.Stats()
	got := make(chan error, 1)
	go func() { got <- w.Lock(ctx) }()
	require.Eventually(t, func() bool { return waiters.Stats().Sleeping == 1 }, 5*time.Second, 5*time.Millisecond)
	ok, err := waiters.NewMutex(name).TryLock(ctx)
	require.NoError(t, err)
	require.False(t, ok, "a third owner got the held lock")
	require.NoError(t, m.Unlock(ctx))
	require.Equal(t, 1, m.HoldCount())
	select {
	case err := <-got:
		t.Fatalf("the waiter got the lock while it was still held once: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	require.NoError(t, m.Unlock(ctx))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not get the lock")
	}
	after := waiters.Stats()
	// The release's wake, and at most one more for each connection change
	// or late confirmation of the waiters' subscription (as in
	// TestClusterAsOneMember).
	woken, events := after.WokenByPub-before.WokenByPub, subscriptionEvents(after.Subscription)-subscriptionEvents(before.Subscription)
	require.True(t, woken >= 1 && woken <= 1+events,
		"woken by the release, published by the slot's new owner: %d wakes, %d connection changes or late confirmations", woken, events)
	require.Equal(t, before.WokenByTTL, after.WokenByTTL)
	require.EqualValues(t, 1, holdCount(ctx, t, dst, name, w.Owner()))
	require.Zero(t, holdCount(ctx, t, dst, name, m.Owner()), "the old holder's count is gone")
	require.Greater(t, w.Token(), holderToken)
	require.NoError(t, w.Unlock(ctx))
	n, err := dst.Exists(ctx, lockKey(name)).Result()
	require.NoError(t, err)
	require.Zero(t, n, "the lock ends free")
}

// A batch of calls on locks served by every master of a cluster, after each
// master lost its scripts (SCRIPT FLUSH, as after restarts): the call sent
// with a script's source reaches one master, and the calls by SHA behind it
// on the others meet NOSCRIPT again; they are loaded and sent once more, so
// every call of the batch succeeds.
func TestClusterBatchAfterScriptFlush(t *testing.T) {
	resetCluster(t)
	ctx := testCtx(t, 30*time.Second)
	node := reentrant.NewNode(newClusterClient(t), 0)
	names := namesOnEveryMaster(ctx, t, "kinds-flush")
	var changes []reentrant.Change
	for i, name := range names {
		key, err := reentrant.NewKey("", name)
		require.NoError(t, err)
		op := reentrant.Op{Key: key, Owner: "c:o", Lease: 10 * time.Second, Count: 1, Seq: int64(i + 1)}
		changes = append(changes, reentrant.Change{Op: op})
	}
	for _, n := range rcluster.Nodes {
		require.NoError(t, n.Direct().ScriptFlush(ctx).Err())
	}
	for i, r := range node.Apply(ctx, changes) {
		require.NoError(t, r.Err, "lock %q", names[i])
		require.True(t, r.Acquisition.Acquired, "lock %q", names[i])
	}
	for i, name := range names {
		require.EqualValues(t, 1, holdCount(ctx, t, rcluster.Nodes[i].Direct(), name, "c:o"), "lock %q on its master", name)
	}
}

// subscriptionEvents counts the events of a Client's subscription that
// wake waiters besides releases: connection changes and late confirmations.
func subscriptionEvents(s pubsub.Stats) uint64 {
	return s.Disconnects + s.Reconnects + s.LateConfirms
}
