package integration_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/lua"
	"github.com/relock-go/relock/reentrant"
)

// The tests of this file send, after an owner's release, operations of that
// owner numbered below the release: the copies of its calls that a network
// could deliver late. A released lock must not come back on any node.

// lockKeys returns the keys of a node other than tombstones: what a test
// that checks "nothing left behind" means by state.
func lockKeys(t *testing.T, rdb *redis.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	all, err := rdb.Keys(ctx, "*").Result()
	require.NoError(t, err)
	var out []string
	for _, k := range all {
		if !strings.Contains(k, "}:gone:") {
			out = append(out, k)
		}
	}
	return out
}

// staleOps are late copies of an owner's calls: the first acquire, a
// watchdog repair (an acquire with the current count) and a renewal, all
// numbered below the owner's release.
func staleOps(key reentrant.Key, owner string) (acquire, repair, renew reentrant.Op) {
	op := reentrant.Op{Key: key, Owner: owner, Lease: 30 * time.Second, Count: 1, Seq: 1}
	acquire, repair, renew = op, op, op
	repair.Seq, renew.Seq = 2, 2
	return acquire, repair, renew
}

// TestTombstoneStaleOpsAfterReleaseChangeNothing: through clients that may
// send a call twice (go-redis's defaults: 3 retries), after Lock and Unlock on 1 and 3 masters, the owner's
// older acquire, repair and renewal land on every node and create nothing;
// the lock reads free everywhere; another owner takes it at once on every
// node; the owner's own next Lock works at once; and the tombstones carry a
// bounded TTL.
func TestTombstoneStaleOpsAfterReleaseChangeNothing(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(itoaName(n), func(t *testing.T) {
			reset(t)
			lc := newLockClientOver(t, defaultClients(t, n), lock.Options{})
			ctx := ctxFor(t, 20*time.Second)
			const name = "tomb:stale"
			key := mustKey(t, name)
			m := lc.NewMutex(name)
			require.NoError(t, m.Lock(ctx))
			require.NoError(t, m.Unlock(ctx))

			acquire, repair, renew := staleOps(key, m.Owner())
			for i := range n {
				node := reentrant.NewNode(cluster.Nodes[i].Direct(), 0)
				for what, op := range map[string]reentrant.Op{"first acquire": acquire, "repair": repair} {
					a, err := node.Acquire(ctx, op)
					require.NoError(t, err, "node %d: %s", i, what)
					require.True(t, a.Stale, "node %d: a late %s is refused as stale", i, what)
					require.False(t, a.Acquired, "node %d: %s", i, what)
					require.Equal(t, time.Duration(-2), a.HolderTTL, "node %d: no holder TTL a waiter would sleep on", i)
				}
				held, err := node.Renew(ctx, renew)
				require.NoError(t, err)
				require.False(t, held, "node %d: a late renewal finds nothing", i)
				batch := node.RenewAll(ctx, []reentrant.Op{renew})
				require.NoError(t, batch[0].Err)
				require.False(t, batch[0].Held, "node %d: a late batched renewal finds nothing", i)

				direct := cluster.Nodes[i].Direct()
				require.Zero(t, direct.Exists(ctx, key.Lock).Val(), "node %d: nothing created", i)
				require.Empty(t, lockKeys(t, direct), "node %d: only the tombstone is left", i)
				ttl := direct.PTTL(ctx, key.Tombstone(m.Owner())).Val()
				require.Greater(t, ttl, time.Duration(0), "node %d: the tombstone expires", i)
				require.LessOrEqual(t, ttl, lock.DefaultLease, "node %d: within the released hold's lease", i)
			}
			locked, err := lc.IsLocked(ctx, name)
			require.NoError(t, err)
			require.False(t, locked, "a tombstone does not make the lock look held")
			ttl, err := lc.TTL(ctx, name)
			require.NoError(t, err)
			require.Zero(t, ttl)

			other := lc.NewMutex(name)
			ok, err := other.TryLock(ctx)
			require.NoError(t, err)
			require.True(t, ok, "another owner acquires at once")
			requireCounts(t, upTo(n), name, other.Owner(), 1)
			// A late copy of the first owner's acquire while the other holds:
			// refused as contention, and the holder is untouched.
			a, err := reentrant.NewNode(cluster.Nodes[0].Direct(), 0).Acquire(ctx, acquire)
			require.NoError(t, err)
			require.False(t, a.Acquired)
			requireCounts(t, upTo(n), name, other.Owner(), 1)
			require.NoError(t, other.Unlock(ctx))

			ok, err = m.TryLock(ctx)
			require.NoError(t, err)
			require.True(t, ok, "the owner's own next Lock (a newer sequence number) works at once")
			requireCounts(t, upTo(n), name, m.Owner(), 1)
			require.NoError(t, m.Unlock(ctx))
			requireFree(t, n, name, time.Second)
		})
	}
}

