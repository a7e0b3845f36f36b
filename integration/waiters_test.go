package integration_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/reentrant"
)

// requireWaiters waits (up to 10 s: a Lock joins the queue at its first
// attempt) until lock.Waiters finds exactly want in the wait queues of
// name, in that order, and returns the states Inspect read last.
func requireWaiters(t *testing.T, c *lock.Client, name string, want ...string) []lock.NodeState {
	t.Helper()
	_, quorum := c.Nodes()
	var got []string
	var states []lock.NodeState
	var err error
	assert.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		states, err = c.Inspect(ctx, name)
		got = nil
		for _, w := range lock.Waiters(states, quorum) {
			got = append(got, w.Owner)
		}
		return err == nil && slices.Equal(got, want)
	}, 10*time.Second, 20*time.Millisecond, "waiters %v; want %v", &got, want)
	require.NoError(t, err)
	if !slices.Equal(got, want) {
		for _, s := range states {
			t.Logf("node %d (tie-breaker %v): holders %v, waiters %+v, %d queued", s.Node, s.TieBreaker, s.Info.Holders, s.Info.Waiters, s.Info.Queued)
		}
		t.FailNow()
	}
	return states
}

// inBackground starts acquire on a goroutine of its own and returns the
// channel its result comes on.
func inBackground(acquire func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- acquire() }()
	return done
}

// twoWaiters is a lock held by one Client's Mutex while the Mutexes of two
// other Clients wait for it, queued in this order.
type twoWaiters struct {
	c                     *lock.Client // the holder's
	firstC, secondC       *lock.Client // the waiters'
	name                  string
	holder, first, second *lock.Mutex
	firstDone, secondDone <-chan error     // their Locks' results
	states                []lock.NodeState // Inspect's, once both were queued
}

// requireFirstWoken waits, as requireWoken does, for the first waiter's
// Lock after the holder's Unlock. When it does not come, it logs what
// tells a missed wake from a turn lost to the second waiter (its retry
// after a hand-off's RetryDelay, or its try after subscribing): each
// node's holders and queue, and both waiters' Stats.
func (w twoWaiters) requireFirstWoken(t *testing.T) {
	t.Helper()
	select {
	case err := <-w.firstDone:
		require.NoError(t, err, "the first waiter")
		return
	case <-time.After(forcedWake):
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 10*time.Second)
	defer cancel()
	states, err := w.c.Inspect(ctx, w.name)
	t.Logf("Inspect: %v", err)
	for _, s := range states {
		t.Logf("node %d (tie-breaker %v): holders %v, waiters %+v, %d queued, err %v", s.Node, s.TieBreaker, s.Info.Holders, s.Info.Waiters, s.Info.Queued, s.Err)
	}
	t.Logf("first %s: %+v", w.first.Owner(), w.firstC.Stats())
	t.Logf("second %s: %+v", w.second.Owner(), w.secondC.Stats())
	t.Fatalf("the first waiter still waits %v after the release", forcedWake)
}

// patient are the options of waiting Clients in tests that check that a
// release goes to the first in line. They retry after a second
// (Options.RetryDelay), not 20 ms: the next in line retries RetryDelay
// after a hand-off, in case the target died or gave up (see
// lock/contend.go), and on 1 master takes the lock if the target has not
// yet. On two loaded cores, under -race, a target's acquire after its wake
// took longer than 20 ms, and the next in line got the lock instead. A
// release goes to the first in line when it acts within the delay; how
// the queue moves on past a dead target is other tests'.
var patient = lock.Options{RetryDelay: time.Second}

// queueTwoWaiters resets the cluster and sets up twoWaiters on name over n
// nodes: the first waits with ctx, the second, once the first is queued,
// with secondCtx. Both are patient.
func queueTwoWaiters(t *testing.T, n int, name string, ctx, secondCtx context.Context) twoWaiters {
	t.Helper()
	reset(t)
	w := twoWaiters{c: newLockClient(t, n, lock.Options{}), name: name}
	w.holder = w.c.NewMutex(name)
	require.NoError(t, w.holder.Lock(ctx))
	w.firstC, w.secondC = newLockClient(t, n, patient), newLockClient(t, n, patient)
	w.first, w.second = w.firstC.NewMutex(name), w.secondC.NewMutex(name)
	w.firstDone = inBackground(func() error { return w.first.Lock(ctx) })
	requireWaiters(t, w.c, name, w.first.Owner())
	w.secondDone = inBackground(func() error { return w.second.Lock(secondCtx) })
	w.states = requireWaiters(t, w.c, name, w.first.Owner(), w.second.Owner())
	// Both asleep: a waiter joins the queue with its first refused
	// attempt, then subscribes and tries once more before it sleeps. A
	// Mutex's queue does not bar that try (only a FairMutex's does), so one
	// that lands between a release and the first's acquire takes the lock
	// (on 1 master at once, on 3 once the first's 20 ms reservation is
	// over): seen under load, the second's try after its subscription took
	// a lock handed to the first. The release goes to the first in line
	// among the waiters that sleep.
	require.Eventually(t, func() bool {
		return w.firstC.Stats().Sleeping == 1 && w.secondC.Stats().Sleeping == 1
	}, 10*time.Second, 5*time.Millisecond, "both waiters asleep")
	return w
}

