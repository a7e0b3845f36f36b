package integration_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
)

// TestLockMutualExclusionStress: 16 goroutines over two Clients contend for
// one lock; a holder counter must never exceed 1, and a counter in Redis
// incremented by read-modify-write under the lock must end exact.
func TestLockMutualExclusionStress(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		clients := []*lock.Client{newLockClient(t, n, lock.Options{}), newLockClient(t, n, lock.Options{})}
		const goroutines, iterations = 16, 12
		counter := cluster.Nodes[0].Direct()
		ctx := ctxFor(t, 60*time.Second)

		var holding, maxHolding, violations atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for g := range goroutines {
			wg.Go(func() {
				m := clients[g%2].NewMutex("stress")
				for range iterations {
					if err := m.Lock(ctx); err != nil {
						errs <- err
						return
					}
					if h := holding.Add(1); h > 1 {
						violations.Add(1)
					}
					maxHolding.Store(max(maxHolding.Load(), holding.Load()))
					v, err := counter.Get(ctx, "stress:counter").Int()
					if err != nil && err.Error() != "redis: nil" {
						errs <- err
					}
					time.Sleep(time.Millisecond) // widen the window a second holder would hit
					counter.Set(ctx, "stress:counter", v+1, 0)
					holding.Add(-1)
					if err := m.Unlock(ctx); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("worker: %v", err)
		}
		total, err := counter.Get(ctx, "stress:counter").Int()
		require.NoError(t, err)
		t.Logf("%d masters: %d goroutines × %d iterations, counter %d, max holders %d, violations %d",
			n, goroutines, iterations, total, maxHolding.Load(), violations.Load())
		require.Zero(t, violations.Load(), "two holders at once")
		require.Equal(t, goroutines*iterations, total, "lost updates under the lock")
		requireFree(t, n, "stress", time.Second)
	})
}

// TestLockNestedByOneOwner: nested locking never blocks its owner; another
// owner blocks until the last unlock; every node sees the count.
func TestLockNestedByOneOwner(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		c := newLockClient(t, n, lock.Options{})
		m, other := c.NewMutex("nested"), c.NewMutex("nested")
		ctx := ctxFor(t, 10*time.Second)
		nodes := make([]int, n)
		for i := range nodes {
			nodes[i] = i
		}
		for k := 1; k <= 3; k++ {
			require.NoError(t, m.Lock(ctx))
			require.Equal(t, k, m.HoldCount())
			requireCounts(t, nodes, "nested", m.Owner(), int64(k))
		}
		ok, err := other.TryLock(ctx)
		require.NoError(t, err)
		require.False(t, ok, "another owner must not get a held lock")

		acquired := make(chan error, 1)
		go func() { acquired <- other.Lock(ctx) }()
		for k := 3; k >= 1; k-- {
			select {
			case err := <-acquired:
				t.Fatalf("the other owner got the lock with %d holds left (err %v)", k, err)
			case <-time.After(100 * time.Millisecond):
			}
			require.NoError(t, m.Unlock(ctx))
		}
		require.NoError(t, <-acquired, "the other owner gets the lock after the last unlock")
		require.NoError(t, other.Unlock(ctx))
		requireFree(t, n, "nested", time.Second)
	})
}

// TestLockCountsConvergeAfterNodeStop: a node that missed the first Lock is
// brought to the owner's count by the second, so k Locks then k Unlocks leave
// every node empty.
func TestLockCountsConvergeAfterNodeStop(t *testing.T) {
	c := reset(t)
	lc := newLockClient(t, 3, lock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	m := lc.NewMutex("converge")

	require.NoError(t, c.Nodes[2].Stop(ctx))
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, c.Nodes[2].Start(ctx))
	require.NoError(t, m.Lock(ctx))
	// The re-entry nests where the hold is; the node that missed the first
	// acquisition gets it written back right after.
	requireCountsSoon(t, []int{0, 1, 2}, "converge", m.Owner(), 2)

	require.NoError(t, m.Unlock(ctx))
	requireCounts(t, []int{0, 1, 2}, "converge", m.Owner(), 1)
	require.NoError(t, m.Unlock(ctx))
	requireFree(t, 3, "converge", time.Second)
	require.ErrorIs(t, m.Unlock(ctx), lock.ErrNotHeld)
}

