package kinds

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/lock"
)

// resetSentinels empties every group and brings replication back.
func resetSentinels(t *testing.T) {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	for _, g := range sentinels.Groups {
		require.NoError(t, g.RestoreReplication(ctx))
		require.NoError(t, g.FlushAll(ctx))
	}
}

// masters returns each group's current master.
func masters(ctx context.Context, t *testing.T) []*fixture.Server {
	t.Helper()
	out := make([]*fixture.Server, len(sentinels.Groups))
	for i, g := range sentinels.Groups {
		m, err := g.Master(ctx)
		require.NoError(t, err)
		out[i] = m
	}
	return out
}

// Three failover clients of three groups are three independent nodes: New
// accepts them (it used to call them one server), and the lock, with its
// hold count, lives on each group's master and its replica.
func TestFailoverClientsAsNodes(t *testing.T) {
	resetSentinels(t)
	ctx := testCtx(t, 30*time.Second)
	rdbs := sentinels.Clients()
	closeLater(t, rdbs...)
	c := newLockClient(t, lock.Options{Nodes: universal(rdbs...)})
	warm(ctx, t, c)

	const name = "kinds-failover-basic"
	m := c.NewMutex(name)
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Lock(ctx))
	for _, g := range sentinels.Groups {
		master, err := g.Master(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 2, holdCount(ctx, t, master.Direct(), name, m.Owner()), "%s master", g.Name)
		// Replication is asynchronous: WAIT for it before reading the replica.
		require.NoError(t, master.Direct().Wait(ctx, 1, time.Second).Err())
		replica, err := g.Replica(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 2, holdCount(ctx, t, replica.Direct(), name, m.Owner()), "%s replica", g.Name)
	}
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, m.Unlock(ctx))
	for i, master := range masters(ctx, t) {
		n, err := master.Direct().Exists(ctx, lockKey(name)).Result()
		require.NoError(t, err)
		require.Zero(t, n, "group %d still has the lock", i)
	}
}

// A server given twice is found at the first operation, by run_id, whatever
// the clients look like: two failover clients of one group, or one master
// as "localhost" and as "127.0.0.1". The error names both nodes, every
// operation returns it, and nothing is written anywhere.
func TestDuplicateServersFoundAtFirstContact(t *testing.T) {
	resetSentinels(t)
	ctx := testCtx(t, 30*time.Second)
	const name = "kinds-duplicate"

	check := func(t *testing.T, nodes []redis.UniversalClient, want string, servers []*redis.Client) {
		c, err := lock.New(lock.Options{Nodes: nodes})
		require.NoError(t, err, "New cannot know; the servers can")
		t.Cleanup(func() { require.NoError(t, c.Close()) })
		m := c.NewMutex(name)
		_, err = m.TryLock(ctx)
		require.ErrorIs(t, err, lock.ErrInvalidArgument)
		require.Contains(t, err.Error(), want)
		require.Contains(t, err.Error(), "same server (run_id ")
		require.ErrorIs(t, m.Lock(ctx), lock.ErrInvalidArgument, "every later operation fails too")
		_, err = c.Inspect(ctx, name)
		require.ErrorIs(t, err, lock.ErrInvalidArgument)
		require.ErrorIs(t, c.ForceUnlock(ctx, name), lock.ErrInvalidArgument)
		for _, s := range servers {
			n, err := s.Exists(ctx, lockKey(name)).Result()
			require.NoError(t, err)
			require.Zero(t, n, "%s: the lock was written", s.Options().Addr)
		}
	}

	t.Run("two failover clients of one group", func(t *testing.T) {
		g0, g1 := sentinels.Groups[0], sentinels.Groups[1]
		a, b, again := g0.NewClient(), g1.NewClient(), g0.NewClient()
		closeLater(t, a, b, again)
		var servers []*redis.Client
		for _, m := range masters(ctx, t) {
			servers = append(servers, m.Direct())
		}
		check(t, universal(a, b, again), "nodes 0 (sentinel failover client) and 2 (sentinel failover client)", servers)
	})

	t.Run("localhost and 127.0.0.1", func(t *testing.T) {
		require.NoError(t, plain.FlushAll(ctx))
		s0, s1 := plain.List[0], plain.List[1]
		byName := redis.NewClient(fixture.ClientOptions("localhost:" + strconv.Itoa(s0.Port())))
		byIP := redis.NewClient(fixture.ClientOptions(s0.Addr()))
		other := redis.NewClient(fixture.ClientOptions(s1.Addr()))
		closeLater(t, byName, byIP, other)
		check(t, universal(byName, other, byIP), "nodes 0 (localhost:"+strconv.Itoa(s0.Port())+") and 2 ("+s0.Addr()+")",
			[]*redis.Client{s0.Direct(), s1.Direct()})
	})
}

