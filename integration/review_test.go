package integration_test

// Regression tests for defects a review confirmed (issue 10): each failed
// before its fix.

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/reentrant"
)

// TestDoReleasesWhenFnPanics: a panicking fn, recovered by the caller (as
// net/http does), must not leave the lock held and renewed until Close; the
// panic reaches the caller unchanged.
func TestDoReleasesWhenFnPanics(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		c := newLockClient(t, n, lock.Options{Lease: 3 * time.Second})
		ctx := ctxFor(t, 10*time.Second)

		recovered := func() (r any) {
			defer func() { r = recover() }()
			_ = c.Do(ctx, "do-panic", func(context.Context) error { panic("boom") })
			return nil
		}()
		require.Equal(t, "boom", recovered, "Do must re-raise fn's panic")

		locked, err := c.IsLocked(ctx, "do-panic")
		require.NoError(t, err)
		require.False(t, locked, "the lock outlived Do's panicking fn")
		other := newLockClient(t, n, lock.Options{})
		ok, err := other.NewMutex("do-panic").TryLock(ctx)
		require.NoError(t, err)
		require.True(t, ok, "another owner must get the lock at once")
	})
}

// TestUnlockAfterCloseReturnsErrClosed: Close released the hold; a later
// Unlock says the Client is closed instead of sending anything.
func TestUnlockAfterCloseReturnsErrClosed(t *testing.T) {
	reset(t)
	c := newLockClient(t, 3, lock.Options{})
	ctx := ctxFor(t, 5*time.Second)
	m := c.NewMutex("unlock-after-close")
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, c.Close())
	require.ErrorIs(t, m.Unlock(ctx), lock.ErrClosed)
	requireFree(t, 3, "unlock-after-close", time.Second)
}

// TestIsLockedNeedsOneOwnerOnAQuorum: nodes held by different owners are not
// "some owner holds it on a quorum".
func TestIsLockedNeedsOneOwnerOnAQuorum(t *testing.T) {
	reset(t)
	c := newLockClient(t, 3, lock.Options{})
	ctx := ctxFor(t, 5*time.Second)
	// Three owners, one node each: no owner has a quorum.
	for i, owner := range []string{"a:1", "b:2", "c:3"} {
		require.NoError(t, cluster.Nodes[i].Direct().HSet(ctx, "relock:{split}", owner, 1).Err())
		require.NoError(t, cluster.Nodes[i].Direct().PExpire(ctx, "relock:{split}", 10*time.Second).Err())
	}
	locked, err := c.IsLocked(ctx, "split")
	require.NoError(t, err)
	require.False(t, locked, "no owner holds the lock on a quorum")
	ttl, err := c.TTL(ctx, "split")
	require.NoError(t, err)
	require.Zero(t, ttl, "a lock no owner holds on a quorum has no TTL")

	// The same owner on two nodes of three: held.
	require.NoError(t, cluster.Nodes[1].Direct().HSet(ctx, "relock:{split}", "a:1", 1).Err())
	require.NoError(t, cluster.Nodes[1].Direct().HDel(ctx, "relock:{split}", "b:2").Err())
	locked, err = c.IsLocked(ctx, "split")
	require.NoError(t, err)
	require.True(t, locked)
}

// TestTTLReportsNoExpiry: a holder key without a TTL (written by someone
// else) is reported as lock.NoExpiry, not as 0 (which means free).
func TestTTLReportsNoExpiry(t *testing.T) {
	reset(t)
	c := newLockClient(t, 3, lock.Options{})
	ctx := ctxFor(t, 5*time.Second)
	for i := range 3 {
		require.NoError(t, cluster.Nodes[i].Direct().HSet(ctx, "relock:{forever}", "someone:else", 1).Err())
	}
	ttl, err := c.TTL(ctx, "forever")
	require.NoError(t, err)
	require.Equal(t, lock.NoExpiry, ttl)
	locked, err := c.IsLocked(ctx, "forever")
	require.NoError(t, err)
	require.True(t, locked)
}