// TestTombstoneExpires: a tombstone (here left by an Unlock through clients
// that may send a call twice) lives for the released hold's lease and then
// goes, leaving the node empty.
func TestTombstoneExpires(t *testing.T) {
	reset(t)
	lc := newLockClientOver(t, defaultClients(t, 3), lock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	const name, lease = "tomb:expires", 3 * time.Second // the shortest lease the test NodeTimeout allows
	m := lc.NewMutex(name)
	require.NoError(t, m.LockFor(ctx, lease))
	require.NoError(t, m.Unlock(ctx))
	key := mustKey(t, name)
	for i := range 3 {
		ttl := cluster.Nodes[i].Direct().PTTL(ctx, key.Tombstone(m.Owner())).Val()
		require.Greater(t, ttl, time.Duration(0), "node %d: the tombstone is there, with a TTL", i)
		require.LessOrEqual(t, ttl, lease, "node %d: no longer than the lease", i)
	}
	require.Eventually(t, func() bool {
		for i := range 3 {
			if cluster.Nodes[i].Direct().DBSize(ctx).Val() != 0 {
				return false
			}
		}
		return true
	}, 2*lease, 20*time.Millisecond, "every node is empty once the lease has passed")
}

// TestNoTombstoneWhereNoCallCanStray: through clients that never send a
// call twice, an Unlock whose Lock had every node's answer leaves no
// tombstone anywhere (no late copy of the owner's calls can exist): after
// Lock and Unlock on 1 and 3 masters, every node is empty, and the owner
// and another owner lock again at once. Through go-redis's default clients
// (make test-defaults), which retry, each node keeps the owner's tombstone
// and nothing else. A Lock that met a node that did not answer is
// TestTombstoneAcquireArrivingAfterTheReleaseOverAnotherConnection.
func TestNoTombstoneWhereNoCallCanStray(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(itoaName(n), func(t *testing.T) {
			reset(t)
			lc := newLockClient(t, n, lock.Options{})
			ctx := ctxFor(t, 20*time.Second)
			const name = "tomb:none"
			m := lc.NewMutex(name)
			for round := range 3 {
				require.NoError(t, m.Lock(ctx), "round %d", round)
				require.NoError(t, m.Unlock(ctx), "round %d", round)
				var want []string // a client that never retries: nothing left
				if fixture.DefaultClients() {
					want = []string{mustKey(t, name).Tombstone(m.Owner())}
				}
				for i := range n {
					keys, err := cluster.Nodes[i].Direct().Keys(ctx, "*").Result()
					require.NoError(t, err)
					require.ElementsMatch(t, want, keys, "round %d, node %d", round, i)
				}
			}
			requireAnotherOwnerAcquires(t, lc, name, n)
		})
	}
}

