package integration_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/reentrant"
)

// Short leases make renewal visible within seconds. A lease must be 10 ×
// the node timeout, so these tests use a shorter node timeout.
const (
	shortLease       = 1500 * time.Millisecond
	shortNodeTimeout = 100 * time.Millisecond
)

func shortLeaseClient(t *testing.T, n int) *lock.Client {
	return newLockClient(t, n, lock.Options{Lease: shortLease, NodeTimeout: shortNodeTimeout})
}

// TestWatchdogKeepsLockPastSeveralLeases: held for 3+ leases under the
// watchdog, the lock stays ours and other owners stay out throughout.
func TestWatchdogKeepsLockPastSeveralLeases(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		c := shortLeaseClient(t, n)
		other := shortLeaseClient(t, n)
		ctx := ctxFor(t, 20*time.Second)
		m := c.NewMutex("renewed")
		require.NoError(t, m.Lock(ctx))
		first := m.ValidUntil()

		end := time.Now().Add(3*shortLease + 300*time.Millisecond)
		tries := 0
		for time.Now().Before(end) {
			ok, err := other.NewMutex("renewed").TryLock(ctx)
			if err == nil {
				require.False(t, ok, "another owner got the lock while it was renewed")
			}
			tries++
			select {
			case <-m.Lost():
				t.Fatal("the renewed lock was reported lost")
			case <-time.After(100 * time.Millisecond):
			}
		}
		require.True(t, m.ValidUntil().After(first.Add(2*shortLease)), "ValidUntil moved forward with renewals")
		require.Greater(t, tries, 20)
		require.NoError(t, m.Unlock(ctx))
		requireFree(t, n, "renewed", time.Second)
	})
}

// TestExplicitLeaseExpiresOnTime: LockFor is not renewed; the loss signal
// fires at ValidUntil and another owner gets the lock after the lease.
func TestExplicitLeaseExpiresOnTime(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		c := shortLeaseClient(t, n)
		ctx := ctxFor(t, 10*time.Second)
		m := c.NewMutex("explicit")
		// First contact (the identity check, new connections) before the
		// clock starts: the check below assumes the acquire begins at once,
		// within the drift allowance, and a go-redis client at its defaults
		// (RELOCK_TEST_CLIENTS=defaults) spends several round trips on a new
		// connection's handshake.
		_, err := c.IsLocked(ctx, "explicit")
		require.NoError(t, err)
		start := time.Now()
		require.NoError(t, m.LockFor(ctx, time.Second))
		validUntil := m.ValidUntil()
		require.True(t, validUntil.Before(start.Add(time.Second)))

		lag := startTimerLag()
		<-m.Lost()
		lostAt := time.Now()
		worst := lag.Worst()
		// Reported a little (100ms) before ValidUntil, so that scheduling
		// latency on a busy machine never makes it late; a starved
		// machine's own timer lateness is allowed on top.
		t.Logf("lost %v before ValidUntil; timers ran up to %v late meanwhile", validUntil.Sub(lostAt), worst)
		require.False(t, lostAt.Before(validUntil.Add(-120*time.Millisecond)), "lost %v before ValidUntil", validUntil.Sub(lostAt))
		require.Less(t, lostAt.Sub(validUntil), 5*time.Millisecond+worst, "lost %v after ValidUntil, timers ran at most %v late", lostAt.Sub(validUntil), worst)

		other := c.NewMutex("explicit")
		require.NoError(t, other.Lock(ctx))
		// Renewed, the lock would stay held until ctx ends (10 s).
		require.Less(t, time.Since(start), 5*time.Second, "the lease was renewed")
		require.ErrorIs(t, m.Unlock(ctx), lock.ErrLost)
		require.NoError(t, other.Unlock(ctx))
	})
}