// TestInspectShowsWhoWaits: Inspect (and lock.Waiters over it) shows the
// owners whose Lock waits, each from its own Client as separate processes
// would, in the order the lock goes to them, queued on the name's
// tie-breaker with when they began and what is left of their entry; the
// one a release hands the lock to leaves the queue, and so does one that
// gives up.
func TestInspectShowsWhoWaits(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(itoaName(n), func(t *testing.T) {
			const name = "reports"
			ctx := ctxFor(t, 60*time.Second)
			secondCtx, giveUp := context.WithCancel(ctx)
			defer giveUp()
			began := time.Now()
			w := queueTwoWaiters(t, n, name, ctx, secondCtx)
			c, holder, first, second, states := w.c, w.holder, w.first, w.second, w.states

			ties := 0
			for _, s := range states {
				require.NoError(t, s.Err)
				if !s.TieBreaker {
					continue
				}
				ties++
				require.Equal(t, int64(2), s.Info.Queued, "node %d", s.Node)
				require.Len(t, s.Info.Waiters, 2, "the tie-breaker keeps the queue")
				for i, w := range s.Info.Waiters {
					require.Equal(t, []string{first.Owner(), second.Owner()}[i], w.Owner)
					require.WithinRange(t, w.Since, began.Add(-time.Second), time.Now(), "its ticket is when its Lock began")
					require.Greater(t, w.TTL, time.Duration(0), "its entry lasts")
					require.LessOrEqual(t, w.TTL, 2*lock.DefaultLease, "at most the holder's lease and its own")
				}
				require.False(t, s.Info.Waiters[1].Since.Before(s.Info.Waiters[0].Since), "in ticket order")
			}
			require.Equal(t, 1, ties, "one tie-breaker")

			// The release hands the lock to the first; the second still waits.
			require.NoError(t, holder.Unlock(ctx))
			w.requireFirstWoken(t)
			requireWaiters(t, c, name, second.Owner())

			// The second gives up: it leaves the queue.
			giveUp()
			require.ErrorIs(t, <-w.secondDone, context.Canceled)
			requireWaiters(t, c, name)
			require.NoError(t, first.Unlock(ctx))
		})
	}
}

// TestInspectShowsFairAndWriterWaiters: a FairMutex's waiter is in its
// tie-breaker's queue, with its entry's own deadline; an RWMutex's writer
// that waits behind a reader shows as the writer waiting on every node.
func TestInspectShowsFairAndWriterWaiters(t *testing.T) {
	const n = 3
	reset(t)
	ctx := ctxFor(t, 60*time.Second)
	c := newLockClient(t, n, lock.Options{})

	fair := c.NewFairMutex("fair")
	require.NoError(t, fair.Lock(ctx))
	next := newLockClient(t, n, lock.Options{}).NewFairMutex("fair")
	nextDone := inBackground(func() error { return next.Lock(ctx) })
	states := requireWaiters(t, c, "fair", next.Owner())
	for _, s := range states {
		if s.TieBreaker {
			require.Len(t, s.Info.Waiters, 1, "the tie-breaker keeps a FairMutex's queue")
			require.Greater(t, s.Info.Waiters[0].TTL, time.Duration(0), "its entry's deadline is ahead")
			require.LessOrEqual(t, s.Info.Waiters[0].TTL, 2*lock.DefaultLease, "the holder's lease and its own at most")
		}
	}
	require.NoError(t, fair.Unlock(ctx))
	requireWoken(t, nextDone, "the fair waiter")
	requireWaiters(t, c, "fair")
	require.NoError(t, next.Unlock(ctx))

	reader := c.NewRWMutex("config")
	require.NoError(t, reader.RLock(ctx))
	writer := newLockClient(t, n, lock.Options{}).NewRWMutex("config")
	writerDone := inBackground(func() error { return writer.Lock(ctx) })
	require.Eventually(t, func() bool {
		states, err := c.Inspect(ctx, "config")
		if err != nil {
			return false
		}
		marked := 0
		for _, s := range states {
			if s.Info.WriterWaiting.Owner == writer.Owner() && s.Info.WriterWaiting.TTL > 0 {
				marked++
			}
		}
		return marked == n
	}, 10*time.Second, 20*time.Millisecond, "the waiting writer's mark on every node")
	require.NoError(t, reader.RUnlock(ctx))
	requireWoken(t, writerDone, "the writer")
	// Its mark may stay on a node where its last attempt overtook the
	// reader's release, until its hold is written there or it unlocks.
	require.NoError(t, writer.Unlock(ctx))
	require.Eventually(t, func() bool {
		states, err := c.Inspect(ctx, "config")
		return err == nil && !slices.ContainsFunc(states, func(s lock.NodeState) bool { return s.Info.WriterWaiting.Owner != "" })
	}, 10*time.Second, 20*time.Millisecond, "the writer's Unlock takes its mark off every node")
}