// TestLockOnForeignDataFailsAtOnce: a key holding someone else's data is a
// permanent failure; Lock must not retry it until ctx ends.
func TestLockOnForeignDataFailsAtOnce(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		for i := range n {
			require.NoError(t, cluster.Nodes[i].Direct().Set(context.Background(), "relock:{foreign}", "not a lock", 0).Err())
		}
		c := newLockClient(t, n, lock.Options{})
		ctx := ctxFor(t, 10*time.Second)
		start := time.Now()
		err := c.NewMutex("foreign").Lock(ctx)
		require.ErrorIs(t, err, lock.ErrWrongType)
		require.NotErrorIs(t, err, context.DeadlineExceeded)
		require.Less(t, time.Since(start), 5*time.Second, "Lock retried a permanent error")
		require.LessOrEqual(t, c.Stats().Attempts, uint64(2), "a permanent error needs no retry")
		ok, err := c.NewMutex("foreign").TryLock(ctx)
		require.False(t, ok)
		require.ErrorIs(t, err, lock.ErrWrongType)
		for i := range n {
			v, err := cluster.Nodes[i].Direct().Get(ctx, "relock:{foreign}").Result()
			require.NoError(t, err)
			require.Equal(t, "not a lock", v, "node %d: foreign data changed", i)
		}
	})
}

// TestCloseEndsWaitingLock: a Lock waiting behind another Client's holder
// returns ErrClosed as soon as its own Client closes, and sends no more
// attempts.
func TestCloseEndsWaitingLock(t *testing.T) {
	reset(t)
	holderClient := newLockClient(t, 3, lock.Options{})
	waiterClient := newLockClient(t, 3, lock.Options{RetryDelay: 10 * time.Millisecond})
	ctx := ctxFor(t, 20*time.Second)
	holder := holderClient.NewMutex("close-waiting")
	require.NoError(t, holder.Lock(ctx))

	done := make(chan error, 1)
	go func() { done <- waiterClient.NewMutex("close-waiting").Lock(ctx) }()
	require.Eventually(t, func() bool { return waiterClient.Stats().Sleeping == 1 }, 5*time.Second, 5*time.Millisecond)

	closedAt := time.Now()
	require.NoError(t, waiterClient.Close())
	attempts := waiterClient.Stats().Attempts
	select {
	case err := <-done:
		require.ErrorIs(t, err, lock.ErrClosed)
		require.Less(t, time.Since(closedAt), 2*time.Second)
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting Lock ignored Close")
	}
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, attempts, waiterClient.Stats().Attempts, "attempts sent after Close")
	require.NoError(t, holder.Unlock(ctx))
}

// TestCloseRacingLockLeavesNoHold: Locks woken while Close runs either end
// before Close takes stock (and Close releases their holds) or return
// ErrClosed; none keeps a hold that Close did not release, and nothing is
// left on any node.
func TestCloseRacingLockLeavesNoHold(t *testing.T) {
	reset(t)
	ctx := ctxFor(t, 30*time.Second)
	for round := range 5 {
		holderClient := newLockClient(t, 3, lock.Options{})
		waiterClient := newLockClient(t, 3, lock.Options{})
		holder := holderClient.NewMutex("close-race")
		require.NoError(t, holder.Lock(ctx))

		const waiters = 4
		var wg sync.WaitGroup
		var mu sync.Mutex
		var won []*lock.Mutex
		for range waiters {
			wg.Go(func() {
				m := waiterClient.NewMutex("close-race")
				switch err := m.Lock(ctx); {
				case err == nil:
					mu.Lock()
					won = append(won, m)
					mu.Unlock()
				case !errors.Is(err, lock.ErrClosed):
					t.Errorf("round %d: Lock: %v", round, err)
				}
			})
		}
		require.Eventually(t, func() bool { return waiterClient.Stats().Sleeping == waiters }, 5*time.Second, 5*time.Millisecond)
		// The release wakes a waiter while Close runs.
		go func() { _ = holder.Unlock(ctx) }()
		require.NoError(t, waiterClient.Close())
		wg.Wait()
		for _, m := range won {
			require.Zero(t, m.HoldCount(), "round %d: a Lock won a hold that Close never released", round)
		}
		requireFree(t, 3, "close-race", 2*time.Second)
	}
}