// TestHoldContextEndReleases: when the hold context ends, renewal stops and
// the lock is released at once.
func TestHoldContextEndReleases(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		c := shortLeaseClient(t, n)
		ctx := ctxFor(t, 10*time.Second)
		hold, endHold := context.WithCancel(ctx)
		m := c.NewMutex("hold-ctx", lock.WithHoldContext(hold))
		require.NoError(t, m.Lock(ctx))
		require.NoError(t, m.Lock(ctx))

		waiter := c.NewMutex("hold-ctx")
		got := make(chan time.Time, 1)
		go func() {
			if waiter.Lock(ctx) == nil {
				got <- time.Now()
			}
		}()
		time.Sleep(200 * time.Millisecond)
		ended := time.Now()
		endHold()
		at := <-got
		require.Less(t, at.Sub(ended), 500*time.Millisecond, "released at once, not at lease end")
		// The count drops when the release round ends, which waits a little
		// for the nodes beyond the quorum: the waiter may get the lock first.
		require.Eventually(t, func() bool { return m.HoldCount() == 0 }, 2*time.Second, time.Millisecond)
		require.NoError(t, waiter.Unlock(ctx))
	})
}

// TestLossSignalledBeforeValidUntil: with a majority of nodes paused,
// renewal fails; the loss fires no later than the ValidUntil reported.
func TestLossSignalledBeforeValidUntil(t *testing.T) {
	c := reset(t)
	require.NoError(t, c.Warm(t.Context()))
	lc := shortLeaseClient(t, 3)
	ctx := ctxFor(t, 20*time.Second)
	m := lc.NewMutex("paused")
	require.NoError(t, m.Lock(ctx))
	time.Sleep(shortLease / 2) // at least one renewal
	require.NoError(t, c.Nodes[0].Pause(ctx))
	require.NoError(t, c.Nodes[1].Pause(ctx))
	defer func() { _ = c.Nodes[0].Unpause(ctx); _ = c.Nodes[1].Unpause(ctx) }()
	validUntil := m.ValidUntil()

	lag := startTimerLag()
	var lostAt time.Time
	select {
	case <-m.Lost():
		lostAt = time.Now()
	case <-time.After(3 * shortLease):
		t.Fatal("no loss signal")
	}
	worst := lag.Worst()
	last := m.ValidUntil() // the deadline as it stood when lost
	t.Logf("valid until %v after pause (last renewal's deadline %v), lost at +%v; slack %v; timers ran up to %v late",
		time.Until(validUntil), time.Until(last), time.Until(lostAt), lostAt.Sub(last), worst)
	require.False(t, last.Before(validUntil), "deadlines only move forward")
	require.Less(t, lostAt.Sub(last), 5*time.Millisecond+worst, "the loss fired after the validity deadline, beyond the runtime's own timer lateness")
	require.ErrorIs(t, m.Unlock(ctx), lock.ErrLost)
}

// TestForceUnlockSignalsHolder: an admin's force-unlock is noticed at the
// holder's next renewal.
func TestForceUnlockSignalsHolder(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		c := shortLeaseClient(t, n)
		ctx := ctxFor(t, 10*time.Second)
		m := c.NewMutex("forced")
		require.NoError(t, m.Lock(ctx))
		require.NoError(t, c.ForceUnlock(ctx, "forced"))
		forced := time.Now()
		select {
		case <-m.Lost():
			require.Less(t, time.Since(forced), shortLease/3+300*time.Millisecond, "noticed at the next renewal")
		case <-time.After(shortLease):
			t.Fatal("force-unlock not noticed")
		}
		require.ErrorIs(t, m.Unlock(ctx), lock.ErrLost)
	})
}

