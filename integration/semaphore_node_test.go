package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/reentrant"
)

// The semaphore's scripts on one node (lua/sem*.lua): the count each node
// enforces, the per-holder leases, and the sequence-number and tombstone
// rules a retried or delayed call meets.

func mustSemKey(t *testing.T, name string) reentrant.Key {
	t.Helper()
	k, err := reentrant.NewSemaphoreKey("", name)
	require.NoError(t, err)
	return k
}

// semOp builds owner's semaphore operation: n of k permits, hold count
// count, with a sequence number taken from seq.
func semOp(key reentrant.Key, owner string, n, k, count int64, seq *int64) reentrant.Op {
	op := opFor(key, owner, count, seq)
	op.Mode, op.Permits, op.Capacity = reentrant.Semaphore, n, k
	return op
}

func TestSemaphoreNodeCountsPermitsUpToCapacity(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustSemKey(t, "pool")
	var sa, sb, sc, sd int64

	a, err := node.Acquire(ctx, semOp(key, "c:a", 2, 3, 1, &sa))
	require.NoError(t, err)
	require.True(t, a.Acquired)
	require.Equal(t, int64(1), a.Count, "the reply carries the hold count, as a lock's")
	short := semOp(key, "c:b", 1, 3, 1, &sb)
	short.Lease = 4 * time.Second
	a, err = node.Acquire(ctx, short)
	require.NoError(t, err)
	require.True(t, a.Acquired, "2 + 1 ≤ 3")

	// Full: the refusal carries the time to the soonest lease end (b's).
	a, err = node.Acquire(ctx, semOp(key, "c:c", 1, 3, 1, &sc))
	require.NoError(t, err)
	require.False(t, a.Acquired)
	require.Greater(t, a.HolderTTL, 3*time.Second)
	require.LessOrEqual(t, a.HolderTTL, 4*time.Second)
	require.False(t, direct.HExists(ctx, key.Lock, "c:c").Val(), "a refused owner leaves no trace")
	require.Zero(t, direct.ZScore(ctx, key.Leases, "c:c").Val())

	// n > 1 is counted as n: after a gives back its 2, 2 fit and 3 do not.
	r, err := node.Release(ctx, semOp(key, "c:a", 2, 3, 0, &sa), "rel-a")
	require.NoError(t, err)
	require.Equal(t, reentrant.Released, r)
	a, err = node.Acquire(ctx, semOp(key, "c:d", 3, 3, 1, &sd))
	require.NoError(t, err)
	require.False(t, a.Acquired, "1 + 3 > 3")
	a, err = node.Acquire(ctx, semOp(key, "c:d", 2, 3, 1, &sd))
	require.NoError(t, err)
	require.True(t, a.Acquired, "1 + 2 ≤ 3")

	state, err := node.InspectSemaphore(ctx, key)
	require.NoError(t, err)
	require.Equal(t, int64(3), state.Capacity, "as the holders gave it")
	holders := state.Holders
	require.Len(t, holders, 2)
	require.Equal(t, int64(1), holders["c:b"].Permits)
	require.Equal(t, int64(2), holders["c:d"].Permits)
	require.LessOrEqual(t, holders["c:b"].TTL, 4*time.Second)
	require.Greater(t, holders["c:d"].TTL, 9*time.Second, "each holder has its own lease")
	require.Greater(t, direct.PTTL(ctx, key.Lock).Val(), 9*time.Second, "the keys live as long as the last lease")
}

func TestSemaphoreNodeExpiredHolderFreesItsPermitsAlone(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustSemKey(t, "expiry")
	var sa, sb, sc int64

	short := semOp(key, "c:a", 1, 2, 1, &sa)
	short.Lease = 300 * time.Millisecond
	_, err := node.Acquire(ctx, short)
	require.NoError(t, err)
	_, err = node.Acquire(ctx, semOp(key, "c:b", 1, 2, 1, &sb))
	require.NoError(t, err)
	a, err := node.Acquire(ctx, semOp(key, "c:c", 1, 2, 1, &sc))
	require.NoError(t, err)
	require.False(t, a.Acquired)
	require.LessOrEqual(t, a.HolderTTL, 300*time.Millisecond, "the soonest lease is a's, not b's")

	// b's long lease keeps the keys alive, yet a's permit comes back at the
	// end of a's own lease.
	time.Sleep(400 * time.Millisecond)
	a, err = node.Acquire(ctx, semOp(key, "c:c", 1, 2, 1, &sc))
	require.NoError(t, err)
	require.True(t, a.Acquired)
	require.False(t, direct.HExists(ctx, key.Lock, "c:a").Val(), "the expired holder was purged")
	require.False(t, direct.HExists(ctx, key.Lock, "c:a/seq").Val())

	// a's renewal now finds nothing of it: renewal never creates a hold.
	held, err := node.Renew(ctx, semOp(key, "c:a", 1, 2, 1, &sa))
	require.NoError(t, err)
	require.False(t, held)
}