// testCLIInspectShowsWaiters: relock inspect shows who waits, in order,
// as a summary line and rows per node, and in its JSON.
func testCLIInspectShowsWaiters(t *testing.T, cli relockCLI) {
	const n, name = 3, "nightly"
	ctx := ctxFor(t, 60*time.Second)
	w := queueTwoWaiters(t, n, name, ctx, ctx)
	holder, first, second, states := w.holder, w.first, w.second, w.states
	tie := slices.IndexFunc(states, func(s lock.NodeState) bool { return s.TieBreaker })

	code, out, stderr := cli.run(t, n, "inspect", "--json", name)
	require.Equal(t, 0, code, stderr)
	var view inspectJSON
	decodeJSON(t, out, &view)
	require.Equal(t, tie, view.TieBreaker)
	require.Len(t, view.Waiting, 2, out)
	require.Equal(t, first.Owner(), view.Waiting[0].Owner)
	require.Equal(t, second.Owner(), view.Waiting[1].Owner)
	require.Equal(t, states[tie].Info.Waiters[0].Since.UTC(), view.Waiting[0].Since.UTC())
	require.Equal(t, int64(2), view.Nodes[tie].Queued)
	require.Len(t, view.Nodes[tie].Queue, 2)
	require.Positive(t, view.Nodes[tie].Queue[1].TTLms)

	code, out, stderr = cli.run(t, n, "inspect", name)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, fmt.Sprintf("waiting: 2 owners, in the order the lock goes to them: %s (since ", first.Owner()))
	require.Contains(t, out, fmt.Sprintf("tie-breaker, node %d", tie))
	require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+\S+\s+%s \(waits, 1st\)\s+-\s+\S+s\s+\d+$`, tie, first.Owner()), out)
	require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+\S+\s+%s \(waits, 2nd\)\s+-\s+\S+s\s+\d+$`, tie, second.Owner()), out)

	require.NoError(t, holder.Unlock(ctx))
	w.requireFirstWoken(t)
	require.NoError(t, first.Unlock(ctx))
	requireWoken(t, w.secondDone, "the second waiter")
	require.NoError(t, second.Unlock(ctx))
	code, out, _ = cli.run(t, n, "inspect", name)
	require.Equal(t, 0, code)
	require.NotContains(t, out, "waiting", "no one waits once both had it:\n%s", out)
	require.Equal(t, 1, strings.Count(out, "free on all"), out)
}