// The failover race of asynchronous replication, with the lock held and
// waited on: group 0's replica stops receiving writes, the holder locks
// (the lock reaches group 0's master but not its replica), two other
// processes wait, and the replica is promoted while groups 1 and 2 stay
// up, either on request (SENTINEL FAILOVER) or by the sentinel itself once
// the master stops answering (docker pause). The holder's quorum (groups 1
// and 2) carries the lock through; the watchdog's renewal finds group 0's
// new master without it and repairs it; no waiter gets in while the holder
// holds, and both get the lock in turn once it unlocks.
func TestSentinelFailoverKeepsLocks(t *testing.T) {
	t.Run("SENTINEL FAILOVER", func(t *testing.T) {
		failoverScenario(t, func(ctx context.Context, g *fixture.SentinelGroup, _ *fixture.Server) (*fixture.Server, func() error) {
			promoted, err := g.Failover(ctx)
			require.NoError(t, err)
			return promoted, func() error { return nil }
		})
	})
	t.Run("master paused", func(t *testing.T) {
		failoverScenario(t, func(ctx context.Context, g *fixture.SentinelGroup, old *fixture.Server) (*fixture.Server, func() error) {
			require.NoError(t, old.Pause(ctx))
			heal := func() error {
				bg, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := old.Unpause(bg); err != nil {
					return err
				}
				return g.Rejoin(bg, old)
			}
			t.Cleanup(func() { _ = heal() }) // on failure; a second unpause fails harmlessly
			promoted, err := g.AwaitFailover(ctx, old)
			require.NoError(t, err)
			return promoted, heal
		})
	})
}

