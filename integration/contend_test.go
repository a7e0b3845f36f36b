package integration_test

import (
	"context"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/internal/abtest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/pubsub"
	"github.com/relock-go/relock/reentrant"
)

// withoutWaitQueue makes the Clients the test makes from now on wait as
// before the tie-breaker's wait queue (abtest.NoWaitQueue; the queue is on
// by default).
func withoutWaitQueue(t *testing.T) {
	abtest.NoWaitQueue.Store(true)
	t.Cleanup(func() { abtest.NoWaitQueue.Store(false) })
}

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

// lockInBackground calls m.Lock(ctx) on a goroutine of its own; the
// returned channel gets the time it returned with the lock (nothing when it
// failed, which fails the test as who's error).
func lockInBackground(t *testing.T, ctx context.Context, m *lock.Mutex, who string) <-chan time.Time {
	got := make(chan time.Time, 1)
	go func() {
		if err := m.Lock(ctx); err != nil {
			t.Errorf("%s: %v", who, err)
			return
		}
		got <- time.Now()
	}()
	return got
}

// splitBetweenTheDead resets the cluster and leaves the lock named name
// held, for lease, on the two nodes of the first 3 that are not its
// tie-breaker, by a different owner on each: two contenders that died
// halfway through their attempts. No owner holds a quorum, and the
// tie-breaker is free. It returns the tie-breaker's index.
func splitBetweenTheDead(t *testing.T, ctx context.Context, name string, lease time.Duration) int {
	c := reset(t)
	tie := tieBreakerOf(t, name, 3)
	key, err := reentrant.NewKey("", name)
	require.NoError(t, err)
	for i := range 3 {
		if i == tie {
			continue
		}
		op := reentrant.Op{Key: key, Owner: "dead-" + strconv.Itoa(i) + ":1", Lease: lease, Count: 1, Seq: 1}
		a, err := reentrant.NewNode(c.Nodes[i].Direct(), 0).Acquire(ctx, op)
		require.NoError(t, err)
		require.True(t, a.Acquired)
	}
	return tie
}

// TestTieBreakerHolderKeepsAndGoesNext: two contenders died halfway, each
// holding the lock on one node other than the tie-breaker (a three-way
// split). A waiter whose attempt wins the tie-breaker keeps it instead of
// undoing, and is the one that gets the lock once their leases end; a
// later waiter, which met it on the tie-breaker, only probes that node and
// goes after it, and no two ever hold at once.
func TestTieBreakerHolderKeepsAndGoesNext(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	const name = "tie-keeps"
	tie := splitBetweenTheDead(t, ctx, name, 3*time.Second)

	keeper := newLockClient(t, 3, lock.Options{}).NewMutex(name)
	keeperGot := lockInBackground(t, ctx, keeper, "keeper")
	require.Eventually(t, func() bool {
		return holdersOn(t, 3, name)[tie][keeper.Owner()] == 1
	}, 5*time.Second, 5*time.Millisecond, "the waiter that won the tie-breaker must keep it")

	laterClient := newLockClient(t, 3, lock.Options{})
	later := laterClient.NewMutex(name)
	laterGot := lockInBackground(t, ctx, later, "later")
	require.Eventually(t, func() bool { return laterClient.Stats().Sleeping == 1 }, 5*time.Second, time.Millisecond)

	var keeperAt time.Time
	select {
	case keeperAt = <-keeperGot:
	case <-laterGot:
		t.Fatal("the later waiter got the lock before the one holding the tie-breaker")
	case <-time.After(10 * time.Second):
		t.Fatal("nobody got the lock after the dead contenders' leases ended")
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
		t.Fatal("the later waiter did not get the lock after the keeper's release")
	}
	st := laterClient.Stats()
	t.Logf("later waiter: %d attempts in all, %d after the keeper got the lock", st.Attempts, st.Attempts-attemptsBefore)
	require.NoError(t, later.Unlock(ctx))
	requireFree(t, 3, name, 2*time.Second)
}

// TestKeeperThatGivesUpLeavesNothing: a waiter that kept the tie-breaker
// and then gives up (its ctx ends) takes back what it kept, on every node,
// at once rather than at the end of its lease.
func TestKeeperThatGivesUpLeavesNothing(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	const name = "tie-gives-up"
	tie := splitBetweenTheDead(t, ctx, name, 3*time.Second)

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
	requireFree(t, 3, name, 5*time.Second) // the dead contenders' leases end
}