// TestTombstoneForceUnlockedOwnerCannotComeBack: the owners a force-unlock
// evicts get tombstones too, so their late acquires are refused, while
// another owner, and their own new Lock, acquire at once.
func TestTombstoneForceUnlockedOwnerCannotComeBack(t *testing.T) {
	reset(t)
	lc := newLockClient(t, 3, lock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	const name = "tomb:forced"
	key := mustKey(t, name)
	m := lc.NewMutex(name)
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Lock(ctx)) // count 2, so the stale copies below are older holds' ops
	require.NoError(t, lc.ForceUnlock(ctx, name))
	requireFree(t, 3, name, time.Second)

	acquire, repair, _ := staleOps(key, m.Owner())
	for i := range 3 {
		node := reentrant.NewNode(cluster.Nodes[i].Direct(), 0)
		for _, op := range []reentrant.Op{acquire, repair} {
			a, err := node.Acquire(ctx, op)
			require.NoError(t, err)
			require.True(t, a.Stale, "node %d: an evicted owner's late acquire is refused", i)
		}
		ttl := cluster.Nodes[i].Direct().PTTL(ctx, key.Tombstone(m.Owner())).Val()
		require.Greater(t, ttl, time.Duration(0), "node %d", i)
		require.LessOrEqual(t, ttl, lock.DefaultLease, "node %d: no longer than the lease the lock had left", i)
	}
	requireFree(t, 3, name, 0)

	requireAnotherOwnerAcquires(t, lc, name, 3)

	// The evicted handle learns of the loss, then locks anew at once.
	require.ErrorIs(t, m.Unlock(ctx), lock.ErrLost)
	_ = m.Unlock(ctx)
	ok, err := m.TryLock(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	requireCounts(t, []int{0, 1, 2}, name, m.Owner(), 1)
	require.NoError(t, m.Unlock(ctx))
}

// delayAcquire is a go-redis hook that holds the first acquire script it
// sees for delay before sending it (whatever its caller's deadline), as a
// congested network would, and reports the node's reply to it. With
// replyLate, the script is sent at once and its reply held for delay
// instead: the call lands, its caller does not hear of it.
type delayAcquire struct {
	delay     time.Duration
	replyLate bool
	armed     atomic.Bool
	reply     chan []int64
}

// lockClientSlowOnNode2 returns a lock Client over c's first 3 nodes whose
// node 2 is reached through a client of its own with hook.
func lockClientSlowOnNode2(t *testing.T, c *fixture.Cluster, hook *delayAcquire) *lock.Client {
	t.Helper()
	slow := c.Nodes[2].Link().NewClient()
	t.Cleanup(func() { _ = slow.Close() })
	slow.AddHook(hook)
	nodes := []redis.UniversalClient{c.Nodes[0].Link().Client(), c.Nodes[1].Link().Client(), slow}
	return newLockClientOver(t, nodes, lock.Options{})
}

func (h *delayAcquire) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *delayAcquire) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !runsScript(cmd, lua.Acquire) || !h.armed.CompareAndSwap(true, false) {
			return next(ctx, cmd)
		}
		if !h.replyLate {
			time.Sleep(h.delay)
		}
		err := next(context.WithoutCancel(ctx), cmd)
		if h.replyLate {
			time.Sleep(h.delay)
		}
		r, _ := cmd.(*redis.Cmd).Int64Slice()
		h.reply <- r
		return err
	}
}

func (h *delayAcquire) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next // a lone call, as the test's is, goes as a single command
}

// TestTombstoneAcquireArrivingAfterTheReleaseOverAnotherConnection is the
// bug seen end to end: on 3 masters, the owner's acquire to one node is held
// up in the network; Lock succeeds on the other two; Unlock's release
// reaches that node first, over another connection; then the acquire lands.
// It must be refused, leaving that node free for the next owner.
func TestTombstoneAcquireArrivingAfterTheReleaseOverAnotherConnection(t *testing.T) {
	c := reset(t)
	ctx := ctxFor(t, 20*time.Second)
	hook := &delayAcquire{delay: time.Second, reply: make(chan []int64, 1)}
	lc := lockClientSlowOnNode2(t, c, hook)
	const name = "tomb:late"

	m := lc.NewMutex(name)
	hook.armed.Store(true)
	require.NoError(t, m.Lock(ctx), "a quorum of two answers")
	require.NoError(t, m.Unlock(ctx))

	select {
	case r := <-hook.reply:
		require.Equal(t, []int64{2, -2}, r[:2], "the late acquire is refused as stale: %v", r)
	case <-ctx.Done():
		t.Fatal("the delayed acquire never came back")
	}
	requireFree(t, 3, name, 0)
	// The tombstone is where the acquire had not answered; where every
	// call answered, a client that never retries needs none.
	tomb := mustKey(t, name).Tombstone(m.Owner())
	for i := range 3 {
		want := i == 2 || fixture.DefaultClients()
		require.Equal(t, want, c.Nodes[i].Direct().Exists(ctx, tomb).Val() == 1, "node %d: a tombstone", i)
	}

	requireAnotherOwnerAcquires(t, lc, name, 3)
}