// endsAtAttempt is a context for TestConsumedWakeIsPassedOn: once armed,
// Err reports Canceled while Done stays open. That is the moment a real
// deadline can hit: after a waiter took a release's wake, before its attempt
// sends anything. (Done never closing keeps the waiter's sleep undisturbed.)
type endsAtAttempt struct {
	context.Context
	armed atomic.Bool
}

func (c *endsAtAttempt) Err() error {
	if c.armed.Load() {
		return context.Canceled
	}
	return c.Context.Err()
}

// TestConsumedWakeIsPassedOn: a waiter that takes a release's wake and then
// ends before its attempt sends anything hands the wake on, so the next
// waiter gets the lock at once instead of sleeping the holder's lease.
func TestConsumedWakeIsPassedOn(t *testing.T) {
	reset(t)
	holderClient := newLockClient(t, 3, lock.Options{})
	waiterClient := newLockClient(t, 3, lock.Options{})
	ctx := ctxFor(t, 60*time.Second)
	holder := holderClient.NewMutex("pass-wake")
	require.NoError(t, holder.Lock(ctx))

	first := &endsAtAttempt{Context: ctx}
	firstDone := make(chan error, 1)
	go func() { firstDone <- waiterClient.NewMutex("pass-wake").Lock(first) }()
	require.Eventually(t, func() bool { return waiterClient.Stats().Sleeping == 1 }, 5*time.Second, 5*time.Millisecond)
	secondDone := make(chan error, 1)
	go func() { secondDone <- waiterClient.NewMutex("pass-wake").Lock(ctx) }()
	require.Eventually(t, func() bool { return waiterClient.Stats().Sleeping == 2 }, 5*time.Second, 5*time.Millisecond)

	first.armed.Store(true) // the oldest waiter gets the wake and ends
	released := time.Now()
	require.NoError(t, holder.Unlock(ctx))
	require.ErrorIs(t, <-firstDone, context.Canceled)
	select {
	case err := <-secondDone:
		require.NoError(t, err)
		t.Logf("the second waiter got the lock %v after the release", time.Since(released))
	case <-time.After(10 * time.Second): // the holder's lease was 30 s
		t.Fatal("the wake the first waiter took was lost: the second waiter sleeps the holder's lease")
	}
}

// TestLateSubscriptionConfirmationWakesWaiter: the Pub/Sub connection of a
// cold Client opens slowly (TLS, a distant node), so Subscribe gives up
// waiting for its confirmation; a release published before the subscription
// exists is lost, and the confirmation that comes later must wake the waiter
// to retry, instead of leaving it asleep for the holder's whole lease.
func TestLateSubscriptionConfirmationWakesWaiter(t *testing.T) {
	reset(t)
	ctx := ctxFor(t, 30*time.Second)
	const dialDelay = 600 * time.Millisecond
	var slowDials atomic.Bool
	opts := fixture.ClientOptions(cluster.Nodes[0].Addr())
	opts.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if slowDials.Load() {
			time.Sleep(dialDelay)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	// Command connections are open already; only the Pub/Sub one is new.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { require.NoError(t, rdb.Ping(ctx).Err()) })
	}
	wg.Wait()
	slowDials.Store(true)

	holderClient := newLockClient(t, 1, lock.Options{Lease: 3 * time.Second})
	waiterClient := newLockClientOver(t, []redis.UniversalClient{rdb}, lock.Options{Lease: 3 * time.Second, NodeTimeout: 100 * time.Millisecond})
	holder := holderClient.NewMutex("late-confirm")
	require.NoError(t, holder.Lock(ctx))

	got := make(chan time.Time, 1)
	go func() {
		if err := waiterClient.NewMutex("late-confirm").Lock(ctx); err != nil {
			t.Errorf("waiter: %v", err)
		}
		got <- time.Now()
	}()
	// Asleep after the retry that decided to wait, while its Pub/Sub
	// connection is still being dialled: the release is published unheard.
	require.Eventually(t, func() bool { return waiterClient.Stats().Sleeping == 1 }, 5*time.Second, time.Millisecond)
	released := time.Now()
	require.NoError(t, holder.Unlock(ctx))
	select {
	case at := <-got:
		t.Logf("the waiter got the lock %v after the release (dial delay %v, lease 3s)", at.Sub(released), dialDelay)
		require.Less(t, at.Sub(released), 2*time.Second, "woken by the holder's lease running out, not by the release")
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter never got the lock")
	}
}

