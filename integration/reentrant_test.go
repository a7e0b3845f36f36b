package integration_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/lua"
	"github.com/relock-go/relock/pubsub"
	"github.com/relock-go/relock/reentrant"
)

// singleNode returns the primitive over node 0's proxied client and that
// node's direct client for inspection.
func singleNode(t *testing.T) (*reentrant.Node, *redis.Client) {
	c := reset(t)
	return reentrant.NewNode(c.Nodes[0].Link().Client(), 0), c.Nodes[0].Direct()
}

func mustKey(t *testing.T, name string) reentrant.Key {
	t.Helper()
	k, err := reentrant.NewKey("", name)
	require.NoError(t, err)
	return k
}

// opFor builds owner's operation with a sequence number taken from seq.
func opFor(key reentrant.Key, owner string, count int64, seq *int64) reentrant.Op {
	*seq++
	return reentrant.Op{Key: key, Owner: owner, Lease: 10 * time.Second, Count: count, Seq: *seq}
}

func TestReentrantAcquireReenterRelease(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "orders:42")
	var seq int64

	for count := int64(1); count <= 3; count++ {
		a, err := node.Acquire(ctx, opFor(key, "c:alice", count, &seq))
		require.NoError(t, err)
		require.True(t, a.Acquired)
		require.Equal(t, count, a.Count)
		require.Equal(t, strconv.FormatInt(count, 10), direct.HGet(ctx, key.Lock, "c:alice").Val(), "the node stores the hold count")
	}
	for count := int64(2); count >= 1; count-- {
		r, err := node.Release(ctx, opFor(key, "c:alice", count, &seq), "rel")
		require.NoError(t, err)
		require.Equal(t, reentrant.StillHeld, r)
		require.Equal(t, strconv.FormatInt(count, 10), direct.HGet(ctx, key.Lock, "c:alice").Val())
	}
	r, err := node.Release(ctx, opFor(key, "c:alice", 0, &seq), "rel")
	require.NoError(t, err)
	require.Equal(t, reentrant.Released, r)
	require.Zero(t, direct.Exists(ctx, key.Lock).Val(), "a full release deletes the key")
}

func TestReentrantOtherOwnerRefusedWithTTL(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "refused")
	var seqA, seqB int64
	_, err := node.Acquire(ctx, opFor(key, "c:alice", 1, &seqA))
	require.NoError(t, err)

	a, err := node.Acquire(ctx, opFor(key, "c:bob", 1, &seqB))
	require.NoError(t, err)
	require.False(t, a.Acquired)
	require.Greater(t, a.HolderTTL, 9*time.Second, "the refusal carries the holder's remaining lease")
	require.LessOrEqual(t, a.HolderTTL, 10*time.Second)
	require.False(t, direct.HExists(ctx, key.Lock, "c:bob").Val(), "a refused owner leaves no trace")

	// Release by a non-owner changes nothing.
	before := direct.HGetAll(ctx, key.Lock).Val()
	r, err := node.Release(ctx, opFor(key, "c:bob", 0, &seqB), "rel")
	require.NoError(t, err)
	require.Equal(t, reentrant.NotHeld, r)
	require.Equal(t, before, direct.HGetAll(ctx, key.Lock).Val())

	// Renew by a non-owner changes nothing either.
	require.NoError(t, direct.PExpire(ctx, key.Lock, 5*time.Second).Err())
	held, err := node.Renew(ctx, opFor(key, "c:bob", 1, &seqB))
	require.NoError(t, err)
	require.False(t, held)
	require.LessOrEqual(t, direct.PTTL(ctx, key.Lock).Val(), 5*time.Second)
}

func TestReentrantRetriedCallsCountOnce(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "idempotent")
	var seq int64
	op := opFor(key, "c:alice", 1, &seq)
	for range 3 { // the same call sent again after a lost reply
		a, err := node.Acquire(ctx, op)
		require.NoError(t, err)
		require.True(t, a.Acquired)
	}
	require.Equal(t, "1", direct.HGet(ctx, key.Lock, "c:alice").Val())

	second := opFor(key, "c:alice", 2, &seq)
	_, err := node.Acquire(ctx, second)
	require.NoError(t, err)
	// A straggler of the first acquire arriving late must not lower the count.
	a, err := node.Acquire(ctx, op)
	require.NoError(t, err)
	require.Equal(t, int64(2), a.Count)
	require.Equal(t, "2", direct.HGet(ctx, key.Lock, "c:alice").Val())

	// A release retried does not release twice.
	rel := opFor(key, "c:alice", 1, &seq)
	for range 3 {
		r, err := node.Release(ctx, rel, "rel")
		require.NoError(t, err)
		require.Equal(t, reentrant.StillHeld, r)
	}
	require.Equal(t, "1", direct.HGet(ctx, key.Lock, "c:alice").Val())
}

func TestReentrantRepairsACountedDownNode(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "repair")
	var seq int64
	// The node missed the first two acquires (it was down): the third
	// carries the owner's count and brings the node to it.
	a, err := node.Acquire(ctx, opFor(key, "c:alice", 3, &seq))
	require.NoError(t, err)
	require.Equal(t, int64(3), a.Count)
	require.Equal(t, "3", direct.HGet(ctx, key.Lock, "c:alice").Val())
	// A renewal also repairs the count.
	held, err := node.Renew(ctx, opFor(key, "c:alice", 4, &seq))
	require.NoError(t, err)
	require.True(t, held)
	require.Equal(t, "4", direct.HGet(ctx, key.Lock, "c:alice").Val())
}

func TestReentrantFullReleasePublishesOnce(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "published")
	sub := direct.Subscribe(ctx, key.Channel)
	defer sub.Close()
	_, err := sub.Receive(ctx) // subscription confirmed
	require.NoError(t, err)

	var seq int64
	for count := int64(1); count <= 2; count++ {
		_, err := node.Acquire(ctx, opFor(key, "c:alice", count, &seq))
		require.NoError(t, err)
	}
	_, err = node.Release(ctx, opFor(key, "c:alice", 1, &seq), "partial")
	require.NoError(t, err)
	final := opFor(key, "c:alice", 0, &seq)
	_, err = node.Release(ctx, final, "full")
	require.NoError(t, err)
	_, err = node.Release(ctx, final, "full") // retried: must not publish again
	require.NoError(t, err)

	var payloads []string
	for {
		rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		msg, err := sub.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			break
		}
		payloads = append(payloads, msg.Payload)
	}
	require.Equal(t, []string{"full"}, payloads, "exactly one message, for the full release")
}

// TestReentrantLateRenewalKeepsANewerLongerLease: a renewal sent before the
// owner's Unlock, landing after the Unlock and a LockFor of a longer lease,
// leaves the new hold's expiry alone, for a Mutex's hold and a read hold.
// Before 2026-12-04 it set the expiry to its own, shorter lease: the node
// let the new hold go long before its owner's validity ended.
func TestReentrantLateRenewalKeepsANewerLongerLease(t *testing.T) {
	for _, mode := range []reentrant.Mode{reentrant.Exclusive, reentrant.Read} {
		node, direct := singleNode(t)
		ctx := t.Context()
		key := mustKey(t, fmt.Sprintf("late-renewal-%d", mode))
		var seq int64
		op := func(count int64, lease time.Duration) reentrant.Op {
			o := opFor(key, "c:alice", count, &seq)
			o.Mode, o.Lease = mode, lease
			return o
		}
		_, err := node.Acquire(ctx, op(1, 30*time.Second))
		require.NoError(t, err)
		late := op(1, 30*time.Second) // the watchdog's, delayed on the wire
		_, err = node.Release(ctx, op(0, 30*time.Second), "r")
		require.NoError(t, err)
		a, err := node.Acquire(ctx, op(1, 5*time.Minute))
		require.NoError(t, err)
		require.True(t, a.Acquired)

		held, err := node.Renew(ctx, late)
		require.NoError(t, err)
		require.True(t, held, "the owner holds the lock here")
		left := direct.PTTL(ctx, key.Lock).Val()
		if mode == reentrant.Read {
			ends := direct.ZScore(ctx, key.ReadLeases(), "c:alice").Val()
			now := direct.Time(ctx).Val()
			left = time.Duration(ends-float64(now.UnixMilli())) * time.Millisecond
		}
		require.Greater(t, left, 4*time.Minute, "mode %d: the late renewal shortened the 5 min lease to %v", mode, left)
	}
}