// TestWaiterLeavesTheTieBreakerToAHolderWithAQuorum: a holder took the lock
// on a quorum without the tie-breaker node (it was cut off). A waiter whose
// attempt takes the free tie-breaker has nothing to break a tie with: the
// reply names one owner holding the other nodes, so it gives the node back
// at once instead of keeping it, sleeps without spinning, and still gets
// the lock as soon as the holder releases (the other nodes' releases wake
// it, long before the holder's 30 s lease would).
func TestWaiterLeavesTheTieBreakerToAHolderWithAQuorum(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	const name = "tie-left-to-holder"
	first, tie := holdWithoutTieBreaker(t, ctx, name)

	wc := newLockClient(t, 3, lock.Options{})
	waiter := wc.NewMutex(name)
	got := lockInBackground(t, ctx, waiter, "waiter")
	require.Eventually(t, func() bool { return wc.Stats().Sleeping == 1 }, 5*time.Second, time.Millisecond)
	attempts := wc.Stats().Attempts
	require.GreaterOrEqual(t, attempts, uint64(1))
	require.Eventually(t, func() bool { return len(holdersOn(t, 3, name)[tie]) == 0 },
		2*time.Second, 10*time.Millisecond, "the waiter kept the tie-breaker from the holder")
	time.Sleep(500 * time.Millisecond)
	require.Empty(t, holdersOn(t, 3, name)[tie], "the tie-breaker was taken again")
	require.Equal(t, attempts, wc.Stats().Attempts, "the waiter did not sleep")

	require.NoError(t, first.Unlock(ctx))
	unlocked := time.Now()
	select {
	case at := <-got:
		t.Logf("the waiter got the lock %v after the release", at.Sub(unlocked).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not get the lock after the release")
	}
	require.NoError(t, waiter.Unlock(ctx))
	requireFree(t, 3, name, 2*time.Second)
}

// TestWaitersLetTheHolderRepairTheTieBreaker: the tie-breaker loses the
// hold of a holder that renews (its node restarted empty, or failed over to
// a replica that never saw the lock) while other processes wait, and a new
// one asks. The holder's renewal writes the hold back there within a
// renewal or two: the waiters, which take the free tie-breaker on their
// way, neither keep it nor hand it from one to the other (which used to
// hold it from the holder for leases, and then pass it between them many
// times a second). Once the holder unlocks, every waiter gets the lock in
// turn.
func TestWaitersLetTheHolderRepairTheTieBreaker(t *testing.T) {
	c := reset(t)
	ctx := ctxFor(t, 60*time.Second)
	const (
		name  = "tie-repaired"
		lease = 3 * time.Second // renewed every second
	)
	tie := tieBreakerOf(t, name, 3)
	holder := newLockClient(t, 3, lock.Options{Lease: lease}).NewMutex(name)
	require.NoError(t, holder.Lock(ctx))
	clients, waiters, got := waitersAsleep(t, ctx, name, 3, 2)

	key, err := reentrant.NewKey("", name)
	require.NoError(t, err)
	require.NoError(t, c.Nodes[tie].Direct().Del(ctx, key.Lock).Err())
	lateClient := newLockClient(t, 3, lock.Options{})
	late := lateClient.NewMutex(name)
	clients, waiters = append(clients, lateClient), append(waiters, late)
	go func() {
		if err := late.Lock(ctx); err != nil {
			t.Errorf("late waiter: %v", err)
			return
		}
		got <- len(waiters) - 1
	}()
	lost := time.Now()
	attempts := func() (n uint64) {
		for _, c := range clients {
			n += c.Stats().Attempts
		}
		return n
	}
	require.Eventually(t, func() bool { return holdersOn(t, 3, name)[tie][holder.Owner()] == 1 },
		lease, 10*time.Millisecond, "the holder's renewal did not write its hold back on the tie-breaker")
	t.Logf("hold written back on the tie-breaker %v after it was lost", time.Since(lost).Round(time.Millisecond))

	// Two leases on, the holder holds everywhere and the waiters sleep.
	before := attempts()
	time.Sleep(2 * lease)
	require.Equal(t, 3, len(slices.DeleteFunc(holdersOn(t, 3, name), func(h map[string]int64) bool {
		return h[holder.Owner()] != 1 || len(h) != 1
	})), "the holder lost a node")
	spent := attempts() - before
	t.Logf("the waiters made %d attempts in %v", spent, 2*lease)
	require.LessOrEqual(t, spent, uint64(6*len(waiters)), "the waiters kept trying while the lock was held")

	require.NoError(t, holder.Unlock(ctx))
	for range waiters {
		select {
		case i := <-got:
			require.Equal(t, 1, waiters[i].HoldCount())
			require.NoError(t, waiters[i].Unlock(ctx))
		case <-time.After(10 * time.Second):
			t.Fatal("a waiter did not get the lock after the release")
		}
	}
	requireFree(t, 3, name, 2*time.Second)
}

// waitersAsleep starts a blocking Lock on name from each of n new Clients
// over the first masters nodes and waits until every one sleeps in the
// lock's queue. Each Lock's outcome arrives on got (the Client's index,
// when it returned with the lock).
func waitersAsleep(t *testing.T, ctx context.Context, name string, masters, n int) ([]*lock.Client, []*lock.Mutex, chan int) {
	return waitersAsleepWith(t, ctx, masters, n, lock.Options{}, mutexNamed(name))
}

// mutexNamed makes, on each Client it is given, a Mutex handle of name.
func mutexNamed(name string) func(*lock.Client) *lock.Mutex {
	return func(c *lock.Client) *lock.Mutex { return c.NewMutex(name) }
}

// waitersAsleepWith is waitersAsleep with each waiter's Client made with
// opts and its handle made by handle.
func waitersAsleepWith(t *testing.T, ctx context.Context, masters, n int, opts lock.Options, handle func(*lock.Client) *lock.Mutex) ([]*lock.Client, []*lock.Mutex, chan int) {
	clients := make([]*lock.Client, n)
	mutexes := make([]*lock.Mutex, n)
	got := make(chan int, n)
	for i := range clients {
		clients[i] = newLockClient(t, masters, opts)
		mutexes[i] = handle(clients[i])
		go func() {
			if err := mutexes[i].Lock(ctx); err != nil {
				if ctx.Err() == nil {
					t.Errorf("waiter %d: %v", i, err)
				}
				return
			}
			got <- i
		}()
		// One at a time, so that their tickets, and the queue, are in order.
		require.Eventually(t, func() bool { return clients[i].Stats().Sleeping == 1 },
			10*time.Second, time.Millisecond, "waiter %d asleep", i)
	}
	return clients, mutexes, got
}

// queueScene is a lock held by one Client while others wait in its queue.
type queueScene struct {
	ctx     context.Context
	name    string
	tie     int // the tie-breaker node, which keeps the queue
	holder  *lock.Mutex
	clients []*lock.Client
	waiters []*lock.Mutex
	got     chan int // the index of each waiter that gets the lock
}

// heldWithWaiters resets the cluster, has a Client take the lock named
// base plus the masters' count, and n other Clients, made with opts, wait
// for it in order.
func heldWithWaiters(t *testing.T, base string, masters, n int, opts lock.Options) *queueScene {
	reset(t)
	sc := &queueScene{ctx: ctxFor(t, 30*time.Second), name: base + itoaName(masters)}
	sc.holder = newLockClient(t, masters, lock.Options{}).NewMutex(sc.name)
	require.NoError(t, sc.holder.Lock(sc.ctx))
	sc.clients, sc.waiters, sc.got = waitersAsleepWith(t, sc.ctx, masters, n, opts, mutexNamed(sc.name))
	sc.tie = tieBreakerOf(t, sc.name, masters)
	return sc
}

// queueOn reads the lock's wait queue on node i, lowest ticket first.
func queueOn(t *testing.T, i int, name string) []string {
	key, err := reentrant.NewKey("", name)
	require.NoError(t, err)
	q, err := cluster.Nodes[i].Direct().ZRange(t.Context(), key.Queue, 0, -1).Result()
	require.NoError(t, err)
	return q
}

// TestOneWaiterPerReleaseAcrossClients: six Clients (six processes, as far
// as relock can tell) wait for one lock. A release hands it to the first of
// them in the queue, and only that one tries: under plain wakes each Client
// would wake one waiter and all six would try. The next in line may probe
// once after the hand-off watch, since the new holder keeps the lock. The
// waiters are patient (see patient): the test asserts the queue's order.
func TestOneWaiterPerReleaseAcrossClients(t *testing.T) {
	for _, masters := range []int{1, 3} {
		t.Run(itoaName(masters), func(t *testing.T) {
			sc := heldWithWaiters(t, "one-waiter-", masters, 6, patient)
			ctx, name, tie, holder, clients, mutexes, got := sc.ctx, sc.name, sc.tie, sc.holder, sc.clients, sc.waiters, sc.got
			queued := queueOn(t, tie, name)
			require.Len(t, queued, 6, "every waiter is in the queue on the tie-breaker")
			require.Equal(t, mutexes[0].Owner(), queued[0], "in the order they came")

			before := make([]uint64, len(clients))
			for i, c := range clients {
				before[i] = c.Stats().Attempts
			}
			require.NoError(t, holder.Unlock(ctx))
			var winner int
			select {
			case winner = <-got:
			case <-time.After(5 * time.Second):
				t.Fatal("no waiter got the lock within 5 s of the release")
			}
			require.Equal(t, 0, winner, "the head of the queue gets it")
			time.Sleep(300 * time.Millisecond) // a plain wake's stampede would be over by now
			var tried []int
			for i, c := range clients {
				if c.Stats().Attempts != before[i] {
					tried = append(tried, i)
				}
			}
			require.Subset(t, []int{0, 1}, tried, "only the target, and the next in line once, tried: %v", tried)
			require.Equal(t, []string{mutexes[1].Owner(), mutexes[2].Owner(), mutexes[3].Owner(),
				mutexes[4].Owner(), mutexes[5].Owner()}, queueOn(t, tie, name), "the target left the queue")

			// Each release from now on goes to the next in line.
			for want := 1; want < len(mutexes); want++ {
				require.NoError(t, mutexes[want-1].Unlock(ctx))
				select {
				case winner = <-got:
				case <-time.After(5 * time.Second):
					t.Fatalf("waiter %d did not get the lock within 5 s of the release", want)
				}
				require.Equal(t, want, winner, "the queue's order")
			}
			require.NoError(t, mutexes[len(mutexes)-1].Unlock(ctx))
			require.Empty(t, queueOn(t, tie, name))
		})
	}
}

// TestHandOffToADeadWaiterMovesOn: the head of the queue is an owner that
// died while waiting (its entry is written by hand here). The release hands
// the lock to it; the next in line wakes by itself after the hand-off watch
// and takes the lock, long before the lease (30 s) a waiter would otherwise
// sleep out.
func TestHandOffToADeadWaiterMovesOn(t *testing.T) {
	for _, masters := range []int{1, 3} {
		t.Run(itoaName(masters), func(t *testing.T) {
			sc := heldWithWaiters(t, "dead-waiter-", masters, 1, lock.Options{})
			ctx, name, tie, holder, got := sc.ctx, sc.name, sc.tie, sc.holder, sc.got
			key, err := reentrant.NewKey("", name)
			require.NoError(t, err)
			require.NoError(t, cluster.Nodes[tie].Direct().ZAdd(ctx, key.Queue, redis.Z{Score: 1, Member: "dead:owner"}).Err())

			released := time.Now()
			require.NoError(t, holder.Unlock(ctx))
			select {
			case <-got:
				t.Logf("the live waiter got the lock %v after the release", time.Since(released))
			case <-time.After(5 * time.Second):
				t.Fatal("the live waiter did not get the lock within 5 s: the dead head held the queue")
			}
			require.NotContains(t, queueOn(t, tie, name), "dead:owner", "the release took the dead head out")
		})
	}
}

// TestWaiterThatGivesUpLeavesTheQueue: a Lock whose ctx ends while it waits
// takes its owner out of the queue, so no release hands the lock to it.
func TestWaiterThatGivesUpLeavesTheQueue(t *testing.T) {
	reset(t)
	ctx := ctxFor(t, 30*time.Second)
	const name = "gives-up"
	holder := newLockClient(t, 3, lock.Options{}).NewMutex(name)
	require.NoError(t, holder.Lock(ctx))
	tie := tieBreakerOf(t, name, 3)

	waiter := newLockClient(t, 3, lock.Options{}).NewMutex(name)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(wctx) }()
	require.Eventually(t, func() bool { return slices.Contains(queueOn(t, tie, name), waiter.Owner()) },
		10*time.Second, time.Millisecond, "the waiter joins the queue")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Eventually(t, func() bool { return !slices.Contains(queueOn(t, tie, name), waiter.Owner()) },
		5*time.Second, 5*time.Millisecond, "the waiter that gave up leaves the queue")
	require.NoError(t, holder.Unlock(ctx))
}

