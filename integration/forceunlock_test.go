package integration_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
)

// forcedWake bounds how long a waiter may take to notice a ForceUnlock: well
// below the holders' lease, which their watchdog renews every third of it,
// so a waiter that gets the hold within it was woken by the force-unlock's
// message, not by a lease's end. An evicted holder learns of it at its next
// renewal, within a third of holderLease.
const (
	forcedWake  = 5 * time.Second
	holderLease = 15 * time.Second
)

// waitFor runs acquire in the background and returns a channel that gets
// its error; it gives the waiter a moment to start waiting.
func waitFor(acquire func() error) <-chan error {
	done := inBackground(acquire)
	time.Sleep(300 * time.Millisecond)
	return done
}

// requireWoken asserts that the waiter behind done got its hold within
// forcedWake.
func requireWoken(t *testing.T, done <-chan error, who string) {
	t.Helper()
	select {
	case err := <-done:
		require.NoError(t, err, who)
	case <-time.After(forcedWake):
		t.Fatalf("%s still waits %v after the force-unlock", who, forcedWake)
	}
}

// TestForceUnlockFreesEveryHoldOfAName: ForceUnlock frees a name of every
// hold there is on it, whoever holds it, and wakes the waiters of each: an
// RWMutex's writer (its waiting readers get their holds), its readers (a
// waiting writer gets the lock), and the holders of the semaphore of the
// same name (a waiting Acquire gets its permits); a FairMutex's holder (its
// waiters get the lock in their queue's order). The evicted holders learn
// it at their next renewal (Lost).
func TestForceUnlockFreesEveryHoldOfAName(t *testing.T) {
	forNestMasters(t, func(t *testing.T, n int) {
		admin := newLockClient(t, n, lock.Options{})
		holder := newLockClient(t, n, lock.Options{Lease: holderLease})
		waiter := newLockClient(t, n, lock.Options{})
		ctx := ctxFor(t, 30*time.Second)

		// A writer's eviction wakes the readers waiting behind it.
		const name = "forced:every"
		w := holder.NewRWMutex(name)
		require.NoError(t, w.Lock(ctx))
		r := waiter.NewRWMutex(name)
		read := waitFor(func() error { return r.RLock(ctx) })
		require.NoError(t, admin.ForceUnlock(ctx, name))
		requireWoken(t, read, "a reader")
		requireClosedWithin(t, w.Lost(), "the evicted writer's Lost", holderLease)

		// Readers' eviction wakes the writer waiting behind them.
		r2 := holder.NewRWMutex(name)
		require.NoError(t, r2.RLock(ctx))
		write := waitFor(func() error { return admin.NewRWMutex(name).Lock(ctx) })
		require.NoError(t, admin.ForceUnlock(ctx, name))
		requireWoken(t, write, "a writer")
		requireNoReaders(t, n, name, time.Second)
		requireClosedWithin(t, r.Lost(), "an evicted reader's Lost", holderLease)
		requireClosedWithin(t, r2.Lost(), "an evicted reader's Lost", holderLease)
		require.NoError(t, admin.ForceUnlock(ctx, name))
		requireFree(t, n, name, time.Second)

		// A semaphore's holders' eviction wakes its waiting acquirers.
		full := newSemaphore(t, holder, name, 2)
		p, err := full.Acquire(ctx, 2)
		require.NoError(t, err)
		var got *lock.Permit
		acquire := waitFor(func() (err error) {
			got, err = newSemaphore(t, waiter, name, 2).Acquire(ctx, 1)
			return err
		})
		require.NoError(t, admin.ForceUnlock(ctx, name))
		requireWoken(t, acquire, "a semaphore's acquirer")
		requirePermitsSoon(t, n, name, map[string]int64{got.Owner(): 1}, time.Second)
		requireClosedWithin(t, p.Lost(), "the evicted holder's Lost", holderLease)
		require.ErrorIs(t, p.Release(ctx), lock.ErrLost)
		require.NoError(t, got.Release(ctx))

		// A FairMutex's eviction wakes the head of its queue, then the next.
		const fair = "forced:fair"
		f := holder.NewFairMutex(fair)
		require.NoError(t, f.Lock(ctx))
		first, second := waiter.NewFairMutex(fair), admin.NewFairMutex(fair)
		firstDone := waitFor(func() error { return first.Lock(ctx) })
		secondDone := waitFor(func() error { return second.Lock(ctx) })
		require.NoError(t, admin.ForceUnlock(ctx, fair))
		requireWoken(t, firstDone, "the fair queue's head")
		require.NoError(t, first.Unlock(ctx))
		requireWoken(t, secondDone, "the fair queue's next")
		require.NoError(t, second.Unlock(ctx))
		requireClosedWithin(t, f.Lost(), "the evicted fair holder's Lost", holderLease)
	})
}