// fairOp is a fair lock's acquire or release of owner on key, with ticket
// and lease.
func fairOp(key reentrant.Key, owner string, count, ticket int64, lease time.Duration, seq *int64) reentrant.Op {
	o := opFor(key, owner, count, seq)
	o.Fair, o.Ticket, o.Lease = true, ticket, lease
	return o
}

// TestReentrantFairTryLockLeavesAStaleEntry: a fair lock's owner that a
// stale entry names at the head of the queue (its Lock gave up, and the
// leave did not land) takes the lock with a TryLock (no ticket) and leaves
// the queue. Before 2026-12-04 only its deadline went: the entry stayed with
// none, which no purge drops, and every release named that owner again.
func TestReentrantFairTryLockLeavesAStaleEntry(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "fair-stale-entry")
	var seq int64
	require.NoError(t, direct.ZAdd(ctx, key.Queue, redis.Z{Score: 1, Member: "c:x"}).Err())
	require.NoError(t, direct.ZAdd(ctx, key.QueueDeadlines, redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: "c:x"}).Err())
	a, err := node.Acquire(ctx, fairOp(key, "c:x", 1, 0, 30*time.Second, &seq))
	require.NoError(t, err)
	require.True(t, a.Acquired)
	require.Equal(t, redis.Nil, direct.ZScore(ctx, key.Queue, "c:x").Err(), "the owner left the queue")
	require.Equal(t, redis.Nil, direct.ZScore(ctx, key.QueueDeadlines, "c:x").Err(), "and its deadline")
}

// TestReentrantFairQueueOutlivesItsLatestDeadline: a waiter of a short
// lease joining a fair lock's queue does not shorten the queue, nor its
// deadlines, below the deadline of a waiter before it. Before 2026-12-04 it
// set both to its own span, and once they expired the waiters before it
// lost their place in line.
func TestReentrantFairQueueOutlivesItsLatestDeadline(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "fair-queue-ttl")
	var seq int64
	_, err := node.Acquire(ctx, fairOp(key, "c:holder", 1, 0, 30*time.Second, &seq))
	require.NoError(t, err)
	for _, w := range []struct {
		owner  string
		ticket int64
		lease  time.Duration
	}{{"c:long", 10, 30 * time.Second}, {"c:short", 20, 500 * time.Millisecond}} {
		a, err := node.Acquire(ctx, fairOp(key, w.owner, 1, w.ticket, w.lease, &seq))
		require.NoError(t, err)
		require.False(t, a.Acquired, w.owner)
	}
	for _, k := range []string{key.Queue, key.QueueDeadlines} {
		// c:long's span: the holder's 30 s and its own 30 s.
		require.Greater(t, direct.PTTL(ctx, k).Val(), 55*time.Second, "%s shortened by the short-lease waiter", k)
	}
}

func TestReentrantRenewExtendsLease(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "renewed")
	var seq int64
	op := opFor(key, "c:alice", 1, &seq)
	op.Lease = time.Second
	_, err := node.Acquire(ctx, op)
	require.NoError(t, err)
	require.LessOrEqual(t, direct.PTTL(ctx, key.Lock).Val(), time.Second)

	renew := opFor(key, "c:alice", 1, &seq)
	renew.Lease = 20 * time.Second
	held, err := node.Renew(ctx, renew)
	require.NoError(t, err)
	require.True(t, held)
	require.Greater(t, direct.PTTL(ctx, key.Lock).Val(), 19*time.Second)

	// The batch form renews many locks in one round trip.
	keys := []reentrant.Key{mustKey(t, "b1"), mustKey(t, "b2"), mustKey(t, "b3")}
	var ops []reentrant.Op
	for i, k := range keys {
		if i < 2 { // b3 is never acquired: not held
			_, err := node.Acquire(ctx, opFor(k, "c:alice", 1, &seq))
			require.NoError(t, err)
		}
		o := opFor(k, "c:alice", 1, &seq)
		o.Lease = 30 * time.Second
		ops = append(ops, o)
	}
	// A zero Op is a renewal the watchdog skips this round (its handle has
	// an operation on the wire): not sent, and no error, which the
	// observer's NodeError would report as the node's failure.
	ops = append(ops, reentrant.Op{})
	results := node.RenewAll(ctx, ops)
	require.Len(t, results, 4)
	require.True(t, results[0].Held)
	require.True(t, results[1].Held)
	require.False(t, results[2].Held)
	require.NoError(t, results[2].Err)
	require.Equal(t, reentrant.RenewResult{}, results[3])
	require.Greater(t, direct.PTTL(ctx, keys[0].Lock).Val(), 29*time.Second)
}

func TestReentrantExpiredLockGoesToAnotherOwner(t *testing.T) {
	node, _ := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "expiring")
	var seqA, seqB int64
	op := opFor(key, "c:alice", 1, &seqA)
	op.Lease = 150 * time.Millisecond
	_, err := node.Acquire(ctx, op)
	require.NoError(t, err)
	a, err := node.Acquire(ctx, opFor(key, "c:bob", 1, &seqB))
	require.NoError(t, err)
	require.False(t, a.Acquired)

	time.Sleep(250 * time.Millisecond)
	a, err = node.Acquire(ctx, opFor(key, "c:bob", 1, &seqB))
	require.NoError(t, err)
	require.True(t, a.Acquired, "after the lease, another owner gets the lock")
}

func TestReentrantWrongTypeIsAnErrorNamingTheKey(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "not-a-hash")
	require.NoError(t, direct.Set(ctx, key.Lock, "someone else's data", 0).Err())
	var seq int64

	_, err := node.Acquire(ctx, opFor(key, "c:alice", 1, &seq))
	var wt *reentrant.WrongTypeError
	require.ErrorAs(t, err, &wt)
	require.ErrorIs(t, err, reentrant.ErrWrongType)
	require.Equal(t, key.Lock, wt.Key)
	require.Equal(t, "string", wt.Type)
	require.Contains(t, err.Error(), key.Lock)

	_, err = node.Release(ctx, opFor(key, "c:alice", 0, &seq), "x")
	require.ErrorIs(t, err, reentrant.ErrWrongType)
	_, err = node.Renew(ctx, opFor(key, "c:alice", 1, &seq))
	require.ErrorIs(t, err, reentrant.ErrWrongType)
	_, err = node.Inspect(ctx, key)
	require.ErrorIs(t, err, reentrant.ErrWrongType)
	_, err = node.ForceUnlock(ctx, key, "x", 1)
	require.ErrorIs(t, err, reentrant.ErrWrongType)
	require.Equal(t, "someone else's data", direct.Get(ctx, key.Lock).Val(), "the data stays untouched")
}

func TestReentrantScriptFlushIsTransparent(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "flushed")
	var seq int64
	_, err := node.Acquire(ctx, opFor(key, "c:alice", 1, &seq))
	require.NoError(t, err)
	require.True(t, direct.ScriptExists(ctx, lua.Acquire.SHA()).Val()[0], "the script is cached by SHA")

	require.NoError(t, direct.ScriptFlush(ctx).Err())
	_, err = node.Acquire(ctx, opFor(key, "c:alice", 2, &seq))
	require.NoError(t, err)
	require.NoError(t, direct.ScriptFlush(ctx).Err())
	results := node.RenewAll(ctx, []reentrant.Op{opFor(key, "c:alice", 2, &seq)})
	require.NoError(t, results[0].Err)
	require.True(t, results[0].Held)
	require.NoError(t, direct.ScriptFlush(ctx).Err())
	info, err := node.Inspect(ctx, key)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"c:alice": 2}, info.Holders)
}

func TestReentrantNamesWithAnyBytes(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	names := []string{"{", "}", "a}b{c", "with space", "ünïcødé 🔒", "line\nbreak", "%7D", strings.Repeat("x", 1024), "\x00\xff"}
	seen := map[string]string{}
	for _, name := range names {
		key := mustKey(t, name)
		if other, dup := seen[key.Lock]; dup {
			t.Fatalf("names %q and %q map to the same key", name, other)
		}
		seen[key.Lock] = name
		// The hash tag is the whole (escaped) name: '}' cannot end it early.
		open := strings.Index(key.Lock, "{")
		end := strings.Index(key.Lock[open:], "}") + open
		require.Equal(t, key.Lock[open:end+1], key.Lock[open:], "the tag ends at the end of the lock key")

		var seq int64
		a, err := node.Acquire(ctx, opFor(key, "c:alice", 1, &seq))
		require.NoError(t, err, "name %q", name)
		require.True(t, a.Acquired)
		info, err := node.Inspect(ctx, key)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"c:alice": 1}, info.Holders)
		r, err := node.Release(ctx, opFor(key, "c:alice", 0, &seq), "x")
		require.NoError(t, err)
		require.Equal(t, reentrant.Released, r)
		require.Zero(t, direct.Exists(ctx, key.Lock).Val())
	}
	_, err := reentrant.NewKey("", "")
	require.ErrorIs(t, err, reentrant.ErrInvalidArgument)
}