// TestWaiterCutOffFromTheTieBreakerIsWoken: a waiter whose Client cannot
// reach the lock's tie-breaker is not in the queue, so no hand-off names
// it; the other nodes' releases wake it instead (as they wake keepers), and
// it takes the lock on them, instead of sleeping out the holder's lease.
func TestWaiterCutOffFromTheTieBreakerIsWoken(t *testing.T) {
	t.Run("default", testWaiterCutOffFromTheTieBreaker)
	t.Run("no-wait-queue", func(t *testing.T) { withoutWaitQueue(t); testWaiterCutOffFromTheTieBreaker(t) })
}

func testWaiterCutOffFromTheTieBreaker(t *testing.T) {
	c := reset(t)
	ctx := ctxFor(t, 30*time.Second)
	const name = "cut-off-waiter"
	tie := tieBreakerOf(t, name, 3)
	holder := newLockClient(t, 3, lock.Options{}).NewMutex(name)
	require.NoError(t, holder.Lock(ctx)) // 30 s lease, renewed

	waiter, got, heal := cutOffWaiter(t, ctx, c, name, tie)

	released := time.Now()
	require.NoError(t, holder.Unlock(ctx))
	select {
	case at := <-got:
		t.Logf("the cut-off waiter got the lock %v after the release", at.Sub(released))
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter cut off from the tie-breaker slept on after the release")
	}
	require.NoError(t, waiter.Unlock(ctx))
	heal()
}