// requireNotLost asserts that a hold's Lost channel is still open.
func requireNotLost(t *testing.T, lost <-chan struct{}, who string) {
	t.Helper()
	select {
	case <-lost:
		t.Fatalf("%s lost its hold", who)
	default:
	}
}

// requireClosedWithin asserts that ch is closed within d.
func requireClosedWithin(t *testing.T, ch <-chan struct{}, what string, d time.Duration) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s was not closed within %v", what, d)
	}
}

// TestEvictFreesOneOwner: Evict frees the holds of one owner alone and
// wakes the waiters of what it freed; the other holders keep theirs, and a
// waiter for what they still hold keeps waiting. An owner with nothing of
// the name is reported so, and an empty owner is refused.
func TestEvictFreesOneOwner(t *testing.T) {
	forNestMasters(t, func(t *testing.T, n int) {
		admin := newLockClient(t, n, lock.Options{})
		alice := newLockClient(t, n, lock.Options{Lease: holderLease})
		bob := newLockClient(t, n, lock.Options{Lease: holderLease})
		waiter := newLockClient(t, n, lock.Options{})
		ctx := ctxFor(t, 30*time.Second)
		const name = "evicted:one"

		// A semaphore full with two holders: evicting one makes room.
		a, err := newSemaphore(t, alice, name, 2).Acquire(ctx, 1)
		require.NoError(t, err)
		b, err := newSemaphore(t, bob, name, 2).Acquire(ctx, 1)
		require.NoError(t, err)
		var got *lock.Permit
		acquire := waitFor(func() (err error) {
			got, err = newSemaphore(t, waiter, name, 2).Acquire(ctx, 1)
			return err
		})
		evicted, err := admin.Evict(ctx, name, a.Owner())
		require.NoError(t, err)
		require.True(t, evicted)
		requireWoken(t, acquire, "a semaphore's acquirer")
		requireClosedWithin(t, a.Lost(), "the evicted holder's Lost", holderLease)
		requirePermitsSoon(t, n, name, map[string]int64{b.Owner(): 1, got.Owner(): 1}, time.Second)
		requireNotLost(t, b.Lost(), "the holder left in place")
		require.NoError(t, b.Release(ctx))
		require.NoError(t, got.Release(ctx))

		// Two readers: evicting one leaves the writer waiting for the other.
		r1, r2 := alice.NewRWMutex(name), bob.NewRWMutex(name)
		require.NoError(t, r1.RLock(ctx))
		require.NoError(t, r2.RLock(ctx))
		w := waiter.NewRWMutex(name)
		write := waitFor(func() error { return w.Lock(ctx) })
		evicted, err = admin.Evict(ctx, name, r1.Owner())
		require.NoError(t, err)
		require.True(t, evicted)
		select {
		case err := <-write:
			t.Fatalf("the writer got in beside a reader (%v)", err)
		case <-time.After(time.Second):
		}
		evicted, err = admin.Evict(ctx, name, r2.Owner())
		require.NoError(t, err)
		require.True(t, evicted)
		requireWoken(t, write, "the writer")
		require.NoError(t, w.Unlock(ctx))

		evicted, err = admin.Evict(ctx, name, "nobody:here")
		require.NoError(t, err)
		require.False(t, evicted, "an owner with nothing of the name")
		_, err = admin.Evict(ctx, name, "")
		require.ErrorIs(t, err, lock.ErrInvalidArgument)
		_, err = admin.Evict(ctx, "", "nobody:here")
		require.ErrorIs(t, err, lock.ErrInvalidArgument)
	})
}