func TestReentrantRejectsBadOps(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "bad")
	bad := []reentrant.Op{
		{Key: key, Owner: "", Lease: time.Second, Count: 1, Seq: 1},
		{Key: key, Owner: "c:a", Lease: 0, Count: 1, Seq: 1},
		{Key: key, Owner: "c:a", Lease: time.Second, Count: 0, Seq: 1},
		{Key: key, Owner: "c:a", Lease: time.Second, Count: 1, Seq: 1, Expect: reentrant.ExpectHandOff + 1},
		{Key: key, Owner: "c:a", Lease: time.Second, Count: 1, Seq: 1, Expect: -1},
	}
	for _, op := range bad {
		_, err := node.Acquire(ctx, op)
		require.ErrorIs(t, err, reentrant.ErrInvalidArgument)
	}
	_, err := node.Release(ctx, reentrant.Op{Key: key, Owner: "c:a", Lease: time.Second, Count: -1}, "x")
	require.ErrorIs(t, err, reentrant.ErrInvalidArgument)
	require.Zero(t, direct.DBSize(ctx).Val(), "bad input changes nothing")
}

// roundTrips is a go-redis hook counting round trips: single commands and
// whole pipelines.
type roundTrips struct{ singles, pipelines, piped atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.singles.Add(1)
		return next(ctx, cmd)
	}
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.pipelines.Add(1)
		h.piped.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

func TestReentrantConcurrentCallsSharePipelines(t *testing.T) {
	c := reset(t)
	rdb := c.Nodes[0].Link().NewClient()
	hook := &roundTrips{}
	rdb.AddHook(hook)
	node := reentrant.NewNode(rdb, 0)
	ctx := t.Context()

	const goroutines, rounds = 64, 20
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for g := range goroutines {
		wg.Go(func() {
			key := mustKey(t, "piped:"+strconv.Itoa(g))
			owner := "c:" + strconv.Itoa(g)
			var seq int64
			for range rounds {
				a, err := node.Acquire(ctx, opFor(key, owner, 1, &seq))
				if err != nil || !a.Acquired || a.Count != 1 {
					wrong.Add(1)
				}
				r, err := node.Release(ctx, opFor(key, owner, 0, &seq), "x")
				if err != nil || r != reentrant.Released {
					wrong.Add(1)
				}
			}
		})
	}
	wg.Wait()
	calls := int64(goroutines * rounds * 2)
	trips := hook.singles.Load() + hook.pipelines.Load()
	t.Logf("%d script calls in %d round trips (%d pipelines carrying %d calls, %d single)",
		calls, trips, hook.pipelines.Load(), hook.piped.Load(), hook.singles.Load())
	require.Zero(t, wrong.Load(), "every call must get its own reply")
	require.GreaterOrEqual(t, hook.singles.Load()+hook.piped.Load(), calls, "every call sent")
	require.Less(t, trips, calls/2, "concurrent calls must share round trips")
	require.Empty(t, lockKeys(t, c.Nodes[0].Direct()), "only the owners' tombstones are left")
}

// The tombstone of an owner (lua/acquire.lua, lua/release.lua): what one
// node remembers of an owner's hold after it ended.

func TestReentrantUndoBeforeItsAcquireRefusesIt(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "undo-first")
	acquire := reentrant.Op{Key: key, Owner: "c:alice", Lease: 10 * time.Second, Count: 1, Seq: 1}
	undo := acquire
	undo.Count, undo.Seq = 0, 2

	// The undo of a failed attempt overtakes the attempt's acquire.
	r, err := node.Release(ctx, undo, "undo")
	require.NoError(t, err)
	require.Equal(t, reentrant.NotHeld, r)
	require.Equal(t, "2", direct.Get(ctx, key.Tombstone("c:alice")).Val(), "the undo leaves a tombstone")
	ttl := direct.PTTL(ctx, key.Tombstone("c:alice")).Val()
	require.Greater(t, ttl, 9*time.Second)
	require.LessOrEqual(t, ttl, 10*time.Second, "the tombstone lives for the lease the release carries")

	a, err := node.Acquire(ctx, acquire) // lands late
	require.NoError(t, err)
	require.Equal(t, reentrant.Acquisition{Stale: true, HolderTTL: -2}, a)
	require.Zero(t, direct.Exists(ctx, key.Lock).Val(), "the late acquire creates nothing")

	next := acquire
	next.Seq = 3
	a, err = node.Acquire(ctx, next)
	require.NoError(t, err)
	require.True(t, a.Acquired, "the owner's next attempt acquires at once")
	require.False(t, a.Stale)
}

func TestReentrantTombstoneIsIgnoredByOtherOwners(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "tomb-other")
	var seqA, seqB int64
	_, err := node.Acquire(ctx, opFor(key, "c:alice", 1, &seqA))
	require.NoError(t, err)
	r, err := node.Release(ctx, opFor(key, "c:alice", 0, &seqA), "rel")
	require.NoError(t, err)
	require.Equal(t, reentrant.Released, r)

	info, err := node.Inspect(ctx, key)
	require.NoError(t, err)
	require.Empty(t, info.Holders, "a tombstone is not a holder")
	require.Equal(t, time.Duration(-2), info.TTL, "nor does it give the lock a TTL")

	a, err := node.Acquire(ctx, opFor(key, "c:bob", 1, &seqB))
	require.NoError(t, err)
	require.True(t, a.Acquired, "bob does not see alice's tombstone")
	require.Equal(t, map[string]string{"c:bob": "1", "c:bob/seq": "1"}, direct.HGetAll(ctx, key.Lock).Val())

	// alice's straggler meets bob's lock: plain contention, with bob's TTL.
	a, err = node.Acquire(ctx, reentrant.Op{Key: key, Owner: "c:alice", Lease: time.Second, Count: 1, Seq: 1})
	require.NoError(t, err)
	require.False(t, a.Acquired)
	require.False(t, a.Stale)
	require.Greater(t, a.HolderTTL, 9*time.Second)
}

func TestReentrantTombstoneNeverGoesBack(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "tomb-monotonic")
	tomb := key.Tombstone("c:alice")
	release := func(seq int64, lease time.Duration) {
		t.Helper()
		_, err := node.Release(ctx, reentrant.Op{Key: key, Owner: "c:alice", Lease: lease, Count: 0, Seq: seq}, "x")
		require.NoError(t, err)
	}
	release(5, 10*time.Second)
	release(3, time.Second) // an older undo arriving late
	require.Equal(t, "5", direct.Get(ctx, tomb).Val(), "the number never goes down")
	require.Greater(t, direct.PTTL(ctx, tomb).Val(), 9*time.Second, "nor the life gets shorter")
	release(7, 20*time.Second)
	require.Equal(t, "7", direct.Get(ctx, tomb).Val())
	require.Greater(t, direct.PTTL(ctx, tomb).Val(), 19*time.Second)

	// A release to a count above zero where the owner holds nothing buries
	// nothing: the owner still holds the lock elsewhere.
	_, err := node.Release(ctx, reentrant.Op{Key: key, Owner: "c:carol", Lease: time.Second, Count: 1, Seq: 9}, "x")
	require.NoError(t, err)
	require.Zero(t, direct.Exists(ctx, key.Tombstone("c:carol")).Val())
}