// cutOffWaiter starts a Lock of name over links to the first 3 nodes of c
// that cut it off from node tie, and returns once it sleeps, with the
// channel its success is sent on, and heal, which restores the link.
func cutOffWaiter(t *testing.T, ctx context.Context, c *fixture.Cluster, name string, tie int) (*lock.Mutex, <-chan time.Time, func()) {
	t.Helper()
	links, err := c.NewLinks()
	require.NoError(t, err)
	require.NoError(t, links[tie].Partition())
	waiterClient := newLockClientOver(t, linkClients(links[:3]), lock.Options{NodeTimeout: 200 * time.Millisecond})
	waiter := waiterClient.NewMutex(name)
	got := lockInBackground(t, ctx, waiter, "waiter")
	require.Eventually(t, func() bool { return waiterClient.Stats().Sleeping == 1 }, 10*time.Second, time.Millisecond)
	return waiter, got, func() { require.NoError(t, links[tie].Heal()) }
}

// TestCutOffWaiterLooksAgainWhileTheReleaseIsOnItsWay: a waiter cut off
// from the lock's tie-breaker is woken by the first copy of a release, from
// a node the release reached first; the holder's release to another node is
// still on its way (its link delays requests by 600 ms), so the waiter's
// attempt meets the holder there. The copies of one release wake a process
// once (within pubsub's DedupWindow, 1 s), and no hand-off names a waiter
// outside the queue, so it must look again, as often as it takes, rather
// than sleep out the holder's 30 s lease. Looking once after the wake, it
// slept 29 s here; looking again with doubling delays, it took the lock
// 0.93 s after the release.
func TestCutOffWaiterLooksAgainWhileTheReleaseIsOnItsWay(t *testing.T) {
	c := reset(t)
	ctx := ctxFor(t, 60*time.Second)
	const name = "cut-off-slow-release"
	tie := tieBreakerOf(t, name, 3)
	slow := (tie + 1) % 3

	holderLinks, err := c.NewLinks()
	require.NoError(t, err)
	holderNodes := make([]redis.UniversalClient, 3)
	for i, l := range holderLinks[:3] {
		// The delayed release must land, not time out: the holder's
		// connections are open already (a new one's handshake would pay
		// the delay per round trip) and wait 5 s for an answer (the Client 2 s).
		cl := l.NewClient(func(o *redis.Options) { o.ReadTimeout, o.WriteTimeout = 5*time.Second, 5*time.Second })
		require.NoError(t, l.Warm(ctx, 4))
		holderNodes[i] = cl
	}
	holderClient := newLockClientOver(t, holderNodes, lock.Options{NodeTimeout: 2 * time.Second})
	warmUp := holderClient.NewMutex(name + "-warm-up") // loads the scripts: the release is one round trip
	require.NoError(t, warmUp.Lock(ctx))
	require.NoError(t, warmUp.Unlock(ctx))
	holder := holderClient.NewMutex(name)
	require.NoError(t, holder.Lock(ctx)) // 30 s lease, renewed

	waiter, got, heal := cutOffWaiter(t, ctx, c, name, tie)

	const delay = 600 * time.Millisecond
	require.NoError(t, holderLinks[slow].DelayRequests(delay))
	released := time.Now()
	require.NoError(t, holder.Unlock(ctx))
	select {
	case at := <-got:
		took := at.Sub(released)
		t.Logf("the cut-off waiter got the lock %v after the release (its copy to node %d took %v)", took, slow, delay)
		require.GreaterOrEqual(t, took, delay, "the waiter got the lock before the holder's release reached node %d", slow)
	case <-time.After(15 * time.Second):
		t.Fatal("the waiter cut off from the tie-breaker slept on after the release reached every node")
	}
	require.NoError(t, waiter.Unlock(ctx))
	heal()
	require.NoError(t, holderLinks[slow].Heal())
}