// TestTombstoneWhereAnAcquireDidNotAnswer: on 3 masters, the owner's
// acquire lands on node 2 at once but its reply is held up, so Lock
// returns on the quorum of nodes 0 and 1 without node 2's answer. That
// acquire counts as a call that may still land (here it landed, which the
// owner cannot tell), so Unlock's release, which finds the hold on node 2,
// buries the owner's number there; on nodes 0 and 1, where every call
// answered, a client that never retries leaves no tombstone. A late copy
// of that acquire is then refused on node 2.
func TestTombstoneWhereAnAcquireDidNotAnswer(t *testing.T) {
	c := reset(t)
	ctx := ctxFor(t, 20*time.Second)
	hook := &delayAcquire{delay: time.Second, replyLate: true, reply: make(chan []int64, 1)}
	lc := lockClientSlowOnNode2(t, c, hook)
	const name = "tomb:unanswered"
	key := mustKey(t, name)

	m := lc.NewMutex(name)
	hook.armed.Store(true)
	require.NoError(t, m.Lock(ctx), "a quorum of two answers")
	select {
	case r := <-hook.reply:
		require.Equal(t, int64(1), r[0], "node 2 took the acquire: %v", r)
	case <-ctx.Done():
		t.Fatal("the held-up reply never came")
	}
	requireCounts(t, []int{0, 1, 2}, name, m.Owner(), 1)
	require.NoError(t, m.Unlock(ctx))
	requireFree(t, 3, name, 0)

	tomb := key.Tombstone(m.Owner())
	for i := range 3 {
		want := i == 2 || fixture.DefaultClients()
		require.Equal(t, want, c.Nodes[i].Direct().Exists(ctx, tomb).Val() == 1, "node %d: a tombstone", i)
	}
	late := reentrant.Op{Key: key, Owner: m.Owner(), Lease: lock.DefaultLease, Count: 1, Seq: 1}
	a, err := reentrant.NewNode(c.Nodes[2].Direct(), 0).Acquire(ctx, late)
	require.NoError(t, err)
	require.True(t, a.Stale, "a late copy of the unanswered acquire is refused")
	requireFree(t, 3, name, 0)
}

// requireAnotherOwnerAcquires asserts that a new owner takes the lock at
// once on every one of the first n nodes, then releases it.
func requireAnotherOwnerAcquires(t *testing.T, lc *lock.Client, name string, n int) {
	t.Helper()
	ctx := ctxFor(t, 5*time.Second)
	other := lc.NewMutex(name)
	ok, err := other.TryLock(ctx)
	require.NoError(t, err)
	require.True(t, ok, "another owner acquires at once")
	requireCounts(t, upTo(n), name, other.Owner(), 1)
	require.NoError(t, other.Unlock(ctx))
}