// TestReentryOfVanishedHoldIsLost: the holder's hold was taken from it
// (force-unlocked, as when its lease ran out during a stall) and another
// owner held the lock in between. A re-entry must not create the hold again
// on the free nodes: it reports the loss, closes Lost(), and leaves nothing
// on any node.
func TestReentryOfVanishedHoldIsLost(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		ctx := ctxFor(t, 10*time.Second)
		const name = "reentry-vanished"
		holder := newLockClient(t, n, lock.Options{Lease: 5 * time.Second}).NewMutex(name, lock.WithFencing(lock.CounterTokens))
		require.NoError(t, holder.Lock(ctx))
		lost := holder.Lost()

		other := newLockClient(t, n, lock.Options{Lease: 5 * time.Second})
		require.NoError(t, other.ForceUnlock(ctx, name))
		next := other.NewMutex(name, lock.WithFencing(lock.CounterTokens))
		require.NoError(t, next.Lock(ctx))
		require.Greater(t, next.Token(), holder.Token())
		require.NoError(t, next.Unlock(ctx))

		require.ErrorIs(t, holder.Lock(ctx), lock.ErrLost, "a re-entry brought back a hold another owner had taken over")
		select {
		case <-lost:
		default:
			t.Fatal("Lost() still open after the re-entry found the hold gone")
		}
		requireFree(t, n, name, 2*time.Second)
		// The failed re-entry added no hold: the first Lock's Unlock balances.
		require.Equal(t, 1, holder.HoldCount())
		require.ErrorIs(t, holder.Unlock(ctx), lock.ErrLost)
		require.Zero(t, holder.HoldCount())
	})
}

// TestReentryInFlightWhenTheLossIsReportedIsLost: the watchdog reports an
// expiring hold a little before its ValidUntil (lossEarly). A re-entry sent
// before that report, whose reply comes back after it, must not count, though
// the node took it (the request came before the node's lease ended): the
// owner was told the hold is lost, and nothing renews it any more. Before
// 2026-12-06 that Lock returned nil with Lost() closed, and the node kept
// the lock for a whole lease more.
func TestReentryInFlightWhenTheLossIsReportedIsLost(t *testing.T) {
	c := reset(t)
	ctx := ctxFor(t, 30*time.Second)
	const (
		name  = "reentry-in-flight"
		lease = 10 * time.Second       // at least 10 × the node timeout
		slow  = 400 * time.Millisecond // every reply's delay (below the clients' 500 ms read timeout), the requests' none
	)
	require.NoError(t, c.Nodes[0].Slow(slow))
	t.Cleanup(func() { _ = c.Nodes[0].Heal() })
	// A connection set up through the slow link first (its HELLO pays the
	// delay too), so that each call below costs one delayed reply.
	require.NoError(t, cluster.Clients()[0].Ping(ctx).Err())
	m := newLockClient(t, 1, lock.Options{NodeTimeout: time.Second}).NewMutex(name)
	require.NoError(t, m.LockFor(ctx, lease)) // no renewal: only the deadline's watch
	lost := m.Lost()
	// Sent 200 ms before ValidUntil, the re-entry lands on the node before
	// the lease ends there, and its reply comes back 200 ms after
	// ValidUntil: 300 ms after the loss report, which a loaded machine may
	// run late. (A sleep that overran ValidUntil meets the expired hold
	// before sending anything: ErrLost too.)
	time.Sleep(time.Until(m.ValidUntil().Add(-200 * time.Millisecond)))
	require.ErrorIs(t, m.Lock(ctx), lock.ErrLost, "a re-entry counted on a hold already reported lost")
	select {
	case <-lost:
	default:
		t.Fatal("Lost() still open")
	}
	require.Equal(t, 1, m.HoldCount(), "the failed re-entry added a hold")
	require.NoError(t, c.Nodes[0].Heal())
	requireFree(t, 1, name, 2*time.Second) // cleared at once, not a lease later
	require.ErrorIs(t, m.Unlock(ctx), lock.ErrLost)
	require.Zero(t, m.HoldCount())
}