// scriptCalls is how many scripts node i has run (EVALSHA and EVAL).
func scriptCalls(t *testing.T, i int) int64 {
	return commandCalls(t, i, "evalsha", "eval")
}

// commandCalls is how many times node i has run the commands named (lower
// case), those run inside scripts included (INFO commandstats).
func commandCalls(t *testing.T, i int, names ...string) int64 {
	info, err := cluster.Nodes[i].Direct().Info(t.Context(), "commandstats").Result()
	require.NoError(t, err)
	var total int64
	for line := range strings.SplitSeq(info, "\n") {
		for _, name := range names {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+name+":calls="); ok {
				n, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
				require.NoError(t, err)
				total += n
			}
		}
	}
	return total
}

// TestUncontendedLockLeavesQueueAndChannelAlone: a blocking Lock that
// takes a free lock at its first attempt, and its Unlock, run no command
// of the wait queue (ZADD, ZREM, ZRANGE aside: the release reads whether
// anyone waits) and publish nothing, on any node: every waiting Lock joins
// the queue when refused, so a release that finds the queue empty has no
// one to tell, and an owner that was never refused has nothing to leave.
func TestUncontendedLockLeavesQueueAndChannelAlone(t *testing.T) {
	for _, masters := range []int{1, 3} {
		t.Run(itoaName(masters), func(t *testing.T) {
			reset(t)
			ctx := ctxFor(t, 30*time.Second)
			// Clients that never send a call twice: through one that may
			// (go-redis's defaults) an acquire also reads its tombstone,
			// since a copy of an earlier call may still land.
			m := newLockClientOver(t, fixtureClients(t, masters), lock.Options{}).NewMutex("quiet-" + itoaName(masters))
			quietCommands := []string{"zadd", "zrem", "publish", "get"}
			before := make([]int64, masters)
			for i := range masters {
				before[i] = commandCalls(t, i, quietCommands...)
			}
			for range 20 {
				require.NoError(t, m.Lock(ctx))
				require.NoError(t, m.Unlock(ctx))
			}
			for i := range masters {
				require.Equal(t, before[i], commandCalls(t, i, quietCommands...),
					"node %d ran %v for 20 uncontended cycles", i, quietCommands)
			}
		})
	}
}

