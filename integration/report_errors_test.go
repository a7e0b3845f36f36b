package integration_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/reentrant"
)

// requireForeignAt asserts that err is a *reentrant.WrongTypeError naming key.
func requireForeignAt(t *testing.T, err error, key string, msgAndArgs ...any) {
	t.Helper()
	var wt *reentrant.WrongTypeError
	require.ErrorAs(t, err, &wt, msgAndArgs...)
	require.Equal(t, key, wt.Key, msgAndArgs...)
}

// TestReportInspectNonNumberIsForeignData: a value that cannot be a number
// where relock keeps one (a hold count, a reader's or a permit holder's
// count, the semaphore's capacity), written by someone else, makes the
// inspect of that node fail with an error naming the key; it is not read
// as 0, nor does it shift the reply so that other values read wrong.
func TestReportInspectNonNumberIsForeignData(t *testing.T) {
	t.Run("lock hash", func(t *testing.T) {
		node, direct := singleNode(t)
		ctx := t.Context()
		key := mustKey(t, "report-count")
		// Two holders, so that a count dropped from the reply does not
		// leave it odd: the first owner used to read as holding 0.
		require.NoError(t, direct.HSet(ctx, key.Lock, "c:alice", "abc", "c:bob", "abc").Err())
		require.NoError(t, direct.PExpire(ctx, key.Lock, time.Minute).Err())
		_, err := node.Inspect(ctx, key)
		requireForeignAt(t, err, key.Lock)
		_, err = node.InspectHolds(ctx, key)
		requireForeignAt(t, err, key.Lock)
		require.Equal(t, map[string]string{"c:alice": "abc", "c:bob": "abc"}, direct.HGetAll(ctx, key.Lock).Val(), "left untouched")

		// Through the lock package: the node's state carries the error.
		c := newLockClient(t, 1, lock.Options{})
		states, err := c.Inspect(ctx, "report-count")
		require.NoError(t, err)
		require.Len(t, states, 1)
		requireForeignAt(t, states[0].Err, key.Lock)
	})
	t.Run("reader", func(t *testing.T) {
		node, direct := singleNode(t)
		ctx := t.Context()
		key := mustKey(t, "report-reader")
		var seq int64
		read := opFor(key, "c:alice", 1, &seq)
		read.Mode = reentrant.Read
		a, err := node.Acquire(ctx, read)
		require.NoError(t, err)
		require.True(t, a.Acquired)
		require.NoError(t, direct.HSet(ctx, key.Readers(), "c:alice", "abc").Err())
		_, err = node.Inspect(ctx, key)
		requireForeignAt(t, err, key.Readers())
	})
	t.Run("permits", func(t *testing.T) {
		node, direct := singleNode(t)
		ctx := t.Context()
		key := mustKey(t, "report-permits")
		sem := key.Semaphore()
		var seq int64
		a, err := node.Acquire(ctx, semOp(sem, "c:alice", 1, 2, 1, &seq))
		require.NoError(t, err)
		require.True(t, a.Acquired)
		require.NoError(t, direct.HSet(ctx, sem.Lock, "c:alice", "abc").Err())
		_, err = node.Inspect(ctx, key)
		requireForeignAt(t, err, key.Permits())
		_, err = node.InspectSemaphore(ctx, sem)
		requireForeignAt(t, err, sem.Lock)
	})
	// What relock never writes as a capacity: no number, and numbers Lua's
	// tonumber would take although they are no whole count of permits.
	for _, stored := range []string{"abc", "1.5", "0", "-2", "0x10", " 2", "2e0"} {
		t.Run("capacity "+stored, func(t *testing.T) {
			node, direct := singleNode(t)
			ctx := t.Context()
			key := mustKey(t, "report-capacity")
			sem := key.Semaphore()
			require.NoError(t, direct.HSet(ctx, key.Permits(), "/capacity", stored).Err())
			_, err := node.Inspect(ctx, key)
			requireForeignAt(t, err, key.Permits(), "a capacity of %q is not read as one", stored)
			_, err = node.InspectSemaphore(ctx, sem)
			requireForeignAt(t, err, sem.Lock, "nor by the semaphore's own inspect")
			var seq int64
			_, err = node.Acquire(ctx, semOp(sem, "c:alice", 1, 2, 1, &seq))
			requireForeignAt(t, err, sem.Lock, "an acquire does not take it for another capacity and write its own")
			require.Equal(t, stored, direct.HGet(ctx, key.Permits(), "/capacity").Val(), "left untouched")
		})
	}
}