// failoverScenario runs the test above with fail as the fault: it makes
// group g, whose master is old, fail over, and returns the promoted server
// and a heal function to call once the locks are released.
func failoverScenario(t *testing.T, fail func(ctx context.Context, g *fixture.SentinelGroup, old *fixture.Server) (*fixture.Server, func() error)) {
	resetSentinels(t)
	ctx := testCtx(t, 60*time.Second)
	const (
		name  = "kinds-failover"
		lease = 1500 * time.Millisecond // renewed every 500ms
	)
	newProcess := func() *lock.Client {
		rdbs := sentinels.Clients()
		closeLater(t, rdbs...)
		c := newLockClient(t, lock.Options{Nodes: universal(rdbs...), Lease: lease, NodeTimeout: 150 * time.Millisecond})
		warm(ctx, t, c) // dial through the sentinels now, not during the failover
		return c
	}
	holder, waiters := newProcess(), []*lock.Client{newProcess(), newProcess()}

	g0 := sentinels.Groups[0]
	replica, err := g0.CutReplication(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = g0.RestoreReplication(context.Background()) })
	oldMaster, err := g0.Master(ctx)
	require.NoError(t, err)

	hold := holder.NewMutex(name)
	require.NoError(t, hold.Lock(ctx))
	// A second lock, held twice, nobody waiting: its count must come back too.
	nested := holder.NewMutex(name + "-nested")
	require.NoError(t, nested.Lock(ctx))
	require.NoError(t, nested.Lock(ctx))
	require.EqualValues(t, 1, holdCount(ctx, t, oldMaster.Direct(), name, hold.Owner()))
	require.EqualValues(t, 2, holdCount(ctx, t, oldMaster.Direct(), nested.Name(), nested.Owner()))
	time.Sleep(100 * time.Millisecond)
	require.Zero(t, holdCount(ctx, t, replica.Direct(), name, hold.Owner()), "the replica must not have seen the lock")
	require.Zero(t, holdCount(ctx, t, replica.Direct(), nested.Name(), nested.Owner()), "the replica must not have seen the lock")

	var (
		ex       exclusion
		wg       sync.WaitGroup
		acquired = make(chan string, len(waiters))
		errs     = make(chan error, len(waiters))
	)
	for _, w := range waiters {
		wg.Go(func() {
			m := w.NewMutex(name)
			if err := m.Lock(ctx); err != nil {
				errs <- err
				return
			}
			ex.enter()
			time.Sleep(50 * time.Millisecond)
			ex.leave()
			acquired <- m.Owner()
			if err := m.Unlock(context.Background()); err != nil {
				errs <- err
			}
		})
	}
	require.Eventually(t, func() bool {
		return waiters[0].Stats().Sleeping+waiters[1].Stats().Sleeping == 2
	}, 5*time.Second, 10*time.Millisecond, "both waiters asleep on the release channel")

	began := time.Now()
	promoted, heal := fail(ctx, g0, oldMaster)
	require.Equal(t, replica, promoted)
	t.Logf("failover of %s done in %v", g0.Name, time.Since(began).Round(time.Millisecond))

	// The renewal finds the new master without the lock while groups 1 and
	// 2 hold it, and writes it back. With go-redis default clients a call
	// still stuck on the old master holds its connection for the client's
	// 3 s read timeout (and its retries), whatever relock's ctx says, so the
	// repair may come a few of those later.
	repairWithin := 4 * lease
	if fixture.DefaultClients() {
		repairWithin += 4 * 3 * time.Second
	}
	require.Eventually(t, func() bool {
		return holdCount(ctx, t, promoted.Direct(), name, hold.Owner()) == 1 &&
			holdCount(ctx, t, promoted.Direct(), nested.Name(), nested.Owner()) == 2
	}, repairWithin, 20*time.Millisecond, "the watchdog did not repair the promoted master")
	ttl, err := promoted.Direct().PTTL(ctx, lockKey(name)).Result()
	require.NoError(t, err)
	require.Positive(t, ttl)

	// Several leases later the holder still holds, and nobody else got in.
	time.Sleep(2 * lease)
	select {
	case <-hold.Lost():
		t.Fatal("the holder lost the lock")
	default:
	}
	require.Zero(t, ex.entries.Load(), "a waiter got the lock while it was held")
	for _, m := range masters(ctx, t) {
		require.EqualValues(t, 1, holdCount(ctx, t, m.Direct(), name, hold.Owner()), m.Name())
		require.EqualValues(t, 2, holdCount(ctx, t, m.Direct(), nested.Name(), nested.Owner()), m.Name())
	}
	require.NoError(t, nested.Unlock(ctx))
	require.NoError(t, nested.Unlock(ctx))

	require.NoError(t, hold.Unlock(ctx))
	unlocked := time.Now()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the waiters did not get the lock")
	}
	t.Logf("both waiters held and released the lock %v after the holder's unlock", time.Since(unlocked).Round(time.Millisecond))
	require.NoError(t, heal())
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, acquired, len(waiters), "every waiter got the lock")
	require.EqualValues(t, 1, ex.most.Load(), "two holders at once")
	for _, m := range masters(ctx, t) {
		n, err := m.Direct().Exists(ctx, lockKey(name)).Result()
		require.NoError(t, err)
		require.Zero(t, n, "%s still has the lock", m.Name())
	}
}
