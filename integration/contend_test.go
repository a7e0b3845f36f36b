package integration_test

import (
	"context"
	"hash/fnv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/reentrant"
)

// tieBreakerOf is the lock's tie-breaker node among n, as the contention
// protocol defines it: hash(lock key) mod n.
func tieBreakerOf(t *testing.T, name string, n int) int {
	key, err := reentrant.NewKey("", name)
	require.NoError(t, err)
	h := fnv.New32a()
	_, _ = h.Write([]byte(key.Lock))
	return int(h.Sum32() % uint32(n))
}

// holdWithoutTieBreaker resets the cluster and has a new owner take the
// lock named name on 2 of the first 3 nodes, the tie-breaker cut off
// meanwhile, for 30 s without renewal (so no repair writes it to the
// tie-breaker later). It returns the holder and the tie-breaker's index.
func holdWithoutTieBreaker(t *testing.T, ctx context.Context, name string) (*lock.Mutex, int) {
	c := reset(t)
	tie := tieBreakerOf(t, name, 3)
	links, err := c.NewLinks()
	require.NoError(t, err)
	holder := newLockClientOver(t, linkClients(links[:3]), lock.Options{}).NewMutex(name)
	require.NoError(t, links[tie].Partition())
	ok, err := holder.TryLockFor(ctx, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, links[tie].Heal())
	return holder, tie
}

// TestTieBreakerHolderKeepsAndGoesNext: a holder took the lock on a quorum
// without the tie-breaker node (it was cut off). A waiter whose attempt wins
// the tie-breaker keeps it instead of undoing, and is the one that gets the
// lock at the release; a later waiter, which met it on the tie-breaker,
// only probes that node and goes after it, and no two ever hold at once.
func TestTieBreakerHolderKeepsAndGoesNext(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	const name = "tie-keeps"
	first, tie := holdWithoutTieBreaker(t, ctx, name)

	keeper := newLockClient(t, 3, lock.Options{}).NewMutex(name)
	keeperGot := make(chan time.Time, 1)
	go func() {
		if err := keeper.Lock(ctx); err != nil {
			t.Errorf("keeper: %v", err)
		}
		keeperGot <- time.Now()
	}()
	require.Eventually(t, func() bool {
		return holdersOn(t, 3, name)[tie][keeper.Owner()] == 1
	}, 5*time.Second, 5*time.Millisecond, "the waiter that won the tie-breaker must keep it")

	laterClient := newLockClient(t, 3, lock.Options{})
	later := laterClient.NewMutex(name)
	laterGot := make(chan time.Time, 1)
	go func() {
		if err := later.Lock(ctx); err != nil {
			t.Errorf("later: %v", err)
		}
		laterGot <- time.Now()
	}()
	require.Eventually(t, func() bool { return laterClient.Stats().Sleeping == 1 }, 5*time.Second, time.Millisecond)

	require.NoError(t, first.Unlock(ctx))
	var keeperAt time.Time
	select {
	case keeperAt = <-keeperGot:
	case <-laterGot:
		t.Fatal("the later waiter got the lock before the one holding the tie-breaker")
	case <-time.After(10 * time.Second):
		t.Fatal("nobody got the lock after the release")
	}
	require.Equal(t, 1, keeper.HoldCount())
	require.Zero(t, later.HoldCount())
	attemptsBefore := laterClient.Stats().Attempts
	time.Sleep(200 * time.Millisecond)
	require.Zero(t, later.HoldCount(), "two holders at once")
	require.NoError(t, keeper.Unlock(ctx))
	select {
	case at := <-laterGot:
		require.True(t, at.After(keeperAt))
	case <-time.After(10 * time.Second):
		t.Fatal("the later waiter did not get the lock after the second release")
	}
	st := laterClient.Stats()
	t.Logf("later waiter: %d attempts in all, %d after the first release", st.Attempts, st.Attempts-attemptsBefore)
	require.NoError(t, later.Unlock(ctx))
	requireFree(t, 3, name, 2*time.Second)
}

// TestKeeperThatGivesUpLeavesNothing: a waiter that kept the tie-breaker
// and then gives up (its ctx ends) takes back what it kept, on every node,
// at once rather than at the end of its lease.
func TestKeeperThatGivesUpLeavesNothing(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	const name = "tie-gives-up"
	first, tie := holdWithoutTieBreaker(t, ctx, name)

	keeper := newLockClient(t, 3, lock.Options{}).NewMutex(name)
	lockCtx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- keeper.Lock(lockCtx) }()
	require.Eventually(t, func() bool {
		return holdersOn(t, 3, name)[tie][keeper.Owner()] == 1
	}, 5*time.Second, 5*time.Millisecond, "the waiter that won the tie-breaker must keep it")
	require.ErrorIs(t, <-done, context.DeadlineExceeded)
	require.Eventually(t, func() bool {
		for _, h := range holdersOn(t, 3, name) {
			if h[keeper.Owner()] != 0 {
				return false
			}
		}
		return true
	}, 2*time.Second, 10*time.Millisecond, "what the keeper kept outlived its Lock call")
	require.NoError(t, first.Unlock(ctx))
	requireFree(t, 3, name, 2*time.Second)
}