// TestReportForeignReadLeasesNamedAsSuch: a key of another type where an
// RWMutex keeps its readers' leases is named in the error as that key, not
// as the readers' hash beside it, by every script that reads it.
func TestReportForeignReadLeasesNamedAsSuch(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "report-readleases")
	require.NoError(t, direct.Set(ctx, key.ReadLeases(), "someone else's", 0).Err())
	var rseq, wseq int64

	read := opFor(key, "c:alice", 1, &rseq)
	read.Mode = reentrant.Read
	_, err := node.Acquire(ctx, read)
	requireForeignAt(t, err, key.ReadLeases(), "read acquire")
	renew := opFor(key, "c:alice", 1, &rseq)
	renew.Mode = reentrant.Read
	_, err = node.Renew(ctx, renew)
	requireForeignAt(t, err, key.ReadLeases(), "read renew")
	release := opFor(key, "c:alice", 0, &rseq)
	release.Mode = reentrant.Read
	_, err = node.Release(ctx, release, "x")
	requireForeignAt(t, err, key.ReadLeases(), "read release")
	write := opFor(key, "c:bob", 1, &wseq)
	write.Mode = reentrant.Write
	_, err = node.Acquire(ctx, write)
	requireForeignAt(t, err, key.ReadLeases(), "write acquire")
	_, err = node.Inspect(ctx, key)
	requireForeignAt(t, err, key.ReadLeases(), "inspect")

	// ForceUnlock reads the holders first (inspect.lua); Evict goes
	// straight to forceunlock.lua's own read of the readers.
	_, err = node.ForceUnlock(ctx, key, "x", 1)
	requireForeignAt(t, err, key.ReadLeases(), "force-unlock")
	_, err = node.Evict(ctx, key, "c:alice", "x", 1)
	requireForeignAt(t, err, key.ReadLeases(), "evict")
	require.Equal(t, "someone else's", direct.Get(ctx, key.ReadLeases()).Val(), "left untouched")
}

// TestReportForceUnlockNamesTheForeignTombstone: a force-unlock (or an
// eviction) that meets foreign data where it would bury an evicted owner
// names that owner's tombstone, of the kind of hold it had, in its error,
// not the lock's key; the holds stay and the data is left as it was. An
// owner id with any bytes in it is named exactly.
func TestReportForceUnlockNamesTheForeignTombstone(t *testing.T) {
	const odd = "c:odd owner\r\n\x00é"
	for _, tc := range []struct {
		name  string
		owner string
		op    func(key reentrant.Key, owner string, seq *int64) reentrant.Op
		tomb  func(key reentrant.Key, owner string) string
	}{
		{"lock", "c:alice", func(key reentrant.Key, owner string, seq *int64) reentrant.Op {
			return opFor(key, owner, 1, seq)
		}, reentrant.Key.Tombstone},
		{"read", "c:alice", func(key reentrant.Key, owner string, seq *int64) reentrant.Op {
			op := opFor(key, owner, 1, seq)
			op.Mode = reentrant.Read
			return op
		}, reentrant.Key.ReadTombstone},
		{"permits", "c:alice", func(key reentrant.Key, owner string, seq *int64) reentrant.Op {
			return semOp(key.Semaphore(), owner, 1, 2, 1, seq)
		}, func(key reentrant.Key, owner string) string { return key.Semaphore().Tombstone(owner) }},
		{"read odd owner", odd, func(key reentrant.Key, owner string, seq *int64) reentrant.Op {
			op := opFor(key, owner, 1, seq)
			op.Mode = reentrant.Read
			return op
		}, reentrant.Key.ReadTombstone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, foreign := range []struct {
				kind string
				put  func(t *testing.T, direct *redis.Client, tomb string)
				read func(direct *redis.Client, tomb string) any
			}{
				{"hash", func(t *testing.T, direct *redis.Client, tomb string) {
					require.NoError(t, direct.HSet(t.Context(), tomb, "someone", "else").Err())
				}, func(direct *redis.Client, tomb string) any {
					return direct.HGetAll(t.Context(), tomb).Val()
				}},
				{"string", func(t *testing.T, direct *redis.Client, tomb string) {
					require.NoError(t, direct.Set(t.Context(), tomb, "not a number", 0).Err())
				}, func(direct *redis.Client, tomb string) any {
					return direct.Get(t.Context(), tomb).Val()
				}},
			} {
				t.Run(foreign.kind, func(t *testing.T) {
					node, direct := singleNode(t)
					ctx := t.Context()
					key := mustKey(t, "report-tomb")
					var seq int64
					a, err := node.Acquire(ctx, tc.op(key, tc.owner, &seq))
					require.NoError(t, err)
					require.True(t, a.Acquired)
					tomb := tc.tomb(key, tc.owner)
					foreign.put(t, direct, tomb)
					was := foreign.read(direct, tomb)

					_, err = node.ForceUnlock(ctx, key, "force", 1)
					requireForeignAt(t, err, tomb, "force-unlock")
					_, err = node.Evict(ctx, key, tc.owner, "evict", 1)
					requireForeignAt(t, err, tomb, "evict")

					require.Equal(t, was, foreign.read(direct, tomb), "left untouched")
					require.Equal(t, time.Duration(-1), direct.PTTL(ctx, tomb).Val(), "with no TTL, as it was")
					info, err := node.Inspect(ctx, key)
					require.NoError(t, err)
					require.Equal(t, 1, len(info.Holders)+len(info.Readers)+len(info.Permits), "the hold stays")
				})
			}
		})
	}
}