// TestReentrantInspectReadsTheQueue: a node's Inspect returns the first
// reentrant.InspectWaiters owners of the wait queue in ticket order, counts
// them all, leaves out a fair lock's entries whose deadline passed (from
// the count too) and gives each its time left; foreign data at the queue,
// its deadlines or the writer's mark is an error naming that key, and the
// read changes nothing. InspectHolds (IsLocked, TTL, ForceUnlock) reads no
// queue key, so such data does not stop it.
func TestReentrantInspectReadsTheQueue(t *testing.T) {
	node, direct := singleNode(t)
	ctx := t.Context()
	key := mustKey(t, "queued")
	start := time.Now().Truncate(time.Microsecond)
	const owners = reentrant.InspectWaiters + 20
	for i := range owners {
		require.NoError(t, direct.ZAdd(ctx, key.Queue, redis.Z{Score: float64(start.Add(time.Duration(owners-i) * time.Millisecond).UnixMicro()), Member: fmt.Sprintf("c:w%03d", i)}).Err())
	}
	require.NoError(t, direct.PExpire(ctx, key.Queue, 40*time.Second).Err())
	info, err := node.Inspect(ctx, key)
	require.NoError(t, err)
	require.Equal(t, int64(owners), info.Queued)
	require.Len(t, info.Waiters, reentrant.InspectWaiters)
	require.Equal(t, fmt.Sprintf("c:w%03d", owners-1), info.Waiters[0].Owner, "the lowest ticket first")
	require.True(t, start.Add(time.Millisecond).Equal(info.Waiters[0].Since), "its ticket as a time: %v", info.Waiters[0].Since)
	require.InDelta(t, (40 * time.Second).Seconds(), info.Waiters[0].TTL.Seconds(), 5, "a Mutex's entry lasts as long as its queue")

	// A fair lock's deadlines: one passed (left out and not counted), one
	// shorter than the queue's TTL (its own).
	now := time.Now()
	require.NoError(t, direct.ZAdd(ctx, key.QueueDeadlines,
		redis.Z{Score: float64(now.Add(-time.Second).UnixMilli()), Member: info.Waiters[0].Owner},
		redis.Z{Score: float64(now.Add(5 * time.Second).UnixMilli()), Member: info.Waiters[1].Owner}).Err())
	fair, err := node.Inspect(ctx, key)
	require.NoError(t, err)
	require.Equal(t, int64(owners-1), fair.Queued)
	require.Equal(t, info.Waiters[1].Owner, fair.Waiters[0].Owner, "the entry past its deadline is left out")
	require.InDelta(t, (5 * time.Second).Seconds(), fair.Waiters[0].TTL.Seconds(), 2)
	require.Len(t, fair.Waiters, reentrant.InspectWaiters, "the next owner takes its place")

	// A Mutex's hand-off reservation, a string at the deadlines' key, is
	// no deadline.
	require.NoError(t, direct.Set(ctx, key.QueueDeadlines, info.Waiters[0].Owner, time.Minute).Err())
	reserved, err := node.Inspect(ctx, key)
	require.NoError(t, err)
	require.Equal(t, int64(owners), reserved.Queued)
	require.Len(t, reserved.Waiters, reentrant.InspectWaiters)
	require.Equal(t, info.Waiters[0].Owner, reserved.Waiters[0].Owner, "no entry left out")
	require.InDelta(t, info.Waiters[0].TTL.Seconds(), reserved.Waiters[0].TTL.Seconds(), 5, "the queue's TTL")

	for _, foreign := range []string{key.Queue, key.QueueDeadlines, key.WriterWaiting()} {
		other := mustKey(t, "foreign")
		foreignKey := strings.Replace(foreign, key.Lock, other.Lock, 1)
		require.NoError(t, direct.HSet(ctx, foreignKey, "someone", "else").Err())
		_, err := node.Inspect(ctx, other)
		var wt *reentrant.WrongTypeError
		require.ErrorAs(t, err, &wt, "foreign data at %s", foreignKey)
		require.Equal(t, foreignKey, wt.Key)
		require.Equal(t, map[string]string{"someone": "else"}, direct.HGetAll(ctx, foreignKey).Val(), "left as it was")

		// Reading the holds alone leaves those keys unread: a hold there
		// is read, and ForceUnlock frees it.
		held := reentrant.Op{Key: other, Owner: "c:h", Lease: 30 * time.Second, Count: 1, Seq: 1}
		a, err := node.Acquire(ctx, held)
		require.NoError(t, err)
		require.True(t, a.Acquired)
		holds, err := node.InspectHolds(ctx, other)
		require.NoError(t, err, "foreign data at %s", foreignKey)
		require.Equal(t, map[string]int64{"c:h": 1}, holds.Holders)
		freed, err := node.ForceUnlock(ctx, other, "operator/1", 1)
		require.NoError(t, err, "foreign data at %s", foreignKey)
		require.True(t, freed)
		require.Equal(t, map[string]string{"someone": "else"}, direct.HGetAll(ctx, foreignKey).Val(), "left as it was")
		require.NoError(t, direct.Del(ctx, foreignKey, other.Tombstone("c:h")).Err())
	}
	require.Equal(t, int64(owners), direct.ZCard(ctx, key.Queue).Val(), "the reads changed nothing")

	holds, err := node.InspectHolds(ctx, key)
	require.NoError(t, err)
	require.Zero(t, holds.Queued, "the holds alone: the queue unread")
	require.Empty(t, holds.Waiters)
}