// TestLockMinorityFailureTolerated: with a minority of nodes stopped or
// paused, Lock and Unlock still work.
func TestLockMinorityFailureTolerated(t *testing.T) {
	for _, tc := range []struct {
		n     int
		fault string
		down  []int
	}{
		{3, "stop", []int{1}},
		{3, "pause", []int{2}},
		{5, "stop", []int{0, 3}},
		{5, "pause", []int{1, 4}},
	} {
		if tc.n > len(cluster.Nodes) {
			continue
		}
		t.Run(strconv.Itoa(tc.n)+"-"+tc.fault, func(t *testing.T) {
			c := reset(t)
			require.NoError(t, c.Warm(t.Context()))
			lc := newLockClient(t, tc.n, lock.Options{})
			ctx := ctxFor(t, 20*time.Second)
			for _, i := range tc.down {
				if tc.fault == "stop" {
					require.NoError(t, c.Nodes[i].Stop(ctx))
				} else {
					require.NoError(t, c.Nodes[i].Pause(ctx))
				}
			}
			m := lc.NewMutex("minority")
			require.NoError(t, m.Lock(ctx))
			require.NoError(t, m.Lock(ctx))
			ok, err := lc.NewMutex("minority").TryLock(ctx)
			require.NoError(t, err)
			require.False(t, ok)
			require.NoError(t, m.Unlock(ctx))
			require.NoError(t, m.Unlock(ctx))
			ok, err = lc.NewMutex("minority").TryLock(ctx)
			require.NoError(t, err)
			require.True(t, ok, "the lock is free again once unlocked")
		})
	}
}

// TestLockMajorityFailureReported: with a majority stopped, Lock fails with
// the quorum error naming the nodes, within its ctx; after the nodes return
// nothing of the attempt is left.
func TestLockMajorityFailureReported(t *testing.T) {
	c := reset(t)
	lc := newLockClient(t, 3, lock.Options{})
	ctx := ctxFor(t, 30*time.Second)
	require.NoError(t, c.Nodes[0].Stop(ctx))
	require.NoError(t, c.Nodes[2].Stop(ctx))

	m := lc.NewMutex("majority")
	ok, err := m.TryLock(ctx)
	require.False(t, ok)
	var qe *lock.QuorumError
	require.ErrorAs(t, err, &qe)
	require.ErrorIs(t, err, lock.ErrNoQuorum)
	require.Equal(t, 2, qe.Needed)
	require.Equal(t, 1, qe.Agreed)
	require.Len(t, qe.Nodes, 2)
	require.Equal(t, 0, qe.Nodes[0].Node)
	require.Equal(t, 2, qe.Nodes[1].Node)
	require.Contains(t, err.Error(), c.Nodes[0].Link().Addr())

	wait, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = m.Lock(wait)
	took := time.Since(start)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorAs(t, err, &qe, "Lock's error also carries the last quorum error")
	require.Less(t, took, 700*time.Millisecond+2*testNodeTimeout+200*time.Millisecond, "bounded by ctx")
	require.Zero(t, m.HoldCount())

	require.NoError(t, c.Nodes[0].Start(ctx))
	require.NoError(t, c.Nodes[2].Start(ctx))
	requireFree(t, 3, "majority", 2*time.Second)
}

// TestLockContextCancelledMidAcquire: a ctx cancelled while the acquire is
// on the wire leaves no key on any node.
func TestLockContextCancelledMidAcquire(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		c := reset(t)
		require.NoError(t, c.Warm(t.Context()))
		lc := newLockClient(t, n, lock.Options{})
		for i := range n {
			require.NoError(t, c.Nodes[i].Slow(100*time.Millisecond))
		}
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Millisecond)
		defer cancel()
		m := lc.NewMutex("cancelled")
		err := m.Lock(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Zero(t, m.HoldCount())
		for i := range n {
			require.NoError(t, c.Nodes[i].Heal())
		}
		requireFree(t, n, "cancelled", 3*time.Second)

		// A ctx already done sends nothing.
		done, cancelDone := context.WithCancel(t.Context())
		cancelDone()
		require.ErrorIs(t, m.Lock(done), context.Canceled)
		ok, err := m.TryLock(done)
		require.False(t, ok)
		require.ErrorIs(t, err, context.Canceled)
	})
}