// TestDoEndsContextOnLoss: Do's fn sees its ctx end when the lock is lost.
func TestDoEndsContextOnLoss(t *testing.T) {
	reset(t)
	c := shortLeaseClient(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	err := c.Do(ctx, "do", func(fnCtx context.Context) error {
		require.NoError(t, c.ForceUnlock(ctx, "do"))
		select {
		case <-fnCtx.Done():
			require.ErrorIs(t, context.Cause(fnCtx), lock.ErrLost)
			return fnCtx.Err()
		case <-time.After(shortLease):
			return fmt.Errorf("fn's ctx did not end on loss")
		}
	})
	require.ErrorIs(t, err, lock.ErrLost)
	require.ErrorIs(t, err, context.Canceled)

	// And an ordinary Do returns fn's result and frees the lock.
	require.NoError(t, c.Do(ctx, "do", func(context.Context) error { return nil }))
	requireFree(t, 3, "do", time.Second)
}

// TestWatchdogScalesToThousandsOfLocks: 2,000 locks held through 3 renewal
// ticks stay held, with a goroutine count independent of the lock count.
func TestWatchdogScalesToThousandsOfLocks(t *testing.T) {
	const locks = 2000
	c, ctx, mutexes, base := holdMany(t, "many", locks)

	peak := peakGoroutines(3*time.Second + 500*time.Millisecond) // three ticks of 1s
	t.Logf("goroutines (the proxies' own left out): %d before, peak %d (+%d) while renewing %d locks; %+v", base, peak, peak-base, locks, c.Stats())
	require.Less(t, peak-base, 100, "goroutines must not grow with the number of locks")

	requireRenewedOnQuorum(t, ctx, "many", mutexes)
	unlockAll(t, ctx, mutexes)
}

// holdMany resets the cluster and locks n locks named prefix:0 …
// prefix:n-1 on 3 masters, with a 3s lease renewed every second. It returns
// the Client, a ctx for the test, the handles, and the goroutine count
// before locking.
func holdMany(t *testing.T, prefix string, n int) (*lock.Client, context.Context, []*lock.Mutex, int) {
	return holdManyFor(t, prefix, n, 3*time.Second)
}

// holdManyFor is holdMany with the lease given (NodeTimeout a twelfth of it).
func holdManyFor(t *testing.T, prefix string, n int, lease time.Duration) (*lock.Client, context.Context, []*lock.Mutex, int) {
	reset(t)
	c := newLockClient(t, 3, lock.Options{Lease: lease, NodeTimeout: lease / 12})
	ctx := ctxFor(t, 60*time.Second)
	base := fixture.NumGoroutine()
	return c, ctx, lockMany(t, ctx, c, prefix, n), base
}

func unlockAll(t *testing.T, ctx context.Context, mutexes []*lock.Mutex) {
	for _, m := range mutexes {
		require.NoError(t, m.Unlock(ctx))
	}
}

// lockMany locks n locks named prefix:0 … prefix:n-1 through c, from 16
// goroutines, and returns their handles in order.
func lockMany(tb testing.TB, ctx context.Context, c *lock.Client, prefix string, n int) []*lock.Mutex {
	tb.Helper()
	mutexes := make([]*lock.Mutex, n)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				m := c.NewMutex(fmt.Sprintf("%s:%d", prefix, i))
				if err := m.Lock(ctx); err != nil {
					errs <- err
					return
				}
				mutexes[i] = m
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	return mutexes
}

// peakGoroutines samples fixture.NumGoroutine for d and returns the highest
// count seen.
func peakGoroutines(d time.Duration) int {
	stop := goroutinePeak()
	time.Sleep(d)
	return stop()
}

// goroutinePeak samples fixture.NumGoroutine every 20ms, from a goroutine of
// its own, until the function it returns is called; that returns the
// highest count seen, its own goroutine left out.
func goroutinePeak() func() int {
	done, peak := make(chan struct{}), make(chan int)
	go func() {
		high := fixture.NumGoroutine()
		for {
			select {
			case <-done:
				peak <- high - 1
				return
			case <-time.After(20 * time.Millisecond):
				high = max(high, fixture.NumGoroutine())
			}
		}
	}()
	return func() int { close(done); return <-peak }
}

// requireRenewedOnQuorum fails the test when a handle reported a loss, or
// when a lock is no longer held (no PTTL left) on 2 of the 3 nodes. Called
// more than a lease after the last lock was taken, a copy still held was
// renewed. How much of the lease is left is logged, not required: it
// depends on how long the renewal rounds take on the machine (a CI run
// beside a second test run left 1 s or less on 2,745 of 6,000 copies, and
// 1 of 3 for one lock, with no lock lost).
func requireRenewedOnQuorum(tb testing.TB, ctx context.Context, prefix string, mutexes []*lock.Mutex) {
	tb.Helper()
	if i := firstLost(mutexes); i >= 0 {
		tb.Fatalf("lock %d lost", i)
	}
	const nodes, quorum = 3, 2
	heldOn := make([]int, len(mutexes))
	lagging := 0
	var least time.Duration // the least PTTL of a held copy; 0 while none is
	for node := range nodes {
		for i, left := range leasesLeft(tb, ctx, node, prefix, len(mutexes)) {
			if left > 0 {
				heldOn[i]++
				if least == 0 || left < least {
					least = left
				}
			}
			if left <= time.Second {
				lagging++
			}
		}
	}
	tb.Logf("copies with 1 s of lease or less: %d of %d; least left on a held copy: %v", lagging, nodes*len(mutexes), least)
	for i, n := range heldOn {
		require.GreaterOrEqual(tb, n, quorum, "lock %d held on %d of %d nodes", i, n, nodes)
	}
}

// notRenewed says which handle reported a loss, or which lock has 1 s of
// its lease left or less on one of the first nodes nodes; "" when none.
func notRenewed(tb testing.TB, ctx context.Context, prefix string, mutexes []*lock.Mutex, nodes int) string {
	tb.Helper()
	if i := firstLost(mutexes); i >= 0 {
		return fmt.Sprintf("lock %d lost", i)
	}
	for node := range nodes {
		for i, left := range leasesLeft(tb, ctx, node, prefix, len(mutexes)) {
			if left <= time.Second {
				return fmt.Sprintf("node %d lock %d not renewed (PTTL %v)", node, i, left)
			}
		}
	}
	return ""
}

// firstLost returns the index of the first handle that reported a loss,
// or -1.
func firstLost(mutexes []*lock.Mutex) int {
	for i, m := range mutexes {
		select {
		case <-m.Lost():
			return i
		default:
		}
	}
	return -1
}

// leasesLeft reads the PTTL of locks prefix:0 … prefix:n-1 on node, in one
// pipeline.
func leasesLeft(tb testing.TB, ctx context.Context, node int, prefix string, n int) []time.Duration {
	tb.Helper()
	p := cluster.Nodes[node].Direct().Pipeline()
	cmds := make([]interface{ Val() time.Duration }, n)
	for i := range cmds {
		k, _ := reentrant.NewKey("", fmt.Sprintf("%s:%d", prefix, i))
		cmds[i] = p.PTTL(ctx, k.Lock)
	}
	_, err := p.Exec(ctx)
	require.NoError(tb, err)
	left := make([]time.Duration, n)
	for i, cmd := range cmds {
		left[i] = cmd.Val()
	}
	return left
}

// TestRepairOfThousandsOfLocksIsBounded: a node that lost 2,000 held locks
// (flushed, as if it restarted empty) gets every one back from the next
// renewals, and the repairs cost no goroutine per lock.
func TestRepairOfThousandsOfLocksIsBounded(t *testing.T) {
	const locks = 2000
	// A 6 s lease: with node 2 flushed, every renewal needs both other
	// nodes to answer 2,000 renewals within NodeTimeout, and a CI run
	// beside a race test lost a lock with a 3 s lease and 250 ms timeout.
	_, ctx, mutexes, base := holdManyFor(t, "repair-many", locks, 6*time.Second)

	stop := goroutinePeak()
	require.NoError(t, cluster.Nodes[2].Direct().FlushAll(ctx).Err())
	// Two ticks of 2 s repair every lock on a quiet machine; a loaded one
	// may need a few more, within the holds' 6 s lease, which the
	// survivors keep renewing (a loss fails at once).
	flushed := time.Now()
	why := "not checked"
	for time.Since(flushed) < 15*time.Second {
		time.Sleep(500 * time.Millisecond)
		if why = notRenewed(t, ctx, "repair-many", mutexes, 3); why == "" || strings.HasSuffix(why, "lost") {
			break
		}
	}
	peak := stop()
	t.Logf("goroutines: %d before, peak %d (+%d) while repairing %d locks on one node; all repaired after %v",
		base, peak, peak-base, locks, time.Since(flushed).Round(100*time.Millisecond))
	require.Empty(t, why, "every lock repaired within 15 s of the flush")
	require.Less(t, peak-base, 100, "repairs must not start a goroutine per lock")
	unlockAll(t, ctx, mutexes)
}

// TestUndoOfManyFailedAttemptsIsBounded: with a majority paused, hundreds of
// failed TryLocks each leave their undo queued for nodes whose state is
// unknown; the undos cost no goroutine per attempt, and once the nodes
// resume and run the queued acquires, the undos sent again take them back.
func TestUndoOfManyFailedAttemptsIsBounded(t *testing.T) {
	const (
		locks   = 200
		workers = 8
		lease   = 10 * time.Second
	)
	cl := reset(t)
	require.NoError(t, cl.Warm(t.Context()))
	c := newLockClient(t, 3, lock.Options{NodeTimeout: 100 * time.Millisecond})
	ctx := ctxFor(t, 60*time.Second)
	// Load the scripts first, so the paused nodes queue the scripts
	// themselves, not a NOSCRIPT round.
	warm := c.NewMutex("undo-many:warm")
	require.NoError(t, warm.Lock(ctx))
	require.NoError(t, warm.Unlock(ctx))
	base := fixture.NumGoroutine()

	require.NoError(t, cl.Nodes[0].Pause(ctx))
	require.NoError(t, cl.Nodes[1].Pause(ctx))
	paused := true
	defer func() {
		if paused {
			_ = cl.Nodes[0].Unpause(ctx)
			_ = cl.Nodes[1].Unpause(ctx)
		}
	}()
	stop := goroutinePeak()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < locks; i += workers {
				ok, err := c.NewMutex(fmt.Sprintf("undo-many:%d", i)).TryLockFor(ctx, lease)
				assert.False(t, ok, "no quorum with a majority paused")
				assert.ErrorIs(t, err, lock.ErrNoQuorum)
			}
		})
	}
	wg.Wait()
	peak := stop()
	t.Logf("goroutines: %d before, peak %d (+%d) over %d failed attempts with a majority paused (%v)",
		base, peak, peak-base, locks, time.Since(start).Round(time.Millisecond))
	require.Less(t, peak-base, 100, "undos must not start a goroutine per attempt")

	require.NoError(t, cl.Nodes[0].Unpause(ctx))
	require.NoError(t, cl.Nodes[1].Unpause(ctx))
	paused = false
	// The attempts' leases are still running: the queued acquires that the
	// nodes run on resuming are taken back by the undos sent again, well
	// before those leases would end them.
	for i := range locks {
		requireFree(t, 3, fmt.Sprintf("undo-many:%d", i), 2*time.Second)
	}
	require.Less(t, time.Since(start), lease, "freed by the undos, not by the leases")
}