// TestLossClearsALeaseATimedOutCallSetAnew: a re-entry that got no reply
// in time (here its reply is held up) still landed, and set the lease anew
// on the node, as the undo after it did; the owner's validity did not move.
// When the watchdog then reports the hold lost, it clears the node. Before
// 2026-12-06 the node kept the lock about two seconds past the loss here,
// the time between the re-entry and the end of the first lease, and a
// whole lease at worst, until the owner's Unlock.
func TestLossClearsALeaseATimedOutCallSetAnew(t *testing.T) {
	c := reset(t)
	ctx := ctxFor(t, 30*time.Second)
	const name, lease = "loss-clears", 4 * time.Second
	m := newLockClient(t, 1, lock.Options{NodeTimeout: 300 * time.Millisecond}).NewMutex(name)
	require.NoError(t, m.LockFor(ctx, lease)) // no renewal: only the deadline's watch
	lost := m.Lost()
	time.Sleep(2 * time.Second)
	require.NoError(t, c.Nodes[0].Slow(time.Second)) // past the node timeout
	ok, _ := m.TryLock(ctx)
	require.False(t, ok, "a re-entry with no reply counted")
	require.NoError(t, c.Nodes[0].Heal())
	require.Equal(t, 1, m.HoldCount())
	select {
	case <-lost:
	case <-ctx.Done():
		t.Fatal("the hold was not reported lost")
	}
	requireFree(t, 1, name, time.Second)
	require.ErrorIs(t, m.Unlock(ctx), lock.ErrLost)
}

// TestReentryRepairsHoldMissingOnAMinority: the hold vanished from one node
// only (a restart without persistence); the quorum still has it, so the
// re-entry succeeds and the lost node is written back.
func TestReentryRepairsHoldMissingOnAMinority(t *testing.T) {
	reset(t)
	ctx := ctxFor(t, 10*time.Second)
	const name = "reentry-minority"
	holder := newLockClient(t, 3, lock.Options{Lease: 5 * time.Second}).NewMutex(name)
	require.NoError(t, holder.Lock(ctx))
	key, err := reentrant.NewKey("", name)
	require.NoError(t, err)
	require.NoError(t, cluster.Nodes[0].Direct().Del(ctx, key.Lock).Err())

	require.NoError(t, holder.Lock(ctx))
	require.Equal(t, 2, holder.HoldCount())
	requireNotLost(t, holder.Lost(), "a hold still on a quorum")
	requireCountsSoon(t, []int{0, 1, 2}, name, holder.Owner(), 2)
	require.NoError(t, holder.Unlock(ctx))
	require.NoError(t, holder.Unlock(ctx))
	requireFree(t, 3, name, 2*time.Second)
}

// TestForeignDataOnFenceKeyChangesNothing: someone else's data on the
// fencing counter's key (a hash, or a string that is not a number) stops a
// fenced Lock at once with an error that names that key, before anything is
// written: the lock stays free on every node. A Lock without fencing does
// not read that key, and leaves it as it is.
func TestForeignDataOnFenceKeyChangesNothing(t *testing.T) {
	key, err := reentrant.NewKey("", "fence-foreign")
	require.NoError(t, err)
	for _, tc := range []struct {
		kind  string
		store func(context.Context, redis.UniversalClient) error
	}{
		{"hash", func(ctx context.Context, rdb redis.UniversalClient) error {
			return rdb.HSet(ctx, key.Fence, "someone", "else").Err()
		}},
		{"string", func(ctx context.Context, rdb redis.UniversalClient) error {
			return rdb.Set(ctx, key.Fence, "not a number", 0).Err()
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			reset(t)
			ctx := ctxFor(t, 10*time.Second)
			for i := range 3 {
				require.NoError(t, tc.store(ctx, cluster.Nodes[i].Direct()))
			}
			c := newLockClient(t, 3, lock.Options{})
			m := c.NewMutex(key.Name, lock.WithFencing(lock.CounterTokens))
			start := time.Now()
			err := m.Lock(ctx)
			require.ErrorIs(t, err, lock.ErrWrongType)
			var wt *reentrant.WrongTypeError
			require.ErrorAs(t, err, &wt)
			require.Equal(t, key.Fence, wt.Key, "the error must name the fence key")
			require.Equal(t, tc.kind, wt.Type)
			require.Less(t, time.Since(start), 5*time.Second, "Lock retried a permanent error")
			require.Zero(t, m.HoldCount())
			for i := range 3 {
				n, err := cluster.Nodes[i].Direct().Exists(ctx, key.Lock).Result()
				require.NoError(t, err)
				require.Zero(t, n, "node %d: the lock was taken despite the foreign fence key", i)
				kind, err := cluster.Nodes[i].Direct().Type(ctx, key.Fence).Result()
				require.NoError(t, err)
				require.Equal(t, tc.kind, kind, "node %d: foreign data changed", i)
			}
			states, err := c.Inspect(ctx, key.Name)
			require.NoError(t, err)
			for _, s := range states {
				require.ErrorIs(t, s.Err, lock.ErrWrongType, "node %d: Inspect must report the foreign fence key", s.Node)
			}
			// A lock without fencing never reads the counter's key.
			plain := c.NewMutex(key.Name)
			require.NoError(t, plain.Lock(ctx))
			require.NoError(t, plain.Unlock(ctx))
			for i := range 3 {
				kind, err := cluster.Nodes[i].Direct().Type(ctx, key.Fence).Result()
				require.NoError(t, err)
				require.Equal(t, tc.kind, kind, "node %d: foreign data changed", i)
			}
		})
	}
}