// upTo returns the node indexes 0..n-1.
func upTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestTombstoneRefusedCopyOfARetriedAcquire: go-redis retries a call whose
// reply did not come over a new connection, so two copies of one acquire
// may be on their way and the owner reads only one reply. When the copy it
// reads was refused (another owner held the lock), the owner counts the
// node as refused and never undoes anything there; the other copy, landing
// after the holder's release, must then not take the lock. For each acquire
// script (a Mutex's, an RWMutex's read hold, a semaphore's): the refusal,
// through a client that retries, buries the call's sequence number, and the
// same call landing once the lock is free is refused as stale and leaves
// the lock free. Through a client that never retries the refusal writes
// nothing (no copy can follow), and the same call then takes the lock.
func TestTombstoneRefusedCopyOfARetriedAcquire(t *testing.T) {
	c := reset(t)
	ctx := ctxFor(t, 20*time.Second)
	addr := c.Nodes[0].Addr()
	retrying := redis.NewClient(&redis.Options{Addr: addr}) // go-redis's defaults: 3 retries
	t.Cleanup(func() { _ = retrying.Close() })
	once := redis.NewClient(fixture.FixtureOptions(addr)) // MaxRetries -1
	t.Cleanup(func() { _ = once.Close() })
	direct := c.Nodes[0].Direct()

	lockKey, semKey := mustKey(t, "tomb:twice"), mustSemKey(t, "tomb:twice:sem")
	cases := []struct {
		name string
		key  reentrant.Key
		// holder is the op that makes the lock not free for waiter.
		holder, waiter func(owner string) reentrant.Op
		tomb           func(owner string) string
	}{
		{"mutex", lockKey,
			func(o string) reentrant.Op {
				return reentrant.Op{Key: lockKey, Owner: o, Lease: 30 * time.Second, Count: 1, Seq: 1}
			},
			func(o string) reentrant.Op {
				return reentrant.Op{Key: lockKey, Owner: o, Lease: 30 * time.Second, Count: 1, Seq: 7}
			},
			lockKey.Tombstone},
		{"read hold", lockKey,
			func(o string) reentrant.Op {
				return reentrant.Op{Key: lockKey, Owner: o, Lease: 30 * time.Second, Count: 1, Seq: 1}
			},
			func(o string) reentrant.Op {
				return reentrant.Op{Key: lockKey, Owner: o, Lease: 30 * time.Second, Count: 1, Seq: 7, Mode: reentrant.Read}
			},
			lockKey.ReadTombstone},
		{"semaphore", semKey,
			func(o string) reentrant.Op {
				return reentrant.Op{Key: semKey, Owner: o, Lease: 30 * time.Second, Count: 1, Seq: 1, Mode: reentrant.Semaphore, Permits: 1, Capacity: 1}
			},
			func(o string) reentrant.Op {
				return reentrant.Op{Key: semKey, Owner: o, Lease: 30 * time.Second, Count: 1, Seq: 7, Mode: reentrant.Semaphore, Permits: 1, Capacity: 1}
			},
			semKey.Tombstone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, client := range []struct {
				name    string
				rdb     *redis.Client
				retries bool
			}{{"retrying client", retrying, true}, {"client without retries", once, false}} {
				require.NoError(t, direct.FlushAll(ctx).Err())
				holderNode, waiterNode := reentrant.NewNode(once, 0), reentrant.NewNode(client.rdb, 0)
				holder, waiter := tc.holder("h:1"), tc.waiter("w:1")

				a, err := holderNode.Acquire(ctx, holder)
				require.NoError(t, err)
				require.True(t, a.Acquired, "%s: the holder takes it", client.name)

				a, err = waiterNode.Acquire(ctx, waiter)
				require.NoError(t, err)
				require.False(t, a.Acquired, "%s: refused while held", client.name)
				require.False(t, a.Stale, "%s: refused as contention", client.name)
				tombs := direct.Exists(ctx, tc.tomb(waiter.Owner)).Val()
				if !client.retries {
					require.Zero(t, tombs, "%s: a refusal writes nothing when no copy can follow", client.name)
				} else {
					require.EqualValues(t, 1, tombs, "%s: the refusal buries the call", client.name)
					ttl := direct.PTTL(ctx, tc.tomb(waiter.Owner)).Val()
					require.Greater(t, ttl, time.Duration(0), "%s: the tombstone expires", client.name)
					require.LessOrEqual(t, ttl, waiter.Lease, "%s: within the call's lease", client.name)
				}

				release := holder
				release.Count, release.Seq = 0, 2
				r, err := holderNode.Release(ctx, release, "rel")
				require.NoError(t, err)
				require.Equal(t, reentrant.Released, r, "%s", client.name)

				// The other copy of the waiter's call lands now.
				a, err = waiterNode.Acquire(ctx, waiter)
				require.NoError(t, err)
				if client.retries {
					require.True(t, a.Stale, "%s: the later copy is refused as stale: %+v", client.name, a)
					require.False(t, a.Acquired, "%s", client.name)
					left := direct.Keys(ctx, "*").Val()
					require.ElementsMatch(t, []string{tc.tomb(waiter.Owner), tc.key.Tombstone(holder.Owner)}, left,
						"%s: the lock stays free, only the two owners' tombstones are left", client.name)
				} else {
					require.True(t, a.Acquired, "%s: no guard without retries: %+v", client.name, a)
				}
			}
		})
	}
}