// TestReentrantForceUnlockBuriesTheEvictedOwners: a force-unlock frees a
// name of its lock hold, its read holds and its semaphore's permits, and
// buries each evicted owner's last applied number in the tombstone of its
// kind of hold, for what its lease had left: the late acquire of each is
// refused, the next one is not. The strict script refuses, changing
// nothing, while a holder is not named.
func TestReentrantForceUnlockBuriesTheEvictedOwners(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "tomb-forced")
	sem := key.Semaphore()
	const lease = 5 * time.Second
	var writes, reads, permits int64
	write := opFor(key, "c:alice", 2, &writes) // alice holds twice
	read := opFor(key, "c:bob", 1, &reads)
	read.Mode = reentrant.Read
	permit := semOp(sem, "c:carol", 2, 3, 1, &permits)
	holds := []struct {
		op   reentrant.Op
		tomb string
	}{{write, key.Tombstone("c:alice")}, {read, key.ReadTombstone("c:bob")}, {permit, sem.Tombstone("c:carol")}}
	// Readers first: a Mutex's acquire does not look at them, a read hold
	// waits for the lock hash's holder.
	for _, i := range []int{1, 2, 0} {
		h := holds[i]
		h.op.Lease = lease
		a, err := node.Acquire(ctx, h.op)
		require.NoError(t, err)
		require.True(t, a.Acquired, h.op.Owner)
	}

	// The strict script refuses while a holder of any kind is not named.
	keys := []string{key.Lock, key.Channel, key.ReadChannel(), key.Readers(), key.ReadLeases(), sem.Lock, sem.Leases, sem.Channel}
	for _, named := range [][]any{{0, 0}, {1, 0, "c:alice"}, {1, 1, "c:alice", "c:bob"}} {
		tombs := make([]string, len(named)-2)
		for i := range tombs {
			tombs[i] = holds[i].tomb
		}
		args := append([]any{"id", 1, named[0], named[1], "id"}, named[2:]...)
		refused, err := lua.ForceUnlock.Run(ctx, direct, append(keys, tombs...), args...).Int64()
		require.NoError(t, err)
		require.Equal(t, int64(-1), refused, "named %v", named)
	}
	require.Equal(t, "2", direct.HGet(ctx, key.Lock, "c:alice").Val(), "a refused force-unlock changes nothing")
	require.Equal(t, "1", direct.HGet(ctx, key.Readers(), "c:bob").Val(), "a refused force-unlock changes nothing")
	require.Equal(t, "2", direct.HGet(ctx, sem.Lock, "c:carol").Val(), "a refused force-unlock changes nothing")

	// Each freed kind is announced where its waiters listen; freed permits
	// ask for a copy from each of the name's nodes (3 here) before a waiter
	// wakes, since a semaphore's acquisition may need them all.
	sub := direct.Subscribe(ctx, key.Channel, key.ReadChannel(), sem.Channel)
	defer sub.Close()
	_, err := sub.Receive(ctx) // the subscription's confirmation
	require.NoError(t, err)
	deleted, err := node.ForceUnlock(ctx, key, "force", 3)
	require.NoError(t, err)
	require.True(t, deleted)
	require.Zero(t, direct.Exists(ctx, key.Lock, key.Readers(), key.ReadLeases(), sem.Lock, sem.Leases).Val(), "every hold's keys are gone")
	announced := map[string][]string{}
	for range 4 { // the lock hash's on both channels, the readers' and the permits'
		m, err := sub.ReceiveMessage(ctx)
		require.NoError(t, err)
		announced[m.Channel] = append(announced[m.Channel], m.Payload)
	}
	require.Equal(t, map[string][]string{key.Channel: {"force", "force"}, key.ReadChannel(): {"force"}, sem.Channel: {"force *3"}}, announced)
	for _, i := range []int{1, 2, 0} {
		h := holds[i]
		require.Equal(t, strconv.FormatInt(h.op.Seq, 10), direct.Get(ctx, h.tomb).Val(), "%s: the owner's last applied number", h.op.Owner)
		ttl := direct.PTTL(ctx, h.tomb).Val()
		require.Greater(t, ttl, time.Duration(0), h.op.Owner)
		require.LessOrEqual(t, ttl, lease, "%s: as long as its lease had left", h.op.Owner)

		late := h.op
		late.Lease = 10 * time.Second
		a, err := node.Acquire(ctx, late)
		require.NoError(t, err)
		require.True(t, a.Stale, "%s: the evicted owner's late acquire is refused", h.op.Owner)
		next := late
		next.Seq++
		a, err = node.Acquire(ctx, next)
		require.NoError(t, err)
		require.True(t, a.Acquired, "%s: its next one is not", h.op.Owner)
	}

	deleted, err = node.ForceUnlock(ctx, mustKey(t, "tomb-forced-none"), "force", 1)
	require.NoError(t, err)
	require.False(t, deleted)
}

// TestReentrantEvictFreesOneOwner: Evict takes one owner's holds of every
// kind (a reader's, a permit holder's, the lock hash's) out and buries it, and leaves the other owners' as they were; an
// owner with nothing here changes nothing.
func TestReentrantEvictFreesOneOwner(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "evicted")
	sem := key.Semaphore()
	var seqs [2]int64
	var ops []reentrant.Op // a read hold and a permit each, then alice's lock hash hold
	for i, owner := range []string{"c:alice", "c:bob"} {
		read := opFor(key, owner, 1, &seqs[i])
		read.Mode = reentrant.Read
		ops = append(ops, read, semOp(sem, owner, 1, 2, 1, &seqs[i]))
	}
	ops = append(ops, opFor(key, "c:alice", 2, &seqs[0])) // after the reads: a Mutex's acquire does not look at them
	for _, op := range ops {
		a, err := node.Acquire(ctx, op)
		require.NoError(t, err)
		require.True(t, a.Acquired, "%s %v", op.Owner, op.Mode)
	}
	alices := []reentrant.Op{ops[0], ops[1], ops[4]}

	evicted, err := node.Evict(ctx, key, "c:nobody", "evict", 1)
	require.NoError(t, err)
	require.False(t, evicted, "an owner with nothing here")
	_, err = node.Evict(ctx, key, "", "evict", 1)
	require.ErrorIs(t, err, reentrant.ErrInvalidArgument)

	evicted, err = node.Evict(ctx, key, "c:alice", "evict", 1)
	require.NoError(t, err)
	require.True(t, evicted)
	info, err := node.Inspect(ctx, key)
	require.NoError(t, err)
	require.Equal(t, []string{"c:bob"}, slices.Collect(maps.Keys(info.Readers)), "bob still reads")
	require.Equal(t, []string{"c:bob"}, slices.Collect(maps.Keys(info.Permits)), "bob keeps his permit")
	require.Equal(t, int64(2), info.Capacity, "the capacity stays with the holders left")
	require.Equal(t, strconv.FormatInt(alices[0].Seq, 10), direct.Get(ctx, key.ReadTombstone("c:alice")).Val(), "alice's read hold is buried")
	require.Equal(t, strconv.FormatInt(alices[1].Seq, 10), direct.Get(ctx, sem.Tombstone("c:alice")).Val(), "alice's permits are buried")
	require.Equal(t, strconv.FormatInt(alices[2].Seq, 10), direct.Get(ctx, key.Tombstone("c:alice")).Val(), "alice's hold of the lock hash is buried")
	require.Empty(t, info.Holders, "the lock hash is free")
	require.Zero(t, direct.Exists(ctx, key.Lock, key.Tombstone("c:bob"), sem.Tombstone("c:bob"), key.ReadTombstone("c:bob")).Val(), "nothing held, nothing buried")

	// The last owner's eviction takes the keys with it.
	evicted, err = node.Evict(ctx, key, "c:bob", "evict", 1)
	require.NoError(t, err)
	require.True(t, evicted)
	require.Zero(t, direct.Exists(ctx, key.Readers(), key.ReadLeases(), sem.Lock, sem.Leases).Val())
}

func TestReentrantForeignDataAtATombstoneIsAnError(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "tomb-foreign")
	tomb := key.Tombstone("c:alice")
	require.NoError(t, direct.HSet(ctx, tomb, "someone", "else").Err())
	var seq int64

	_, err := node.Acquire(ctx, opFor(key, "c:alice", 1, &seq))
	var wt *reentrant.WrongTypeError
	require.ErrorAs(t, err, &wt)
	require.Equal(t, tomb, wt.Key, "the error names the tombstone")
	require.Equal(t, "hash", wt.Type)
	_, err = node.Release(ctx, opFor(key, "c:alice", 0, &seq), "x")
	require.ErrorAs(t, err, &wt)
	require.Equal(t, tomb, wt.Key)
	require.Equal(t, map[string]string{"someone": "else"}, direct.HGetAll(ctx, tomb).Val(), "left untouched")
	require.Zero(t, direct.Exists(ctx, key.Lock).Val())
}