// TestUnlockRetriesAfterLongRenewedHold: a hold renewed for more than two
// leases is unlocked while two of three nodes are cut off. The nodes that
// missed the release must be retried once they heal, freeing the lock long
// before its lease runs out there: the retries' deadline counts from the
// Unlock, not from the first acquisition.
func TestUnlockRetriesAfterLongRenewedHold(t *testing.T) {
	c := reset(t)
	ctx := ctxFor(t, 30*time.Second)
	const name = "unlock-after-renewals"
	const lease = 3 * time.Second
	links, err := c.NewLinks()
	require.NoError(t, err)
	lc := newLockClientOver(t, linkClients(links[:3]), lock.Options{Lease: lease, NodeTimeout: 100 * time.Millisecond})
	m := lc.NewMutex(name)
	require.NoError(t, m.Lock(ctx))
	time.Sleep(2*lease + lease/3) // renewed several times: past the first acquisition + 2 leases

	key, err := reentrant.NewKey("", name)
	require.NoError(t, err)
	left, err := c.Nodes[0].Direct().PTTL(ctx, key.Lock).Result()
	require.NoError(t, err)
	expires := time.Now().Add(left) // on the cut-off nodes, unless released

	for _, l := range links[:2] {
		require.NoError(t, l.Partition())
	}
	require.ErrorIs(t, m.Unlock(ctx), lock.ErrNoQuorum)
	for _, l := range links[:2] {
		require.NoError(t, l.Heal())
	}
	healed := time.Now()
	require.Greater(t, expires.Sub(healed), time.Duration(0), "the lease ran out before the links healed: the test proves nothing")
	requireFree(t, 3, name, expires.Sub(healed)/2)
	t.Logf("free %v after the links healed; the lease had %v left there", time.Since(healed), expires.Sub(healed))
}