// TestLockCancelledOnOneMasterEndsWithinTheNodeTimeout: on a Client of one
// master a Lock's call runs on the caller's own goroutine (no worker to hand
// it to), where nothing watches ctx while the call is on the wire. So it does
// so only while the node answers in its usual time, whose wait is the least
// node timeout: a cancellation is then seen when the call ends, within that
// timeout. On a node slower than usual the call goes to a worker and the
// cancellation is seen at once, not when the longer wait runs out. Either
// way the attempt (taken on the node, its reply lost) leaves nothing.
func TestLockCancelledOnOneMasterEndsWithinTheNodeTimeout(t *testing.T) {
	c := reset(t)
	require.NoError(t, c.Warm(t.Context()))
	lc := newLockClient(t, 1, lock.Options{NodeTimeout: adaptiveTimeouts})
	ctx := ctxFor(t, 30*time.Second)
	m := lc.NewMutex("cancel-one")
	cycles := func(k int) {
		for range k {
			require.NoError(t, m.Lock(ctx))
			require.NoError(t, m.Unlock(ctx))
		}
	}
	cancelledLock := func() time.Duration {
		t.Helper()
		require.NoError(t, c.Nodes[0].DropReplies())
		lockCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := time.AfterFunc(20*time.Millisecond, cancel)
		defer stop.Stop()
		start := time.Now()
		err := m.Lock(lockCtx)
		took := time.Since(start)
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, m.HoldCount())
		require.NoError(t, c.Nodes[0].Heal())
		requireFree(t, 1, "cancel-one", 5*time.Second)
		return took
	}

	// Healthy: the node's wait comes down to the floor (100 ms).
	cycles(20)
	took := cancelledLock()
	require.Less(t, took, lock.NodeTimeoutFloor+400*time.Millisecond,
		"a cancellation is seen within the node's timeout (%v), not later", lock.NodeTimeoutFloor)

	// Slow: every reply takes 400 ms, so the node's wait rises above the
	// floor, and the call goes to a worker.
	require.NoError(t, c.Nodes[0].Slow(400*time.Millisecond))
	cycles(4)
	took = cancelledLock()
	require.Less(t, took, 300*time.Millisecond,
		"on a slow node a cancellation is seen at once (the call would have waited 400 ms or more)")
}

// TestLockTimesOutBehindHolder: Lock with a timeout behind another holder
// returns the deadline error and leaves the holder's lock as it was.
func TestLockTimesOutBehindHolder(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		lc := newLockClient(t, n, lock.Options{})
		holder, waiter := lc.NewMutex("timeout"), lc.NewMutex("timeout")
		ctx := ctxFor(t, 10*time.Second)
		require.NoError(t, holder.Lock(ctx))
		wait, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := waiter.Lock(wait)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.GreaterOrEqual(t, time.Since(start), 290*time.Millisecond)
		nodes := make([]int, n)
		for i := range nodes {
			nodes[i] = i
		}
		requireCounts(t, nodes, "timeout", holder.Owner(), 1)
		require.NoError(t, holder.Unlock(ctx))
	})
}

// TestLockLostRepliesCountOnce: replies lost on one node, then on a
// majority, during nested Locks and Unlocks never count a hold twice or
// release twice, and a failed lost-reply acquire leaves nothing behind.
func TestLockLostRepliesCountOnce(t *testing.T) {
	c := reset(t)
	require.NoError(t, c.Warm(t.Context()))
	lc := newLockClient(t, 3, lock.Options{})
	ctx := ctxFor(t, 30*time.Second)
	m := lc.NewMutex("lost-replies")
	// Load the scripts on every node first: a node that restarted earlier
	// answers EVALSHA with NOSCRIPT, and with that reply lost nothing runs.
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx))

	// One node loses its replies: the scripts still run there.
	require.NoError(t, c.Nodes[0].DropReplies())
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, c.Nodes[0].Heal())
	requireCounts(t, []int{0, 1, 2}, "lost-replies", m.Owner(), 2)
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, m.Unlock(ctx))
	requireFree(t, 3, "lost-replies", 2*time.Second)

	// A majority loses its replies: the acquire runs on those nodes but the
	// client cannot know, so it fails and must undo everywhere.
	require.NoError(t, c.Warm(ctx))
	require.NoError(t, c.Nodes[0].DropReplies())
	require.NoError(t, c.Nodes[1].DropReplies())
	ok, err := m.TryLock(ctx)
	require.False(t, ok)
	require.ErrorIs(t, err, lock.ErrNoQuorum)
	require.ErrorIs(t, err, lock.ErrNodeTimeout)
	require.NoError(t, c.Nodes[0].Heal())
	require.NoError(t, c.Nodes[1].Heal())
	requireFree(t, 3, "lost-replies", 3*time.Second)

	// And the lock still counts right afterwards.
	for range 3 {
		require.NoError(t, m.Lock(ctx))
	}
	requireCounts(t, []int{0, 1, 2}, "lost-replies", m.Owner(), 3)
	for range 3 {
		require.NoError(t, m.Unlock(ctx))
	}
	requireFree(t, 3, "lost-replies", time.Second)
}