// A string that is not a number at an owner's tombstone is someone else's
// data too: the release that would bury the owner there stops with an error
// naming the tombstone, and the string is left as it was, TTL included.
func TestReentrantForeignStringAtATombstoneIsLeftAsItWas(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "tomb-foreign-string")
	tomb := key.Tombstone("c:alice")
	var seq int64
	_, err := node.Acquire(ctx, opFor(key, "c:alice", 1, &seq))
	require.NoError(t, err)
	require.NoError(t, direct.Set(ctx, tomb, "not a number", time.Hour).Err())

	_, err = node.Release(ctx, opFor(key, "c:alice", 0, &seq), "x")
	var wt *reentrant.WrongTypeError
	require.ErrorAs(t, err, &wt)
	require.Equal(t, tomb, wt.Key, "the error names the tombstone")
	require.Equal(t, "not a number", direct.Get(ctx, tomb).Val(), "left as it was")
	require.Greater(t, direct.PTTL(ctx, tomb).Val(), 59*time.Minute, "its TTL too")
	require.Equal(t, int64(1), direct.Exists(ctx, key.Lock).Val(), "the lock is not released past the error")
}

// A node's own error during a script's call is the node's error, not
// foreign data. Under maxmemory every write fails with OOM, the first one a
// release makes included: its tombstone's SET, which used to read as "the
// tombstone holds a none, not a relock lock". (CI met the same path as
// READONLY, on a master a failover had just made a replica, through
// go-redis's default clients.) A replica cut off from its master with
// replica-serve-stale-data off answers MASTERDOWN, before the script runs.
// Either way the release fails with the node's error and changes nothing,
// whether the owner holds the lock there or not.
func TestReentrantNodeErrorIsNotForeignData(t *testing.T) {
	// Each case puts the node in its error state and returns what takes it
	// out (the node's data is read after that: a cut-off replica answers
	// MASTERDOWN to reads too).
	for _, tc := range []struct {
		code string
		fail func(ctx context.Context, t *testing.T, direct *redis.Client) (heal func())
	}{
		{"OOM", func(ctx context.Context, t *testing.T, direct *redis.Client) func() {
			require.NoError(t, direct.ConfigSet(ctx, "maxmemory", "1").Err())
			return func() { require.NoError(t, direct.ConfigSet(context.Background(), "maxmemory", "0").Err()) }
		}},
		{"MASTERDOWN", func(ctx context.Context, t *testing.T, direct *redis.Client) func() {
			// Port 1 on the node's own loopback: a master that never answers.
			require.NoError(t, direct.ConfigSet(ctx, "replica-serve-stale-data", "no").Err())
			require.NoError(t, direct.ReplicaOf(ctx, "127.0.0.1", "1").Err())
			return func() {
				require.NoError(t, direct.ReplicaOf(context.Background(), "NO", "ONE").Err())
				require.NoError(t, direct.ConfigSet(context.Background(), "replica-serve-stale-data", "yes").Err())
			}
		}},
	} {
		t.Run(tc.code, func(t *testing.T) {
			node, direct := singleNode(t)
			ctx := t.Context()
			key := mustKey(t, "node-error")
			var seq int64
			_, err := node.Acquire(ctx, opFor(key, "c:alice", 1, &seq))
			require.NoError(t, err)
			heal := sync.OnceFunc(tc.fail(ctx, t, direct))
			t.Cleanup(heal) // if the test ends before it heals the node

			owners := []string{"c:alice", "c:bob"}
			for _, owner := range owners {
				_, err = node.Release(ctx, opFor(key, owner, 0, &seq), "x")
				var wt *reentrant.WrongTypeError
				require.False(t, errors.As(err, &wt), "%s: a node's %s read as foreign data: %v", owner, tc.code, err)
				require.ErrorContains(t, err, tc.code, owner)
			}
			heal()
			for _, owner := range owners {
				require.Zero(t, direct.Exists(ctx, key.Tombstone(owner)).Val(), "%s: nothing buried", owner)
			}
			require.Equal(t, "1", direct.HGet(ctx, key.Lock, "c:alice").Val(), "alice still holds")
		})
	}
}

// TestReentrantHandOffIsKeptForItsTarget: a release that hands a Mutex off
// (WakeQueue) keeps it for its target for a moment on that node: another
// waiting owner that asks then (Op.TakesTurn) is refused and queued, the
// target takes it and ends the reservation, and a reservation whose target
// never comes lapses on its own.
func TestReentrantHandOffIsKeptForItsTarget(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "handed-off")
	var seq int64
	waiting := func(owner string, ticket int64) reentrant.Op {
		op := opFor(key, owner, 1, &seq)
		op.Ticket, op.TakesTurn = ticket, true
		return op
	}
	handOff := func() {
		hold := opFor(key, "c:holder", 1, &seq)
		a, err := node.Acquire(ctx, hold)
		require.NoError(t, err)
		require.True(t, a.Acquired)
		a, err = node.Acquire(ctx, waiting("t:target", 10))
		require.NoError(t, err)
		require.False(t, a.Acquired, "the target waits behind the holder")
		hold.Count, hold.Seq, hold.Wake = 0, hold.Seq+2, reentrant.WakeQueue
		r, err := node.Release(ctx, hold, "rel")
		require.NoError(t, err)
		require.Equal(t, reentrant.Released, r)
	}

	handOff()
	a, err := node.Acquire(ctx, waiting("b:barger", 20))
	require.NoError(t, err)
	require.True(t, a.Queued, "a waiting owner asking just after the hand-off is refused: %+v", a)
	require.Zero(t, direct.Exists(ctx, key.Lock).Val(), "and takes nothing")
	require.Contains(t, direct.ZRange(ctx, key.Queue, 0, -1).Val(), "b:barger", "it joins the queue")
	a, err = node.Acquire(ctx, waiting("t:target", 10))
	require.NoError(t, err)
	require.True(t, a.Acquired, "the target takes the lock handed to it")
	require.Zero(t, direct.Exists(ctx, key.QueueDeadlines).Val(), "taking it ends the reservation")
	r, err := node.Release(ctx, opFor(key, "t:target", 0, &seq), "rel2")
	require.NoError(t, err)
	require.Equal(t, reentrant.Released, r)

	// A target that never comes: the reservation lapses within its hold.
	require.NoError(t, direct.Del(ctx, key.Queue).Err())
	handOff()
	require.Eventually(t, func() bool {
		a, err := node.Acquire(ctx, waiting("b:barger", 20))
		require.NoError(t, err)
		return a.Acquired
	}, 2*time.Second, 5*time.Millisecond, "the reservation of a target that never came must lapse")
}

// TestReentrantHandOffAloneReservesNothing: a release with WakeQueueAlone
// (a lock on one node, where no acquire takes turns) hands the lock to the
// head of the queue as WakeQueue does, published for the target's process
// and taken out of the queue, but writes no reservation, so the next owner
// to ask takes it at once.
func TestReentrantHandOffAloneReservesNothing(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "handed-off-alone")
	var seq int64
	hold := opFor(key, "c:holder", 1, &seq)
	a, err := node.Acquire(ctx, hold)
	require.NoError(t, err)
	require.True(t, a.Acquired)
	waiter := opFor(key, "t:target", 1, &seq)
	waiter.Ticket = 10
	a, err = node.Acquire(ctx, waiter)
	require.NoError(t, err)
	require.False(t, a.Acquired, "the target waits behind the holder")

	sub := direct.Subscribe(ctx, pubsub.PersonalChannel(key.Channel, "t"))
	t.Cleanup(func() { _ = sub.Close() })
	_, err = sub.Receive(ctx) // the subscription's confirmation
	require.NoError(t, err)

	hold.Count, hold.Seq, hold.Wake = 0, hold.Seq+2, reentrant.WakeQueueAlone
	r, err := node.Release(ctx, hold, "rel")
	require.NoError(t, err)
	require.Equal(t, reentrant.Released, r)
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "rel t:target ", msg.Payload, "handed to the target, published for its process")
	require.Zero(t, direct.Exists(ctx, key.Queue).Val(), "the target is out of the queue")
	require.Zero(t, direct.Exists(ctx, key.QueueDeadlines).Val(), "no reservation")

	barger := opFor(key, "b:barger", 1, &seq)
	barger.Ticket, barger.TakesTurn = 20, true
	a, err = node.Acquire(ctx, barger)
	require.NoError(t, err)
	require.True(t, a.Acquired, "nothing is reserved: whoever asks first takes it: %+v", a)
}