// TestNoGoroutineLeaks: nothing outlives Unlock, and nothing outlives Close.
func TestNoGoroutineLeaks(t *testing.T) {
	reset(t)
	ignore := goleak.IgnoreCurrent()
	c, err := lock.New(lock.Options{Nodes: cluster.Clients()[:3], Lease: shortLease, NodeTimeout: shortNodeTimeout})
	require.NoError(t, err)
	ctx := ctxFor(t, 10*time.Second)
	m := c.NewMutex("leak")
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Lock(ctx))
	waiter := c.NewMutex("leak")
	done := make(chan error)
	go func() { done <- waiter.Lock(ctx) }()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, <-done)
	require.NoError(t, waiter.Unlock(ctx))
	held := c.NewMutex("leak-held")
	require.NoError(t, held.Lock(ctx)) // Close releases it
	require.NoError(t, c.Close())
	// Connections the test opened through the links keep their proxy
	// goroutines: those belong to the fixture, not to relock.
	goleak.VerifyNone(t, append(proxyGoroutines(), ignore)...)
	requireFree(t, 3, "leak-held", time.Second)
}

// TestRenewalRepairsANodeThatLostTheLock: a node that lost the lock (it
// restarted empty; here: flushed) gets it back at the next renewal while a
// quorum still holds it.
func TestRenewalRepairsANodeThatLostTheLock(t *testing.T) {
	reset(t)
	c := shortLeaseClient(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	m := c.NewMutex("repaired")
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, cluster.Nodes[2].Direct().FlushAll(ctx).Err())
	require.Empty(t, holdersOn(t, 3, "repaired")[2])
	waitUntil(t, shortLease, "node 2 not repaired", func() bool {
		return holdersOn(t, 3, "repaired")[2][m.Owner()] == 2
	})
	requireNotLost(t, m.Lost(), "a holder that a minority of nodes forgot")
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, m.Unlock(ctx))
	requireFree(t, 3, "repaired", time.Second)
}