// TestHandOffTargetSkipsTheDequeue: on one master, the release that hands
// the lock off takes its target out of the queue, and the target, knowing
// it, takes the lock without a ZREM of its own: one per hand-off in all.
func TestHandOffTargetSkipsTheDequeue(t *testing.T) {
	sc := heldWithWaiters(t, "target-dequeue-", 1, 1, lock.Options{})
	before := commandCalls(t, 0, "zrem")
	require.NoError(t, sc.holder.Unlock(sc.ctx))
	select {
	case <-sc.got:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not get the lock within 5 s of the release")
	}
	require.Equal(t, before+1, commandCalls(t, 0, "zrem"), "the release's ZREM of its target, and no other")
	require.Empty(t, queueOn(t, 0, sc.name))
	require.NoError(t, sc.waiters[0].Unlock(sc.ctx))
}

// TestReleaseSkipsItsOwnQueueEntry: an owner that is in the queue by
// mistake (a Lock that took the lock at its first attempt does not look
// for an entry of its own; here one is written by hand) is not handed the
// lock it releases: the hand-off goes to the waiter behind it, and the
// release takes the stray entry out.
func TestReleaseSkipsItsOwnQueueEntry(t *testing.T) {
	for _, masters := range []int{1, 3} {
		t.Run(itoaName(masters), func(t *testing.T) {
			sc := heldWithWaiters(t, "own-entry-", masters, 1, lock.Options{})
			key, err := reentrant.NewKey("", sc.name)
			require.NoError(t, err)
			require.NoError(t, cluster.Nodes[sc.tie].Direct().ZAdd(sc.ctx, key.Queue, redis.Z{Score: 1, Member: sc.holder.Owner()}).Err())
			require.Equal(t, []string{sc.holder.Owner(), sc.waiters[0].Owner()}, queueOn(t, sc.tie, sc.name))
			ps := cluster.Nodes[sc.tie].Direct().PSubscribe(sc.ctx, key.Channel+">*")
			t.Cleanup(func() { _ = ps.Close() })
			_, err = ps.Receive(sc.ctx) // the confirmation
			require.NoError(t, err)

			require.NoError(t, sc.holder.Unlock(sc.ctx))
			select {
			case <-sc.got:
			case <-time.After(5 * time.Second):
				t.Fatal("the waiter did not get the lock within 5 s of the release")
			}
			msg, err := ps.ReceiveMessage(sc.ctx)
			require.NoError(t, err)
			fields := strings.Split(msg.Payload, " ")
			require.Len(t, fields, 3, "a hand-off: %q", msg.Payload)
			require.Equal(t, sc.waiters[0].Owner(), fields[1], "the hand-off's target")
			require.Empty(t, queueOn(t, sc.tie, sc.name), "the release took its owner's entry out with the target")
			require.NoError(t, sc.waiters[0].Unlock(sc.ctx))
		})
	}
}

// TestUnlockLeavesTheQueueWhereItWasRefused: a waiter whose winning
// attempt was refused on one node (another owner held it there) stays
// registered in that node's queue while it holds the lock; its Unlock takes
// it out there, so that node's releases stop naming an owner that no longer
// waits.
func TestUnlockLeavesTheQueueWhereItWasRefused(t *testing.T) {
	reset(t)
	ctx := ctxFor(t, 30*time.Second)
	const name = "leave-queue"
	other := (tieBreakerOf(t, name, 3) + 1) % 3
	plantHolder(t, ctx, name, other)

	holder := newLockClient(t, 3, lock.Options{}).NewMutex(name)
	require.NoError(t, holder.Lock(ctx)) // on the two other nodes
	waiterClient := newLockClient(t, 3, lock.Options{})
	waiter := waiterClient.NewMutex(name)
	got := lockInBackground(t, ctx, waiter, "waiter")
	require.Eventually(t, func() bool { return waiterClient.Stats().Sleeping == 1 }, 10*time.Second, time.Millisecond)
	require.NoError(t, holder.Unlock(ctx))
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not get the lock within 10 s of the release")
	}
	// Its winning attempt carried its ticket everywhere: refused on other,
	// it is registered there.
	require.Equal(t, []string{waiter.Owner()}, queueOn(t, other, name))

	require.NoError(t, waiter.Unlock(ctx))
	require.Empty(t, queueOn(t, other, name), "the Unlock took its owner out of the queue where it was refused")
	for i := range 3 {
		require.Empty(t, queueOn(t, i, name), "node %d", i)
	}
}