// TestReentrantReleaseLeavesTheQueueWhereItHeld: an owner refused on a
// node while it waited stays in that node's queue when it takes the lock
// through the others; a renewal's repair may then write its hold there
// (a repair carries no ticket, so it leaves the queue alone). The release
// that ends the hold, told the owner may be queued there (LeaveQueue),
// takes it out, as one that finds no hold does. Before 2026-12-06 the
// entry stayed while others kept queuing, and every release there sent a
// copy for keepers to the owner's process.
func TestReentrantReleaseLeavesTheQueueWhereItHeld(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "leave-where-held")
	var bseq, aseq int64
	holder := opFor(key, "b:holder", 1, &bseq)
	got, err := node.Acquire(ctx, holder)
	require.NoError(t, err)
	require.True(t, got.Acquired)
	waiter := opFor(key, "a:waiter", 1, &aseq)
	waiter.Ticket = 10
	got, err = node.Acquire(ctx, waiter)
	require.NoError(t, err)
	require.False(t, got.Acquired)
	require.NoError(t, direct.ZScore(ctx, key.Queue, "a:waiter").Err(), "the refused waiter is queued")

	holder.Count, holder.Seq, holder.Wake = 0, holder.Seq+2, reentrant.WakeKeepers // not the tie-breaker
	r, err := node.Release(ctx, holder, "rel-b")
	require.NoError(t, err)
	require.Equal(t, reentrant.Released, r)
	repair := opFor(key, "a:waiter", 1, &aseq)
	got, err = node.Acquire(ctx, repair)
	require.NoError(t, err)
	require.True(t, got.Acquired, "the repair writes the hold")
	require.NoError(t, direct.ZScore(ctx, key.Queue, "a:waiter").Err(), "a repair leaves the queue alone")

	release := opFor(key, "a:waiter", 0, &aseq)
	release.Wake, release.LeaveQueue = reentrant.WakeKeepers, true
	r, err = node.Release(ctx, release, "rel-a")
	require.NoError(t, err)
	require.Equal(t, reentrant.Released, r)
	require.ErrorIs(t, direct.ZScore(ctx, key.Queue, "a:waiter").Err(), redis.Nil, "the owner is still queued after its release")
}

// TestReentrantReleaseReadsTheQueueOnce: a release to 0 reads the queue
// once, above the helpers (release.lua), and decides on it as below them:
// with nobody queued it deletes the lock and publishes nothing, whatever
// its Wake; with another type at the queue's key, a hand-off fails as
// foreign data and changes nothing, and a copy for keepers goes to the
// channel itself.
func TestReentrantReleaseReadsTheQueueOnce(t *testing.T) {
	_, direct := singleNode(t)
	// A client that never sends a call twice, whatever RELOCK_TEST_CLIENTS
	// says: through one that may, Op.NoStrays is void and every release
	// leaves a tombstone.
	node := reentrant.NewNode(fixtureClients(t, 1)[0], 0)
	ctx := t.Context()
	for _, wake := range []reentrant.Wake{reentrant.WakeQueue, reentrant.WakeQueueAlone, reentrant.WakeKeepers} {
		key := mustKey(t, fmt.Sprintf("queue-read-once-%d", wake))
		sub := direct.Subscribe(ctx, key.Channel, pubsub.PersonalChannel(key.Channel, "c"))
		// Closed however the test ends: a subscription left open would be
		// counted by the next test that counts Pub/Sub connections.
		t.Cleanup(func() { _ = sub.Close() })
		for range 2 {
			_, err := sub.Receive(ctx) // the subscriptions' confirmations
			require.NoError(t, err)
		}
		var seq int64
		for _, noStrays := range []bool{true, false} {
			hold := opFor(key, "c:alice", 1, &seq)
			_, err := node.Acquire(ctx, hold)
			require.NoError(t, err)
			hold.Count, hold.Seq, hold.Wake, hold.NoStrays = 0, hold.Seq+1, wake, noStrays
			seq = hold.Seq
			r, err := node.Release(ctx, hold, "empty")
			require.NoError(t, err)
			require.Equal(t, reentrant.Released, r, "wake %d, no strays %v", wake, noStrays)
			require.Zero(t, direct.Exists(ctx, key.Lock).Val())
			require.Equal(t, !noStrays, direct.Exists(ctx, key.Tombstone("c:alice")).Val() == 1, "a tombstone unless no stray can land")
		}
		require.NoError(t, direct.Publish(ctx, key.Channel, "mark").Err())
		msg, err := sub.ReceiveMessage(ctx)
		require.NoError(t, err)
		require.Equal(t, "mark", msg.Payload, "the releases with nobody queued published nothing")

		hold := opFor(key, "c:alice", 1, &seq)
		_, err = node.Acquire(ctx, hold)
		require.NoError(t, err)
		require.NoError(t, direct.Set(ctx, key.Queue, "someone else's data", 0).Err())
		hold.Count, hold.Seq, hold.Wake, hold.NoStrays = 0, hold.Seq+1, wake, true
		r, err := node.Release(ctx, hold, "foreign")
		if wake == reentrant.WakeKeepers {
			require.NoError(t, err)
			require.Equal(t, reentrant.Released, r)
			msg, err = sub.ReceiveMessage(ctx)
			require.NoError(t, err)
			require.Equal(t, key.Channel, msg.Channel, "the first message of all, on the channel itself")
			require.Equal(t, "foreign k", msg.Payload)
		} else {
			require.ErrorIs(t, err, reentrant.ErrWrongType, "wake %d", wake)
			require.Equal(t, map[string]string{"c:alice": "1", "c:alice/seq": strconv.FormatInt(hold.Seq-1, 10)},
				direct.HGetAll(ctx, key.Lock).Val(), "the hold stays as it was")
		}
		require.Equal(t, "someone else's data", direct.Get(ctx, key.Queue).Val())
	}
}

// TestReentrantContendedReleaseDecidesAlike: a release to 0 that finds
// owners queued runs above release.lua's helpers when it has no tombstone
// to leave (Op.NoStrays), and below them, through queueHead and announce,
// when it has one. Both ways must decide alike: the same reply, the same
// queue and reservation left, the same messages on the same channels. Each
// scene also says what that is, so that both ways cannot be wrong together.
func TestReentrantContendedReleaseDecidesAlike(t *testing.T) {
	_, direct := singleNode(t)
	// A client that never sends a call twice: through one that may,
	// Op.NoStrays is void and every release takes the way below.
	node := reentrant.NewNode(fixtureClients(t, 1)[0], 0)
	ctx := t.Context()

	type heard struct{ channel, payload string }
	type outcome struct {
		reply       reentrant.ReleaseResult
		queue       []string
		reservation string
		heard       []heard
	}
	release := func(name string, wake reentrant.Wake, queued []string, noStrays bool) outcome {
		key := mustKey(t, name)
		sub := direct.PSubscribe(ctx, key.Channel, key.Channel+">*")
		defer func() { _ = sub.Close() }()
		for range 2 {
			_, err := sub.Receive(ctx) // the subscriptions' confirmations
			require.NoError(t, err)
		}
		var seq int64
		hold := opFor(key, "c:alice", 1, &seq)
		got, err := node.Acquire(ctx, hold)
		require.NoError(t, err)
		require.True(t, got.Acquired)
		for i, owner := range queued {
			require.NoError(t, direct.ZAdd(ctx, key.Queue, redis.Z{Score: float64(10 + i), Member: owner}).Err())
		}
		hold.Count, hold.Seq, hold.Wake, hold.NoStrays = 0, hold.Seq+1, wake, noStrays
		var out outcome
		out.reply, err = node.Release(ctx, hold, "rel")
		require.NoError(t, err)
		require.Zero(t, direct.Exists(ctx, key.Lock).Val(), "the lock is freed")
		require.Equal(t, !noStrays, direct.Exists(ctx, key.Tombstone("c:alice")).Val() == 1, "a tombstone unless no stray can land")
		out.queue = direct.ZRange(ctx, key.Queue, 0, -1).Val()
		out.reservation = direct.Get(ctx, key.QueueDeadlines).Val()
		if out.reservation != "" {
			require.LessOrEqual(t, direct.PTTL(ctx, key.QueueDeadlines).Val(), 20*time.Millisecond, "a reservation lives handOffHold")
		}
		require.NoError(t, direct.Publish(ctx, key.Channel, "mark").Err())
		for {
			msg, err := sub.ReceiveMessage(ctx)
			require.NoError(t, err)
			if msg.Payload == "mark" {
				return out
			}
			out.heard = append(out.heard, heard{strings.TrimPrefix(msg.Channel, key.Channel), msg.Payload})
		}
	}

	scenes := []struct {
		name   string
		wake   reentrant.Wake
		queued []string
		want   outcome
	}{
		{"handed off, reserved", reentrant.WakeQueue, []string{"p1:w1", "p2:w2", "p3:w3"}, outcome{
			reentrant.Released, []string{"p2:w2", "p3:w3"}, "p1:w1",
			[]heard{{">p1", "rel p1:w1 p2:w2"}, {">p2", "rel p1:w1 p2:w2"}}}},
		{"handed off on one node", reentrant.WakeQueueAlone, []string{"p1:w1"}, outcome{
			reentrant.Released, []string{}, "", []heard{{">p1", "rel p1:w1 "}}}},
		{"target and next in one process", reentrant.WakeQueueAlone, []string{"p1:w1", "p1:w2"}, outcome{
			reentrant.Released, []string{"p1:w2"}, "", []heard{{">p1", "rel p1:w1 p1:w2"}}}},
		{"the releaser queued by mistake", reentrant.WakeQueue, []string{"p1:w1", "c:alice", "p2:w2"}, outcome{
			reentrant.Released, []string{"p2:w2"}, "p1:w1", []heard{{">p1", "rel p1:w1 p2:w2"}, {">p2", "rel p1:w1 p2:w2"}}}},
		{"keepers in two processes", reentrant.WakeKeepers, []string{"p1:w1", "p2:w2", "p1:w3"}, outcome{
			reentrant.Released, []string{"p1:w1", "p2:w2", "p1:w3"}, "", []heard{{">p1", "rel k"}, {">p2", "rel k"}}}},
		{"more keepers than personal messages", reentrant.WakeKeepers, []string{"p1:w1", "p2:w2", "p3:w3", "p4:w4", "p5:w5"}, outcome{
			reentrant.Released, []string{"p1:w1", "p2:w2", "p3:w3", "p4:w4", "p5:w5"}, "", []heard{{"", "rel k"}}}},
		{"an owner id without a process", reentrant.WakeQueueAlone, []string{"solo"}, outcome{
			reentrant.Released, []string{}, "", []heard{{"", "rel solo "}}}},
	}
	for i, sc := range scenes {
		for _, noStrays := range []bool{true, false} {
			got := release(fmt.Sprintf("contended-release-%d-%v", i, noStrays), sc.wake, sc.queued, noStrays)
			require.Equal(t, sc.want, got, "%s, no strays %v", sc.name, noStrays)
		}
	}
}