// TestAttemptsWhileNodesDownStayBounded: with 2 of 3 nodes down every
// attempt fails. Lock must retry at the pace of RetryDelay, not be woken
// at once by the release its own undo publishes; queue no undo for the
// nodes that refused the connection (nothing can have landed there); and
// keep its goroutines bounded.
func TestAttemptsWhileNodesDownStayBounded(t *testing.T) {
	c := reset(t)
	ctx := ctxFor(t, 60*time.Second)
	const name = "nodes-down"
	const retryDelay = 100 * time.Millisecond
	const wait = 3 * time.Second
	// Direct connections: a proxy in between would accept the connection
	// and then drop it, which looks like a call lost after sending. And the
	// fixture's client settings in every mode: go-redis's default dial
	// retries (RELOCK_TEST_CLIENTS=defaults) outlast relock's wait for the
	// node, so the refusal would come back as a late answer to an attempt
	// whose undo was already merged with the next one's.
	direct := make([]redis.UniversalClient, 3)
	for i := range direct {
		rdb := redis.NewClient(fixture.FixtureOptions(c.Nodes[i].Addr()))
		t.Cleanup(func() { _ = rdb.Close() })
		direct[i] = rdb
	}
	// A patient NodeTimeout: on a loaded machine a refusal must still come
	// back before relock stops waiting for it, or it is a late answer whose
	// undo merges with the next attempt's and is sent to be safe.
	lc := newLockClientOver(t, direct, lock.Options{Lease: 30 * time.Second, RetryDelay: retryDelay, NodeTimeout: time.Second})
	_, err := lc.IsLocked(ctx, name) // first contact (identity checks) while all nodes answer
	require.NoError(t, err)
	for _, i := range []int{1, 2} {
		require.NoError(t, c.Nodes[i].Stop(ctx))
		// Connections opened before the stop fail after sending, which
		// leaves the outcome unknown; drain them from the pool so that
		// every attempt meets a refused connection.
		node := reentrant.NewNode(direct[i], 0)
		require.Eventually(t, func() bool {
			return node.NeverReached(direct[i].Ping(ctx).Err())
		}, 10*time.Second, time.Millisecond)
	}
	m := lc.NewMutex(name)
	before := fixture.NumGoroutine()
	peak := goroutinePeak()
	lockCtx, cancel := context.WithTimeout(ctx, wait)
	err = m.Lock(lockCtx)
	cancel()
	high := peak()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, lock.ErrNoQuorum)
	st := lc.Stats()
	t.Logf("attempts %d, woken by release %d, by timer %d, goroutines %d -> peak %d", st.Attempts, st.WokenByPub, st.WokenByTTL, before, high)
	// Sleeps last RetryDelay on average, never less than half of it: about
	// wait/RetryDelay attempts. Allow half as many again, and a few retries
	// at once (the first, and wakes from the nodes' Pub/Sub connections
	// dropping). Under load there are fewer, never more.
	require.LessOrEqual(t, st.Attempts, uint64(3*wait/(2*retryDelay))+5, "attempts are not paced by RetryDelay")
	require.LessOrEqual(t, st.WokenByPub, uint64(5), "woken by the releases of its own undos")
	require.Less(t, high-before, 40, "goroutines grew with the failed attempts")

	// Bring the nodes back within the attempts' lease: an undo queued for
	// them would now land and leave the owner's tombstone there.
	for _, i := range []int{1, 2} {
		require.NoError(t, c.Nodes[i].Start(ctx))
	}
	key, err := reentrant.NewKey("", name)
	require.NoError(t, err)
	tomb := key.Tombstone(m.Owner())
	for range 30 {
		for _, i := range []int{1, 2} {
			n, err := c.Nodes[i].Direct().Exists(ctx, tomb).Result()
			require.NoError(t, err)
			require.Zero(t, n, "node %d: an undo was sent to a node that had refused the attempt", i)
		}
		time.Sleep(100 * time.Millisecond)
	}
	requireFree(t, 3, name, 2*time.Second)
}

// TestConcurrentCloseWaitsForTheFirst: a Close while another runs returns
// once that one has done its work (here, the release of a hold on a node
// that is paused, which waits a tenth of the lease). Before 2026-12-04 it
// returned nil at once, before the first had released anything.
func TestConcurrentCloseWaitsForTheFirst(t *testing.T) {
	reset(t)
	ctx := ctxFor(t, 20*time.Second)
	var released atomic.Int32
	c := newLockClient(t, 1, lock.Options{Observer: &lock.Observer{
		Release: func(context.Context, lock.ReleaseInfo) { released.Add(1) },
	}})
	require.NoError(t, c.NewMutex("close-twice").Lock(ctx))
	require.NoError(t, cluster.Nodes[0].Pause(ctx))
	t.Cleanup(func() { _ = cluster.Nodes[0].Unpause(context.Background()) })

	first := make(chan error, 1)
	go func() { first <- c.Close() }()
	time.Sleep(100 * time.Millisecond) // the first Close is releasing
	require.NoError(t, c.Close())
	require.Equal(t, int32(1), released.Load(), "the second Close returned before the first released the hold")
	require.NoError(t, cluster.Nodes[0].Unpause(ctx))
	<-first
}