// plantHolder makes another owner (dead:1) hold the lock name, with a 30 s
// lease, on the given nodes, and returns its operation.
func plantHolder(t *testing.T, ctx context.Context, name string, nodes ...int) reentrant.Op {
	t.Helper()
	key, err := reentrant.NewKey("", name)
	require.NoError(t, err)
	dead := reentrant.Op{Key: key, Owner: "dead:1", Lease: 30 * time.Second, Count: 1, Seq: 1}
	for _, i := range nodes {
		a, err := reentrant.NewNode(cluster.Nodes[i].Direct(), 0).Acquire(ctx, dead)
		require.NoError(t, err)
		require.True(t, a.Acquired)
	}
	return dead
}

// unplantHolder releases what plantHolder planted on the given nodes.
func unplantHolder(t *testing.T, ctx context.Context, dead reentrant.Op, nodes ...int) {
	t.Helper()
	dead.Count, dead.Seq = 0, 2
	for _, i := range nodes {
		_, err := reentrant.NewNode(cluster.Nodes[i].Direct(), 0).Release(ctx, dead, "dead:1/2")
		require.NoError(t, err)
	}
}

// tombstoneOn reports whether owner's tombstone for the lock name is on
// node i.
func tombstoneOn(t *testing.T, ctx context.Context, i int, name, owner string) bool {
	key, err := reentrant.NewKey("", name)
	require.NoError(t, err)
	n, err := cluster.Nodes[i].Direct().Exists(ctx, key.Tombstone(owner)).Result()
	require.NoError(t, err)
	return n == 1
}

// requireLockReads takes m's lock and releases it, and requires that
// node i ran exactly the reads want of acquire.lua's first branches
// (EXISTS, HLEN, HMGET, PTTL, GET) meanwhile.
func requireLockReads(t *testing.T, ctx context.Context, m *lock.Mutex, i int, want map[string]int64, why string) {
	t.Helper()
	reads := []string{"exists", "hlen", "hmget", "pttl", "get"}
	before := make([]int64, len(reads))
	for j, cmd := range reads {
		before[j] = commandCalls(t, i, cmd)
	}
	require.NoError(t, m.Lock(ctx))
	ran := map[string]int64{}
	for j, cmd := range reads {
		if d := commandCalls(t, i, cmd) - before[j]; d != 0 {
			ran[cmd] = d
		}
	}
	require.Equal(t, want, ran, why)
	require.NoError(t, m.Unlock(ctx))
}

// TestUnlockThatFindsNoHoldLeavesNoTombstone: an Unlock whose release finds
// no hold of its owner on a node (its Lock won through the other nodes,
// refused there) leaves no tombstone there, since no call of the owner can
// still land; the owner's next Lock there looks for the lock and a
// tombstone in one EXISTS.
func TestUnlockThatFindsNoHoldLeavesNoTombstone(t *testing.T) {
	reset(t)
	ctx := ctxFor(t, 30*time.Second)
	const name = "no-hold-no-tombstone"
	other := (tieBreakerOf(t, name, 3) + 1) % 3
	dead := plantHolder(t, ctx, name, other)

	// Clients that never send a call twice: a release through one that may
	// (go-redis's defaults) always buries, as a copy may still land.
	m := newLockClientOver(t, fixtureClients(t, 3), lock.Options{}).NewMutex(name)
	require.NoError(t, m.Lock(ctx)) // on the two other nodes
	require.NoError(t, m.Unlock(ctx))
	require.False(t, tombstoneOn(t, ctx, other, name, m.Owner()), "the release that found no hold left a tombstone")

	unplantHolder(t, ctx, dead, other)
	requireLockReads(t, ctx, m, other, map[string]int64{"exists": 1},
		"the Lock looked for the lock and its tombstone in one EXISTS")
}

// TestLockExpectsTheTombstoneItsUndoLeft: the undo of a failed attempt
// leaves the owner's tombstone where the attempt took the lock. The
// owner's next Lock expects it there: its script reads the lock and the
// tombstone apart (HLEN, GET), instead of an EXISTS that finds the
// tombstone and three reads after it (HMGET, PTTL, GET).
func TestLockExpectsTheTombstoneItsUndoLeft(t *testing.T) {
	reset(t)
	ctx := ctxFor(t, 30*time.Second)
	const name = "undo-tombstone"
	tie := tieBreakerOf(t, name, 3)
	taken, free := (tie+1)%3, (tie+2)%3
	// Another owner holds a quorum, the tie-breaker included.
	dead := plantHolder(t, ctx, name, tie, taken)

	m := newLockClient(t, 3, lock.Options{}).NewMutex(name)
	ok, err := m.TryLock(ctx)
	require.NoError(t, err)
	require.False(t, ok)
	require.Eventually(t, func() bool { return tombstoneOn(t, ctx, free, name, m.Owner()) },
		10*time.Second, time.Millisecond, "the undo of the attempt left a tombstone where it took the lock")

	unplantHolder(t, ctx, dead, tie, taken)
	requireLockReads(t, ctx, m, free, map[string]int64{"hlen": 1, "get": 1},
		"the Lock read the lock and its tombstone apart, where it knew one was")
}