// TestReentrantAcquireHintsDecideAlike: the acquire script's hints (no
// tombstone expected, Op.NoStrays; what the owner expects, Op.Expect; in no
// queue here, Op.Unqueued) choose which commands it runs, and whether above
// its helpers or below them, never what it decides: every scene answers
// alike under each combination and leaves the same state. A refusal
// expected as such runs neither EXISTS nor HLEN.
func TestReentrantAcquireHintsDecideAlike(t *testing.T) {
	_, direct := singleNode(t)
	// A client that never sends a call twice: the commands counted below
	// are those of its path (through one that may, a refusal also buries).
	node := reentrant.NewNode(fixtureClients(t, 1)[0], 0)
	ctx := t.Context()
	type hints struct {
		noStrays bool
		expect   reentrant.Expectation
		unqueued bool
	}
	var combos []hints
	for _, noStrays := range []bool{false, true} {
		for _, expect := range []reentrant.Expectation{reentrant.ExpectFree, reentrant.ExpectHeld, reentrant.ExpectHandOff} {
			for _, unqueued := range []bool{false, true} {
				combos = append(combos, hints{noStrays, expect, unqueued})
			}
		}
	}
	reserve := func(key reentrant.Key, owner string) {
		require.NoError(t, direct.Set(ctx, key.QueueDeadlines, owner, 10*time.Second).Err())
	}
	// Each scene sets the lock's state up, then alice acquires with seq 10
	// (taking turns after a hand-off where takesTurn says).
	scenes := []struct {
		name      string
		takesTurn bool
		setUp     func(key reentrant.Key)
		want      reentrant.Acquisition
	}{
		{"free", false, func(reentrant.Key) {}, reentrant.Acquisition{Acquired: true, Count: 1}},
		{"held by bob", false, func(key reentrant.Key) {
			require.NoError(t, direct.HSet(ctx, key.Lock, "c:bob", 1, "c:bob/seq", 1).Err())
			require.NoError(t, direct.PExpire(ctx, key.Lock, 10*time.Second).Err())
		}, reentrant.Acquisition{HolderTTL: 10 * time.Second}},
		{"held by bob, alice's tombstone beside", false, func(key reentrant.Key) {
			require.NoError(t, direct.HSet(ctx, key.Lock, "c:bob", 1, "c:bob/seq", 1).Err())
			require.NoError(t, direct.PExpire(ctx, key.Lock, 10*time.Second).Err())
			require.NoError(t, direct.Set(ctx, key.Tombstone("c:alice"), 4, 10*time.Second).Err())
		}, reentrant.Acquisition{HolderTTL: 10 * time.Second}},
		{"free, alice's newer tombstone", false, func(key reentrant.Key) {
			require.NoError(t, direct.Set(ctx, key.Tombstone("c:alice"), 12, 10*time.Second).Err())
		}, reentrant.Acquisition{Stale: true, HolderTTL: -2}},
		{"free, alice's older tombstone", false, func(key reentrant.Key) {
			require.NoError(t, direct.Set(ctx, key.Tombstone("c:alice"), 4, 10*time.Second).Err())
		}, reentrant.Acquisition{Acquired: true, Count: 1}},
		{"alice's own hold, this call applied already", false, func(key reentrant.Key) {
			require.NoError(t, direct.HSet(ctx, key.Lock, "c:alice", 2, "c:alice/seq", 10).Err())
			require.NoError(t, direct.PExpire(ctx, key.Lock, 10*time.Second).Err())
		}, reentrant.Acquisition{Acquired: true, Count: 2}},
		{"bob's hold beside alice's sequence number", false, func(key reentrant.Key) {
			require.NoError(t, direct.HSet(ctx, key.Lock, "c:bob", 1, "c:alice/seq", 3).Err())
			require.NoError(t, direct.PExpire(ctx, key.Lock, 10*time.Second).Err())
		}, reentrant.Acquisition{HolderTTL: 10 * time.Second}},
		{"free, taking turns, no hand-off", true, func(reentrant.Key) {}, reentrant.Acquisition{Acquired: true, Count: 1}},
		{"free, handed off to alice", true, func(key reentrant.Key) { reserve(key, "c:alice") },
			reentrant.Acquisition{Acquired: true, Count: 1}},
		{"free, handed off to bob", true, func(key reentrant.Key) { reserve(key, "c:bob") },
			reentrant.Acquisition{Queued: true, HolderTTL: -2}},
		{"free, alice's newer tombstone, handed off to bob", true, func(key reentrant.Key) {
			reserve(key, "c:bob")
			require.NoError(t, direct.Set(ctx, key.Tombstone("c:alice"), 12, 10*time.Second).Err())
		}, reentrant.Acquisition{Queued: true, HolderTTL: -2}},
		{"free, alice's newer tombstone, handed off to alice", true, func(key reentrant.Key) {
			reserve(key, "c:alice")
			require.NoError(t, direct.Set(ctx, key.Tombstone("c:alice"), 12, 10*time.Second).Err())
		}, reentrant.Acquisition{Stale: true, HolderTTL: -2}},
		{"held by bob, handed off to alice", true, func(key reentrant.Key) {
			reserve(key, "c:alice")
			require.NoError(t, direct.HSet(ctx, key.Lock, "c:bob", 1, "c:bob/seq", 1).Err())
			require.NoError(t, direct.PExpire(ctx, key.Lock, 10*time.Second).Err())
		}, reentrant.Acquisition{HolderTTL: 10 * time.Second}},
	}
	for _, scene := range scenes {
		var states []map[string]string
		for _, h := range combos {
			key := mustKey(t, "hints:"+scene.name)
			require.NoError(t, direct.Del(ctx, key.Lock, key.Tombstone("c:alice"), key.QueueDeadlines, key.Queue).Err())
			scene.setUp(key)
			op := reentrant.Op{Key: key, Owner: "c:alice", Lease: 10 * time.Second, Count: 1, Seq: 10,
				NoStrays: h.noStrays, Expect: h.expect, Unqueued: h.unqueued}
			if scene.takesTurn {
				op.Ticket, op.TakesTurn = 5, true
			}
			got, err := node.Acquire(ctx, op)
			require.NoError(t, err, "%s %+v", scene.name, h)
			if scene.want.HolderTTL > 0 {
				require.InDelta(t, scene.want.HolderTTL, got.HolderTTL, float64(time.Second), "%s %+v", scene.name, h)
				got.HolderTTL = scene.want.HolderTTL
			}
			require.Equal(t, scene.want, got, "%s %+v", scene.name, h)
			state, err := direct.HGetAll(ctx, key.Lock).Result()
			require.NoError(t, err)
			state["reserved for"] = direct.Get(ctx, key.QueueDeadlines).Val()
			state["queued"] = strings.Join(direct.ZRange(ctx, key.Queue, 0, -1).Val(), ",")
			states = append(states, state)
		}
		for i := range states {
			require.Equal(t, states[0], states[i], "%s: the lock as %+v left it", scene.name, combos[i])
		}
	}

	// A refusal expected as such: the owner's fields and the TTL, no more.
	key := mustKey(t, "hints:cost")
	require.NoError(t, direct.HSet(ctx, key.Lock, "c:bob", 1, "c:bob/seq", 1).Err())
	require.NoError(t, direct.PExpire(ctx, key.Lock, 10*time.Second).Err())
	before := commandCalls(t, 0, "exists", "hlen", "hmget", "pttl")
	beforeCheap := commandCalls(t, 0, "exists", "hlen")
	got, err := node.Acquire(ctx, reentrant.Op{Key: key, Owner: "c:alice", Lease: 10 * time.Second, Count: 1, Seq: 10,
		NoStrays: true, Expect: reentrant.ExpectHeld})
	require.NoError(t, err)
	require.False(t, got.Acquired)
	require.Equal(t, beforeCheap, commandCalls(t, 0, "exists", "hlen"), "no EXISTS, no HLEN")
	require.Equal(t, before+2, commandCalls(t, 0, "exists", "hlen", "hmget", "pttl"), "HMGET and PTTL")

	// A hand-off expected as such reads and ends the reservation in one
	// GETDEL: no GET, no DEL.
	key = mustKey(t, "hints:hand-off cost")
	reserve(key, "c:alice")
	handedOff := reentrant.Op{Key: key, Owner: "c:alice", Lease: 10 * time.Second, Count: 1, Seq: 10,
		NoStrays: true, Expect: reentrant.ExpectHandOff, Ticket: 5, TakesTurn: true}
	reads := []string{"exists", "get", "getdel", "del"}
	before = commandCalls(t, 0, reads...)
	got, err = node.Acquire(ctx, handedOff)
	require.NoError(t, err)
	require.True(t, got.Acquired)
	require.Equal(t, before+2, commandCalls(t, 0, reads...), "EXISTS and GETDEL")
	require.Zero(t, direct.Exists(ctx, key.QueueDeadlines).Val(), "the reservation is over")

	// A waiter that expects a holder and meets another owner's reservation
	// is refused without reading its tombstone: HMGET, PTTL, GET of the
	// reservation, and no other read.
	key = mustKey(t, "hints:refused by a reservation")
	reserve(key, "c:bob")
	reads = []string{"exists", "hlen", "hmget", "pttl", "get"}
	before = commandCalls(t, 0, reads...)
	got, err = node.Acquire(ctx, reentrant.Op{Key: key, Owner: "c:alice", Lease: 10 * time.Second, Count: 1, Seq: 10,
		NoStrays: true, Expect: reentrant.ExpectHeld, Ticket: 5, TakesTurn: true})
	require.NoError(t, err)
	require.True(t, got.Queued, "refused for bob: %+v", got)
	require.Equal(t, before+3, commandCalls(t, 0, reads...), "HMGET, PTTL and GET")
}