// TestLockBadInput: every invalid argument is a typed error that changes
// nothing.
func TestLockBadInput(t *testing.T) {
	reset(t)
	lc := newLockClient(t, 3, lock.Options{})
	ctx := ctxFor(t, 10*time.Second)

	empty := lc.NewMutex("")
	require.ErrorIs(t, empty.Lock(ctx), lock.ErrInvalidArgument)
	_, err := empty.TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrInvalidArgument)
	require.ErrorIs(t, empty.Unlock(ctx), lock.ErrInvalidArgument)
	_, err = lc.IsLocked(ctx, "")
	require.ErrorIs(t, err, lock.ErrInvalidArgument)
	require.ErrorIs(t, lc.ForceUnlock(ctx, ""), lock.ErrInvalidArgument)

	m := lc.NewMutex("bad-input")
	for _, lease := range []time.Duration{0, -time.Second, testNodeTimeout} {
		err := m.LockFor(ctx, lease)
		require.ErrorIs(t, err, lock.ErrInvalidArgument, "lease %v", lease)
		require.Contains(t, err.Error(), "lease")
	}
	require.ErrorIs(t, m.Unlock(ctx), lock.ErrNotHeld, "unlock with nothing held")

	require.NoError(t, m.Lock(ctx))
	other := lc.NewMutex("bad-input")
	require.ErrorIs(t, other.Unlock(ctx), lock.ErrNotHeld, "unlock by a non-owner")
	require.NoError(t, m.Unlock(ctx))
	require.ErrorIs(t, m.Unlock(ctx), lock.ErrNotHeld, "one unlock too many")
	requireFree(t, 3, "bad-input", time.Second)
	for i := range 3 {
		require.Empty(t, lockKeys(t, cluster.Nodes[i].Direct()), "node %d changed (beyond the tombstone of the Unlock)", i)
	}
}

// TestLockAdmin: IsLocked, TTL, Inspect and ForceUnlock.
func TestLockAdmin(t *testing.T) {
	reset(t)
	lc := newLockClient(t, 3, lock.Options{})
	ctx := ctxFor(t, 10*time.Second)
	locked, err := lc.IsLocked(ctx, "admin")
	require.NoError(t, err)
	require.False(t, locked)

	m := lc.NewMutex("admin")
	require.NoError(t, m.LockFor(ctx, 5*time.Second))
	locked, err = lc.IsLocked(ctx, "admin")
	require.NoError(t, err)
	require.True(t, locked)
	ttl, err := lc.TTL(ctx, "admin")
	require.NoError(t, err)
	require.Greater(t, ttl, 4*time.Second)
	require.LessOrEqual(t, ttl, 5*time.Second)
	require.True(t, time.Until(m.ValidUntil()) < 5*time.Second && time.Until(m.ValidUntil()) > 4*time.Second)

	states, err := lc.Inspect(ctx, "admin")
	require.NoError(t, err)
	require.Len(t, states, 3)
	for _, s := range states {
		require.NoError(t, s.Err)
		require.Equal(t, map[string]int64{m.Owner(): 1}, s.Info.Holders)
	}

	require.NoError(t, lc.ForceUnlock(ctx, "admin"))
	requireFree(t, 3, "admin", 0)
	err = m.Unlock(ctx)
	require.ErrorIs(t, err, lock.ErrLost, "the holder learns it lost the lock")
	require.Zero(t, m.HoldCount())
	select {
	case <-m.Lost():
	default:
		t.Fatal("Lost() not closed after the loss")
	}
	require.True(t, errors.Is(m.Unlock(ctx), lock.ErrNotHeld))
}
