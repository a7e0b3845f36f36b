package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/reentrant"
)

// fairWaiters has n Clients (n processes, as far as relock can tell) each
// start a FairMutex Lock on name, one after the other once the previous one
// sleeps, so their tickets are in that order. got receives the index of
// each waiter when it gets the lock.
func fairWaiters(t *testing.T, ctx context.Context, name string, masters, n int) ([]*lock.Client, []*lock.Mutex, chan int) {
	return waitersAsleepWith(t, ctx, masters, n, lock.Options{}, func(c *lock.Client) *lock.Mutex { return &c.NewFairMutex(name).Mutex })
}

// fairHeldWithWaiters resets the cluster, has a Client take the fair lock
// named base plus the masters' count, and n other Clients wait for it in
// order (see fairWaiters).
func fairHeldWithWaiters(t *testing.T, base string, masters, n int) (context.Context, string, *lock.FairMutex, []*lock.Mutex, chan int) {
	reset(t)
	ctx := ctxFor(t, 60*time.Second)
	name := base + itoaName(masters)
	holder := newLockClient(t, masters, lock.Options{}).NewFairMutex(name)
	require.NoError(t, holder.Lock(ctx))
	_, mutexes, got := fairWaiters(t, ctx, name, masters, n)
	return ctx, name, holder, mutexes, got
}

// queueDeadWaiter writes by hand, on the tie-breaker of the lock name over
// masters, a queue entry for owner with ticket 1 (ahead of everyone) and a
// deadline after on that node's clock, which it returns: a waiter that died
// in the queue.
func queueDeadWaiter(t *testing.T, ctx context.Context, name string, masters int, owner string, after time.Duration) time.Time {
	key, err := reentrant.NewKey("", name)
	require.NoError(t, err)
	direct := cluster.Nodes[tieBreakerOf(t, name, masters)].Direct()
	now, err := direct.Time(ctx).Result()
	require.NoError(t, err)
	deadline := now.Add(after)
	require.NoError(t, direct.ZAdd(ctx, key.Queue, redis.Z{Score: 1, Member: owner}).Err())
	require.NoError(t, direct.ZAdd(ctx, key.QueueDeadlines, redis.Z{Score: float64(deadline.UnixMilli()), Member: owner}).Err())
	return deadline
}

// TestFairMutexServesWaitersInOrder: four Clients wait for a held fair lock
// in turn, then a fifth comes while the first of them holds it. Each
// release goes to the next in the order they asked, the late one last,
// on 1, 3 and 5 masters.
func TestFairMutexServesWaitersInOrder(t *testing.T) {
	for _, masters := range []int{1, 3, 5} {
		t.Run(itoaName(masters), func(t *testing.T) {
			ctx, name, holder, mutexes, got := fairHeldWithWaiters(t, "fair-order-", masters, 4)
			require.Len(t, queueOn(t, tieBreakerOf(t, name, masters), name), 4, "every waiter is queued")

			require.NoError(t, holder.Unlock(ctx))
			requireNext(t, got, 0)
			// A latecomer queues behind the others, and a TryLock never
			// jumps the queue.
			late := newLockClient(t, masters, lock.Options{})
			lateMutex := late.NewFairMutex(name)
			go func() {
				if err := lateMutex.Lock(ctx); err == nil {
					got <- len(mutexes)
				} else if ctx.Err() == nil {
					t.Errorf("latecomer: %v", err)
				}
			}()
			require.Eventually(t, func() bool { return late.Stats().Sleeping == 1 }, 10*time.Second, time.Millisecond)

			for next := 1; next <= len(mutexes); next++ {
				require.NoError(t, mutexes[next-1].Unlock(ctx))
				requireNext(t, got, next)
			}
			require.NoError(t, lateMutex.Unlock(ctx))
			require.Empty(t, queueOn(t, tieBreakerOf(t, name, masters), name))
		})
	}
}

// requireNext waits for the next waiter to get the lock and checks it is
// want.
func requireNext(t *testing.T, got <-chan int, want int) {
	t.Helper()
	select {
	case i := <-got:
		require.Equal(t, want, i, "the order the waiters asked in")
	case <-time.After(10 * time.Second):
		t.Fatalf("waiter %d did not get the lock within 10 s", want)
	}
}

// TestFairMutexTurnVetoesAQuorum: the lock is free on every node, but
// another owner heads its queue on the tie-breaker. A TryLock gets a
// majority of the nodes and is still refused, leaves nothing behind, and
// the live waiter's turn holds until its deadline; once that passes (the
// waiter died), the lock is anyone's.
func TestFairMutexTurnVetoesAQuorum(t *testing.T) {
	reset(t)
	ctx := ctxFor(t, 30*time.Second)
	const name, masters = "fair-veto", 3
	key, err := reentrant.NewKey("", name)
	require.NoError(t, err)
	tie := tieBreakerOf(t, name, masters)
	deadline := queueDeadWaiter(t, ctx, name, masters, "other:waiter", 1500*time.Millisecond)

	m := newLockClient(t, masters, lock.Options{}).NewFairMutex(name)
	ok, err := m.TryLock(ctx)
	require.NoError(t, err)
	require.False(t, ok, "not its turn: the tie-breaker's refusal vetoes the other nodes' yes")
	for i := range masters {
		require.Eventually(t, func() bool { return cluster.Nodes[i].Direct().Exists(ctx, key.Lock).Val() == 0 },
			5*time.Second, 10*time.Millisecond, "node %d: the vetoed attempt was undone", i)
	}
	require.Equal(t, []string{"other:waiter"}, queueOn(t, tie, name), "a TryLock does not queue")

	time.Sleep(time.Until(deadline.Add(50 * time.Millisecond)))
	ok, err = m.TryLock(ctx)
	require.NoError(t, err)
	require.True(t, ok, "the head's deadline passed: it left the queue")
	require.Empty(t, queueOn(t, tie, name))
	require.NoError(t, m.Unlock(ctx))
}

// TestFairMutexDeadWaiterIsSkippedWithinItsBound: the head of the queue
// died while waiting (its entry is written by hand, with a deadline 2 s
// away). The release hands the lock to it; the live waiter behind it gets
// the lock once the dead one's deadline passes, not before and not a lease
// (30 s) later.
func TestFairMutexDeadWaiterIsSkippedWithinItsBound(t *testing.T) {
	for _, masters := range []int{1, 3} {
		t.Run(itoaName(masters), func(t *testing.T) {
			ctx, name, holder, _, got := fairHeldWithWaiters(t, "fair-dead-", masters, 1)

			queueDeadWaiter(t, ctx, name, masters, "dead:waiter", 2*time.Second)

			released := time.Now()
			require.NoError(t, holder.Unlock(ctx))
			select {
			case <-got:
				waited := time.Since(released)
				t.Logf("the live waiter got the lock %v after the release", waited)
				require.Greater(t, waited, 1500*time.Millisecond, "the dead head's turn was kept until its deadline")
			case <-time.After(10 * time.Second):
				t.Fatal("the live waiter did not get the lock within 10 s: the dead head held the queue")
			}
			require.NotContains(t, queueOn(t, tieBreakerOf(t, name, masters), name), "dead:waiter")
		})
	}
}