// TestRenewalWaitsForTheSlowNodeOfABareQuorum: a lock held on two of three
// nodes (the third flushed) is renewed, and the third repaired, though one
// of the two answers slower than the fixed node timeout: the fast "not
// held" of the flushed node does not count towards the quorum after which
// the renewal stops waiting for the others. Before 2026-12-04 it did: the
// slow node was cut off at the node timeout, round after round, and the
// lock was lost at its deadline.
func TestRenewalWaitsForTheSlowNodeOfABareQuorum(t *testing.T) {
	c := reset(t)
	const (
		lease       = 3 * time.Second
		nodeTimeout = 200 * time.Millisecond // a renewal waits 4 × that
	)
	lc := newLockClient(t, 3, lock.Options{Lease: lease, NodeTimeout: nodeTimeout})
	ctx := ctxFor(t, 30*time.Second)
	m := lc.NewMutex("bare-quorum")
	require.NoError(t, m.Lock(ctx))
	// One renewal first: every node has renew.lua cached then, and the
	// renewals below cost one round trip each, by SHA (after the flush
	// below, node 0's first one pays NOSCRIPT and the EVAL after it).
	waitUntil(t, 2*lease, "no renewal", func() bool { return lc.Stats().Renewals > 0 })
	require.NoError(t, c.Nodes[0].Direct().FlushAll(ctx).Err())
	// Above the node timeout, well within a renewal's wait: a loaded
	// machine's stalls fit in the 500 ms left.
	require.NoError(t, c.Nodes[2].Slow(nodeTimeout+nodeTimeout/2))
	t.Cleanup(func() { _ = c.Nodes[2].Heal() })
	waitUntil(t, 2*lease, "node 0 not repaired", func() bool {
		return holdersOn(t, 3, "bare-quorum")[0][m.Owner()] == 1
	})
	time.Sleep(lease) // past the lease the first acquisition gave
	requireNotLost(t, m.Lost(), "a holder on a bare quorum with one slow node")
	require.NoError(t, c.Nodes[2].Heal())
	require.NoError(t, m.Unlock(ctx))
}