// tripRecorder is a go-redis hook that records each round trip a client
// makes (a command, or a pipeline) as the names of the commands it carried,
// except a new connection's HELLO.
type tripRecorder struct {
	mu    sync.Mutex
	trips [][]string
}

func (r *tripRecorder) record(cmds ...redis.Cmder) {
	if len(cmds) == 1 && cmds[0].Name() == "hello" {
		return
	}
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.Name()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trips = append(r.trips, names)
}

func (r *tripRecorder) take() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.trips
	r.trips = nil
	return out
}

func (r *tripRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *tripRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.record(cmd)
		return next(ctx, cmd)
	}
}

func (r *tripRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.record(cmds...)
		return next(ctx, cmds)
	}
}

// TestReentrantScriptsGoBySourceUntilTheNodeHasThem: a script the node
// never answered goes with its source (EVAL, which caches it): one round
// trip, where asking by SHA first costs two, so a link slower than half a
// call's wait still lets it through. Once answered, it goes by SHA. A node
// that lost its scripts (SCRIPT FLUSH, as after a restart) costs one round
// trip more, not two: a call that met NOSCRIPT goes again with the script's
// source, not by SHA once more; in a batch only the first call of each
// script carries the source, the others go by SHA behind it, in the same
// trip; and every script goes by source again from then on, until answered.
func TestReentrantScriptsGoBySourceUntilTheNodeHasThem(t *testing.T) {
	c := reset(t)
	ctx := t.Context()
	rec := &tripRecorder{}
	// The fixture's settings whatever RELOCK_TEST_CLIENTS says: a new
	// connection sends nothing (no HELLO, no CLIENT SETINFO) the recorder
	// would count as a trip.
	client := redis.NewClient(fixture.FixtureOptions(c.Nodes[0].Link().Addr()))
	t.Cleanup(func() { _ = client.Close() })
	client.AddHook(rec)
	node := reentrant.NewNode(client, 0)
	direct := c.Nodes[0].Direct()
	a, b, d := mustKey(t, "flush-trips-a"), mustKey(t, "flush-trips-b"), mustKey(t, "flush-trips-d")
	var alice, bob, dan int64

	got, err := node.Acquire(ctx, opFor(d, "c:dan", 1, &dan))
	require.NoError(t, err)
	require.True(t, got.Acquired)
	require.Equal(t, [][]string{{"eval"}}, rec.take(), "a script the node never answered: its source at once")
	got, err = node.Acquire(ctx, opFor(d, "c:dan", 2, &dan))
	require.NoError(t, err)
	require.Equal(t, reentrant.Acquisition{Acquired: true, Count: 2}, got)
	require.Equal(t, [][]string{{"evalsha"}}, rec.take(), "answered once: by SHA")

	require.NoError(t, direct.ScriptFlush(ctx).Err())
	got, err = node.Acquire(ctx, opFor(a, "c:alice", 1, &alice))
	require.NoError(t, err)
	require.True(t, got.Acquired)
	require.Equal(t, [][]string{{"evalsha"}, {"eval"}}, rec.take(), "a lone call: NOSCRIPT, then the source")

	require.NoError(t, direct.ScriptFlush(ctx).Err())
	results := node.Apply(ctx, []reentrant.Change{
		{Op: opFor(b, "c:bob", 1, &bob)},
		{Op: opFor(b, "c:bob", 2, &bob)},
		{Op: opFor(a, "c:alice", 0, &alice), Release: true, ReleaseID: "r1"},
	})
	for i, r := range results {
		require.NoError(t, r.Err, "change %d", i)
	}
	require.Equal(t, [][]string{{"evalsha", "evalsha", "eval"}, {"eval", "evalsha"}}, rec.take(),
		"a batch: the release never answered by source, NOSCRIPT for the acquires, then the script's source once, in one trip")
	require.True(t, results[0].Acquisition.Acquired)
	require.Equal(t, reentrant.Acquisition{Acquired: true, Count: 2}, results[1].Acquisition)
	require.Equal(t, reentrant.Released, results[2].Released)

	renewed := node.RenewAll(ctx, []reentrant.Op{opFor(b, "c:bob", 2, &bob)})
	require.NoError(t, renewed[0].Err)
	require.True(t, renewed[0].Held)
	require.Equal(t, [][]string{{"eval"}}, rec.take(), "a renewal batch of one, its script new to the node")
	require.NoError(t, direct.ScriptFlush(ctx).Err())
	renewed = node.RenewAll(ctx, []reentrant.Op{opFor(b, "c:bob", 2, &bob)})
	require.NoError(t, renewed[0].Err)
	require.True(t, renewed[0].Held)
	require.Equal(t, [][]string{{"evalsha"}, {"eval"}}, rec.take(), "a renewal batch of one after a flush")
	got, err = node.Acquire(ctx, opFor(d, "c:dan", 3, &dan))
	require.NoError(t, err)
	require.Equal(t, reentrant.Acquisition{Acquired: true, Count: 3}, got)
	require.Equal(t, [][]string{{"eval"}}, rec.take(), "after a NOSCRIPT every script goes by source until answered")
}