func TestSemaphoreNodeRetriedAndDelayedCalls(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustSemKey(t, "idempotent")
	var seq, other int64

	acquire := semOp(key, "c:a", 2, 2, 1, &seq)
	for range 3 { // the same call sent again after a lost reply
		a, err := node.Acquire(ctx, acquire)
		require.NoError(t, err)
		require.True(t, a.Acquired, "a retry finds its own hold, not a full semaphore")
	}
	require.Equal(t, "2", direct.HGet(ctx, key.Lock, "c:a").Val())

	// Renewal moves only the holder's own lease.
	renew := semOp(key, "c:a", 2, 2, 1, &seq)
	renew.Lease = 20 * time.Second
	held, err := node.Renew(ctx, renew)
	require.NoError(t, err)
	require.True(t, held)
	require.Greater(t, direct.ZScore(ctx, key.Leases, "c:a").Val()-float64(time.Now().UnixMilli()), 15e3)

	sub := direct.Subscribe(ctx, key.Channel)
	defer sub.Close()
	_, err = sub.Receive(ctx)
	require.NoError(t, err)
	release := semOp(key, "c:a", 2, 2, 0, &seq)
	for range 2 { // a retried release gives back once, announces once
		r, err := node.Release(ctx, release, "rel-1")
		require.NoError(t, err)
		// The copy finds the release's own number in the tombstone: it
		// answers as the first did, not as a lost hold (goneBefore).
		require.Equal(t, reentrant.Released, r)
	}
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "rel-1", msg.Payload)
	require.Zero(t, direct.Exists(ctx, key.Lock, key.Leases).Val(), "no holder left: both keys deleted")

	// The acquire delayed in the network lands after the release: its
	// tombstone refuses it, the permits stay free.
	a, err := node.Acquire(ctx, acquire)
	require.NoError(t, err)
	require.False(t, a.Acquired)
	require.True(t, a.Stale)
	require.Zero(t, direct.Exists(ctx, key.Lock).Val())

	// An undo that arrives before its acquire buries it too.
	late := semOp(key, "c:b", 1, 2, 1, &other)
	undo := semOp(key, "c:b", 1, 2, 0, &other)
	r, err := node.Release(ctx, undo, "undo")
	require.NoError(t, err)
	require.Equal(t, reentrant.NotHeld, r)
	a, err = node.Acquire(ctx, late)
	require.NoError(t, err)
	require.True(t, a.Stale)

	// A hold whose acquisitions need 3 nodes says so in its release's
	// message, so that waiters retry once 3 copies are in.
	var se int64
	wide := semOp(key, "c:e", 1, 2, 1, &se)
	wide.Quorum = 3
	_, err = node.Acquire(ctx, wide)
	require.NoError(t, err)
	wide = semOp(key, "c:e", 1, 2, 0, &se)
	wide.Quorum = 3
	r, err = node.Release(ctx, wide, "rel-2")
	require.NoError(t, err)
	require.Equal(t, reentrant.Released, r)
	msg, err = sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "rel-2 *3", msg.Payload)

	// A re-entry (a repair that must not create) on a node without the hold.
	re := semOp(key, "c:c", 1, 2, 1, &other)
	re.Reentry = true
	a, err = node.Acquire(ctx, re)
	require.NoError(t, err)
	require.True(t, a.Missing)
}

func TestSemaphoreNodeWrongTypeNamesTheKey(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustSemKey(t, "foreign")
	var seq int64
	require.NoError(t, direct.Set(ctx, key.Leases, "someone else's", 0).Err())
	_, err := node.Acquire(ctx, semOp(key, "c:a", 1, 2, 1, &seq))
	var wt *reentrant.WrongTypeError
	require.ErrorAs(t, err, &wt)
	require.Equal(t, key.Leases, wt.Key)
	require.Equal(t, "someone else's", direct.Get(ctx, key.Leases).Val(), "foreign data untouched")
	require.Zero(t, direct.Exists(ctx, key.Lock).Val(), "nothing written")

	require.NoError(t, direct.Del(ctx, key.Leases).Err())
	require.NoError(t, direct.Set(ctx, key.Lock, "x", 0).Err())
	_, err = node.Acquire(ctx, semOp(key, "c:a", 1, 2, 1, &seq))
	require.ErrorAs(t, err, &wt)
	require.Equal(t, key.Lock, wt.Key)
	_, err = node.InspectSemaphore(context.Background(), key)
	require.ErrorIs(t, err, reentrant.ErrWrongType)
}