// TestRenewalSurvivesABlip: a majority unreachable for less than the time
// left on the lease delays renewal but does not lose the lock.
func TestRenewalSurvivesABlip(t *testing.T) {
	c := reset(t)
	require.NoError(t, c.Warm(t.Context()))
	lc := shortLeaseClient(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	m := lc.NewMutex("blip")
	require.NoError(t, m.Lock(ctx))
	time.Sleep(shortLease / 3) // a renewal is due about now
	require.NoError(t, c.Nodes[0].Partition())
	require.NoError(t, c.Nodes[1].Partition())
	time.Sleep(shortLease / 3)
	require.NoError(t, c.Nodes[0].Heal())
	require.NoError(t, c.Nodes[1].Heal())
	time.Sleep(shortLease)
	select {
	case <-m.Lost():
		t.Fatal("a blip shorter than the lease lost the lock")
	default:
	}
	require.Greater(t, time.Until(m.ValidUntil()), shortLease/2, "renewal resumed after the blip")
	require.NoError(t, m.Unlock(ctx))
}

// TestHolderWithoutTTLGivesBoundedRetries: a key written by someone else
// without a TTL gives no lease to wait for; waiting degrades to jittered
// retries, neither a hang nor a tight loop.
func TestHolderWithoutTTLGivesBoundedRetries(t *testing.T) {
	reset(t)
	c := newLockClient(t, 1, lock.Options{RetryDelay: 20 * time.Millisecond})
	ctx := ctxFor(t, 10*time.Second)
	require.NoError(t, cluster.Nodes[0].Direct().HSet(ctx, "relock:{no-ttl}", "someone:else", 1).Err())
	wait, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	err := c.NewMutex("no-ttl").Lock(wait)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	attempts := c.Stats().Attempts
	t.Logf("%d attempts in 500ms against a holder without TTL", attempts)
	require.GreaterOrEqual(t, attempts, uint64(5), "it keeps retrying")
	require.LessOrEqual(t, attempts, uint64(60), "but not in a tight loop")
}