// TestHandleThatMetContentionProbesFirst: a handle whose last Lock waited
// for another holder begins its next Lock with a probe of the tie-breaker,
// not with a script on every node: the other nodes run none of its scripts
// while the lock stays held.
func TestHandleThatMetContentionProbesFirst(t *testing.T) {
	reset(t)
	ctx := ctxFor(t, 30*time.Second)
	const name = "probe-first"
	tie := tieBreakerOf(t, name, 3)
	others := []int{(tie + 1) % 3, (tie + 2) % 3}
	a := newLockClient(t, 3, lock.Options{}).NewMutex(name)
	bClient := newLockClient(t, 3, lock.Options{})
	b := bClient.NewMutex(name)

	// b waits once for a, so b has met contention.
	require.NoError(t, a.Lock(ctx))
	bGot := make(chan error, 1)
	go func() { bGot <- b.Lock(ctx) }()
	require.Eventually(t, func() bool { return bClient.Stats().Sleeping == 1 }, 10*time.Second, time.Millisecond)
	require.NoError(t, a.Unlock(ctx))
	require.NoError(t, <-bGot)
	require.NoError(t, b.Unlock(ctx))

	// a holds again; b's next Lock waits, and asks only the tie-breaker.
	require.NoError(t, a.Lock(ctx))
	before := []int64{scriptCalls(t, others[0]), scriptCalls(t, others[1])}
	go func() { bGot <- b.Lock(ctx) }()
	require.Eventually(t, func() bool { return bClient.Stats().Sleeping == 1 }, 10*time.Second, time.Millisecond)
	after := []int64{scriptCalls(t, others[0]), scriptCalls(t, others[1])}
	require.Equal(t, before, after, "the nodes other than the tie-breaker ran no script while b began to wait")

	require.NoError(t, a.Unlock(ctx))
	require.NoError(t, <-bGot)
	require.NoError(t, b.Unlock(ctx))
}

// TestHandOffGoesToTheTargetsProcessAlone: a release that hands the lock off
// publishes the hand-off on the personal channels of the target's process
// and of the next owner's (pubsub.PersonalChannel), not on the lock's
// channel, which every waiting process reads; the other nodes publish
// nothing, unless the target's attempt overtook the release there, and
// then only for the target's process.
func TestHandOffGoesToTheTargetsProcessAlone(t *testing.T) {
	sc := heldWithWaiters(t, "personal-", 3, 3, lock.Options{})
	key, err := reentrant.NewKey("", sc.name)
	require.NoError(t, err)

	type heard struct{ node, channel, payload string }
	msgs := make(chan heard, 64)
	for i := range 3 {
		ps := cluster.Nodes[i].Direct().PSubscribe(sc.ctx, key.Channel, key.Channel+">*")
		t.Cleanup(func() { _ = ps.Close() })
		_, err := ps.Receive(sc.ctx) // the first confirmation
		require.NoError(t, err)
		_, err = ps.Receive(sc.ctx)
		require.NoError(t, err)
		ch := ps.Channel()
		go func() {
			for m := range ch {
				msgs <- heard{strconv.Itoa(i), m.Channel, m.Payload}
			}
		}()
	}

	require.NoError(t, sc.holder.Unlock(sc.ctx))
	select {
	case i := <-sc.got:
		require.Equal(t, 0, i, "the oldest waiter gets the lock")
	case <-time.After(10 * time.Second):
		t.Fatal("no waiter got the lock")
	}
	time.Sleep(200 * time.Millisecond) // whatever else the release published
	var got []heard
	for len(msgs) > 0 {
		got = append(got, <-msgs)
	}
	want := map[string]bool{
		pubsub.PersonalChannel(key.Channel, sc.clients[0].ID()): true, // the target's
		pubsub.PersonalChannel(key.Channel, sc.clients[1].ID()): true, // the next owner's
	}
	seen := map[string]bool{}
	for _, m := range got {
		require.True(t, want[m.channel], "published on %q: %+v", m.channel, got)
		if m.node != strconv.Itoa(sc.tie) {
			// The target's attempt overtook the release on this node: it
			// registered there as a keeper, and hears of that release.
			require.Equal(t, pubsub.PersonalChannel(key.Channel, sc.clients[0].ID()), m.channel, "%+v", got)
			require.True(t, strings.HasSuffix(m.payload, " k"), "a copy for keepers: %+v", got)
			continue
		}
		require.Contains(t, m.payload, " "+sc.waiters[0].Owner()+" "+sc.waiters[1].Owner(), "the hand-off names the target, then the next")
		seen[m.channel] = true
	}
	require.Len(t, seen, 2, "one hand-off for each of the two processes: %+v", got)
	require.NoError(t, sc.waiters[0].Unlock(sc.ctx))
}