// TestReleaseSentTwiceIsNotALoss: go-redis sends a call again when its
// reply did not come (MaxRetries), so a release to 0 may land twice: the
// first copy frees the hold, and the second finds nothing of its owner.
// That second copy answers "released", as the first did, since the
// owner's tombstone already carries its number; only a release that finds
// nothing and no such number answers "not held" (a lost lock). For the
// three release scripts (a Mutex's, a read hold's, a semaphore's), each
// run through reentrant.Node.
func TestReleaseSentTwiceIsNotALoss(t *testing.T) {
	c := reset(t)
	ctx := ctxFor(t, 20*time.Second)
	node := reentrant.NewNode(c.Nodes[0].Direct(), 0)
	lockKey, semKey := mustKey(t, "tomb:sent-twice"), mustSemKey(t, "tomb:sent-twice:sem")
	for _, tc := range []struct {
		name string
		op   reentrant.Op
	}{
		{"mutex", reentrant.Op{Key: lockKey, Lease: 30 * time.Second}},
		{"read hold", reentrant.Op{Key: lockKey, Lease: 30 * time.Second, Mode: reentrant.Read}},
		{"semaphore", reentrant.Op{Key: semKey, Lease: 30 * time.Second, Mode: reentrant.Semaphore, Permits: 1, Capacity: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, c.Nodes[0].Direct().FlushAll(ctx).Err())
			acquire := tc.op
			acquire.Owner, acquire.Count, acquire.Seq = "twice:1", 1, 1
			a, err := node.Acquire(ctx, acquire)
			require.NoError(t, err)
			require.True(t, a.Acquired)

			release := acquire
			release.Count, release.Seq = 0, 2
			for copyNo := 1; copyNo <= 2; copyNo++ {
				r, err := node.Release(ctx, release, "twice:1/2")
				require.NoError(t, err)
				require.Equal(t, reentrant.Released, r, "copy %d of the release", copyNo)
			}

			// An owner that never held the lock here, with nothing buried.
			never := release
			never.Owner, never.Seq = "never:1", 5
			r, err := node.Release(ctx, never, "never:1/5")
			require.NoError(t, err)
			require.Equal(t, reentrant.NotHeld, r, "nothing held and nothing released before")
		})
	}
}

// TestUnlockWhoseReleasesLandedTwiceHoldsNoLoss: every release to 2 of 3
// nodes is sent twice, as go-redis does when a reply is lost, so those two
// nodes answer the Unlock with the second copy. The Unlock succeeds and no
// loss is signalled: two "not held" answers out of three used to read as a
// lock lost before the Unlock.
func TestUnlockWhoseReleasesLandedTwiceHoldsNoLoss(t *testing.T) {
	c := reset(t)
	ctx := ctxFor(t, 20*time.Second)
	nodes := make([]redis.UniversalClient, 3)
	for i := range nodes {
		// Clients that retry, as those that send a call twice do: a
		// client that never retries releases without a tombstone where
		// every call answered, and its releases land once.
		cl := c.Nodes[i].Link().NewClient(func(o *redis.Options) { o.MaxRetries = 1 })
		t.Cleanup(func() { _ = cl.Close() })
		if i > 0 {
			cl.AddHook(sendTwice{script: lua.Release})
		}
		nodes[i] = cl
	}
	require.NoError(t, c.Warm(ctx))
	lc := newLockClientOver(t, nodes, lock.Options{})
	m := lc.NewMutex("released-twice")
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx), "the second copies of the releases are not a loss")
	require.Zero(t, lc.Stats().Losses, "a loss was signalled")
	requireFree(t, 3, "released-twice", 2*time.Second)
}

// sendTwice is a go-redis hook that runs every call or pipeline that
// carries script twice and keeps the second replies: the first copy
// lands, its reply is as good as lost.
type sendTwice struct{ script *lua.Script }

func (s sendTwice) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s sendTwice) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if s.runs(cmd) {
			_ = next(ctx, cmd)
		}
		return next(ctx, cmd)
	}
}

func (s sendTwice) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, s.runs) {
			_ = next(ctx, cmds)
		}
		return next(ctx, cmds)
	}
}

func (s sendTwice) runs(cmd redis.Cmder) bool { return runsScript(cmd, s.script) }
