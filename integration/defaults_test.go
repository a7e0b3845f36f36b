package integration_test

// Issue 10, point 4: with go-redis clients at their defaults
// (ContextTimeoutEnabled false, ReadTimeout 3 s, 3 retries) a node call
// ignores its ctx deadline, so whatever waits for it is bounded by go-redis,
// not by relock. These tests stall one node of three and check that every
// caller-facing call still returns within a bound set by NodeTimeout (or by
// its ctx), far below go-redis's 3 s read timeout, and that the work left
// behind finishes in the background.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/lua"
	"github.com/relock-go/relock/reentrant"
)

const (
	// defaultsNodeTimeout is the fixed NodeTimeout of the clients under test:
	// an acquire waits 50 ms per node, a release 200 ms.
	defaultsNodeTimeout = 50 * time.Millisecond
	// defaultsBound is what a call may take beyond its own budget (ctx, or a
	// few NodeTimeouts): generous for -race on two loaded cores, and still
	// well below the 3 s a call that waited for go-redis's default read
	// timeout on the stalled node would take.
	defaultsBound = time.Second
	// clientPauseFor is how long a CLIENT PAUSE stall lasts: past go-redis's
	// default read timeout, so a call that waits for the stalled node takes
	// about 3 s and cannot pass for a bounded one.
	clientPauseFor = 3500 * time.Millisecond
)

// defaultClients returns a go-redis client per node of the first n, with
// go-redis's default options apart from the address, as a user would make
// them; each has one connection open. They are closed with the test.
func defaultClients(t *testing.T, n int) []redis.UniversalClient {
	t.Helper()
	return directClients(t, n, func(addr string) *redis.Options { return &redis.Options{Addr: addr} })
}

// fixtureClients returns clients of the first n nodes, direct, with the
// fixture's own settings whatever RELOCK_TEST_CLIENTS says (no retries: a
// call is never sent twice), for a test whose assertions depend on them.
func fixtureClients(t *testing.T, n int) []redis.UniversalClient {
	t.Helper()
	return directClients(t, n, fixture.FixtureOptions)
}

// directClients returns clients of the first n nodes, direct (no link),
// made with options, closed when the test ends.
func directClients(t *testing.T, n int, options func(addr string) *redis.Options) []redis.UniversalClient {
	t.Helper()
	out := make([]redis.UniversalClient, n)
	for i := range n {
		rdb := redis.NewClient(options(cluster.Nodes[i].Addr()))
		t.Cleanup(func() { _ = rdb.Close() })
		require.NoError(t, rdb.Ping(ctxFor(t, 5*time.Second)).Err(), "node %d", i)
		out[i] = rdb
	}
	return out
}

// nodeStall is a way to make node i stop answering: every command sent to it
// waits until the stall ends.
type nodeStall struct {
	name  string
	start func(t *testing.T, i int)
}

// stalls are the two ways: the fixture's docker pause (the whole process
// frozen, undone by the test's cleanup), and CLIENT PAUSE ALL, as in the
// issue's report (the server holds every client's commands; it cannot be
// cut short, so the cleanup waits for its end).
var stalls = []nodeStall{
	{"docker-pause", func(t *testing.T, i int) {
		t.Helper()
		require.NoError(t, cluster.Nodes[i].Pause(ctxFor(t, 10*time.Second)))
		t.Cleanup(func() { _ = cluster.Nodes[i].Unpause(context.Background()) })
	}},
	{"client-pause", func(t *testing.T, i int) {
		t.Helper()
		clientPause(t, i)
	}},
}

// clientPause runs CLIENT PAUSE ALL on node i for clientPauseFor; the test's
// cleanup waits until the pause is over.
func clientPause(t *testing.T, i int) {
	t.Helper()
	end := time.Now().Add(clientPauseFor)
	require.NoError(t, cluster.Nodes[i].Direct().Do(ctxFor(t, 5*time.Second),
		"CLIENT", "PAUSE", clientPauseFor.Milliseconds(), "ALL").Err())
	t.Cleanup(func() { time.Sleep(time.Until(end)) })
}

// forStalls runs f as a subtest for each kind of stall.
func forStalls(t *testing.T, f func(t *testing.T, s nodeStall)) {
	for _, s := range stalls {
		t.Run(s.name, func(t *testing.T) { f(t, s) })
	}
}

// timed runs call and fails the test if it took longer than bound.
func timed(t *testing.T, what string, bound time.Duration, call func() error) error {
	t.Helper()
	start := time.Now()
	err := call()
	took := time.Since(start)
	t.Logf("%s: %v (%v)", what, took.Round(time.Millisecond), err)
	require.Less(t, took, bound, "%s waited for the stalled node (err: %v)", what, err)
	return err
}

// boundedRetry is timed for a call that may fail only because the live
// nodes were slower than NodeTimeout on a loaded machine (a
// *lock.QuorumError): it is made again, at most 5 times, and every try must
// return within bound. It returns the last error.
func boundedRetry(t *testing.T, what string, bound time.Duration, call func() error) error {
	t.Helper()
	var err error
	for try := 1; try <= 5; try++ {
		err = timed(t, fmt.Sprintf("%s (try %d)", what, try), bound, call)
		if qe := (*lock.QuorumError)(nil); !errors.As(err, &qe) {
			return err
		}
	}
	return err
}

// defaultsLockClient is a lock.Client over nodes with the fixed
// defaultsNodeTimeout, closed with the test.
func defaultsLockClient(t *testing.T, nodes []redis.UniversalClient) *lock.Client {
	t.Helper()
	return newLockClientOver(t, nodes, lock.Options{NodeTimeout: defaultsNodeTimeout, Lease: 30 * time.Second})
}

// defaultsSetup resets the cluster and returns default go-redis clients of
// its first three nodes, a Client under test over them (defaultsLockClient)
// and another Client over them with the library's defaults, for the other
// owner or the operator.
func defaultsSetup(t *testing.T) (nodes []redis.UniversalClient, c, other *lock.Client) {
	t.Helper()
	reset(t)
	nodes = defaultClients(t, 3)
	return nodes, defaultsLockClient(t, nodes), newLockClientOver(t, nodes, lock.Options{})
}

// TestDefaultClientsUnlockLostHoldIsBounded: Unlock of a hold that was lost
// (force-unlocked by an operator) while one node of three is stalled returns
// ErrLost within a NodeTimeout-based bound (a release waits 4 NodeTimeouts
// per node), with the hold count 1 and 2 (the second also cleans up what is
// left of the hold); Unlock of a hold still held returns nil as fast. The
// issue's report: 2.07 s with NodeTimeout 50 ms.
func TestDefaultClientsUnlockLostHoldIsBounded(t *testing.T) {
	forStalls(t, func(t *testing.T, s nodeStall) {
		_, c, admin := defaultsSetup(t)
		ctx := ctxFor(t, 20*time.Second)

		lost1, lost2, held := c.NewMutex("defaults-lost-1"), c.NewMutex("defaults-lost-2"), c.NewMutex("defaults-held")
		for _, m := range []*lock.Mutex{lost1, lost2, lost2, held} {
			require.NoError(t, m.Lock(ctx))
		}
		require.NoError(t, admin.ForceUnlock(ctx, lost1.Name()))
		require.NoError(t, admin.ForceUnlock(ctx, lost2.Name()))
		s.start(t, 0)

		bound := 4*defaultsNodeTimeout + defaultsBound
		require.ErrorIs(t, timed(t, "Unlock of a lost hold", bound, func() error { return lost1.Unlock(ctx) }), lock.ErrLost)
		require.ErrorIs(t, timed(t, "Unlock of a lost re-entered hold", bound, func() error { return lost2.Unlock(ctx) }), lock.ErrLost)
		require.ErrorIs(t, timed(t, "second Unlock of the lost hold", bound, func() error { return lost2.Unlock(ctx) }), lock.ErrLost)
		require.NoError(t, timed(t, "Unlock of a held lock", bound, func() error { return held.Unlock(ctx) }))
	})
}

// onScript is a go-redis hook that calls fire once, just before the first
// command running script goes out (alone or in a pipeline).
type onScript struct {
	script *lua.Script
	fire   func()
	// pipelinedOnly: only a command sent in a pipeline counts.
	pipelinedOnly bool
	// armed, when set, must be true for a command to count.
	armed *atomic.Bool
	once  sync.Once
}

func (h *onScript) see(cmd redis.Cmder, pipelined bool) {
	if (h.pipelinedOnly && !pipelined) || (h.armed != nil && !h.armed.Load()) {
		return
	}
	if runsScript(cmd, h.script) {
		h.once.Do(h.fire)
	}
}

func (h *onScript) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *onScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.see(cmd, false)
		return next(ctx, cmd)
	}
}

func (h *onScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.see(cmd, true)
		}
		return next(ctx, cmds)
	}
}

// TestDefaultClientsFencedLockIsBounded: a fenced Lock with one node of three
// stalled returns within its ctx (plus a margin) when another owner holds the
// lock (the report: 1.60 s for a 300 ms ctx), acquires at once when
// the lock is free, and a fenced TryLock whose token draw fails (a second
// node stalls just as the token goes out) returns the fence's QuorumError
// within a NodeTimeout-based bound, its hold taken back in the background.
func TestDefaultClientsFencedLockIsBounded(t *testing.T) {
	forStalls(t, func(t *testing.T, s nodeStall) {
		_, c, other := defaultsSetup(t)
		ctx := ctxFor(t, 20*time.Second)
		require.NoError(t, other.NewMutex("defaults-fenced-held").LockFor(ctx, 20*time.Second))
		s.start(t, 0)

		t.Run("held by another", func(t *testing.T) {
			m := c.NewMutex("defaults-fenced-held", lock.WithFencing(0))
			wait := 300 * time.Millisecond
			err := timed(t, "fenced Lock of a held lock", wait+defaultsBound, func() error {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				return m.Lock(ctx)
			})
			require.ErrorIs(t, err, context.DeadlineExceeded)
		})
		t.Run("free", func(t *testing.T) {
			m := c.NewMutex("defaults-fenced-free", lock.WithFencing(0))
			require.NoError(t, timed(t, "fenced Lock of a free lock", defaultsBound, func() error { return m.Lock(ctx) }))
			require.Positive(t, m.Token())
			require.NoError(t, timed(t, "its Unlock", 4*defaultsNodeTimeout+defaultsBound, func() error { return m.Unlock(ctx) }))
		})
	})

	t.Run("token draw fails", func(t *testing.T) {
		reset(t)
		nodes := defaultClients(t, 3)
		pausedAt := make(chan time.Time, 1)
		// Node 1 stalls just before the first token reaches it; the acquire
		// before it went through.
		nodes[1].AddHook(&onScript{script: lua.Fence, fire: func() {
			pausedAt <- time.Now()
			_ = cluster.Nodes[1].Direct().Do(context.Background(), "CLIENT", "PAUSE", clientPauseFor.Milliseconds(), "ALL").Err()
		}})
		c := defaultsLockClient(t, nodes)
		ctx := ctxFor(t, 20*time.Second)
		require.NoError(t, c.NewMutex("defaults-warm").LockFor(ctx, time.Second)) // first contact done
		clientPause(t, 0)

		m := c.NewMutex("defaults-fence-fails", lock.WithFencing(0))
		var qe *lock.QuorumError
		for try := 1; try <= 5; try++ {
			err := timed(t, fmt.Sprintf("fenced TryLock (try %d)", try), 2*defaultsNodeTimeout+defaultsBound, func() error {
				ok, err := m.TryLock(ctx)
				require.False(t, ok)
				return err
			})
			require.ErrorAs(t, err, &qe)
			if qe.Op != "acquire" {
				break // an acquire that failed on a loaded machine is tried again
			}
		}
		require.Equal(t, "fence", qe.Op, "the acquire went through, the token draw must be what failed: %v", qe)
		require.Zero(t, m.HoldCount())

		// The hold is taken back on every node once they answer again.
		select {
		case at := <-pausedAt:
			time.Sleep(time.Until(at.Add(clientPauseFor)))
		default:
		}
		requireFree(t, 3, "defaults-fence-fails", 5*time.Second)
	})
}

// TestDefaultClientsCallsAreBounded: with one node of three stalled, every
// caller-facing call of a Client over default go-redis clients returns within
// a NodeTimeout-based bound (a blocking Lock within its ctx), with the answer
// the two live nodes give: the first contact's identity check (Inspect of a
// Client never used before), Inspect, IsLocked, TTL, TryLock of a held and of
// a free lock, Lock of a held lock, LockFor, Unlock, ForceUnlock. Close is
// timed too: it waits for the node calls still in flight, which go-redis
// bounds, so it is only required to return.
func TestDefaultClientsCallsAreBounded(t *testing.T) {
	forStalls(t, func(t *testing.T, s nodeStall) {
		nodes, c, holder := defaultsSetup(t)
		fresh := defaultsLockClient(t, nodes) // no call before the stall
		ctx := ctxFor(t, 30*time.Second)
		const busy = "defaults-busy"
		require.NoError(t, holder.NewMutex(busy).LockFor(ctx, 20*time.Second))
		mine := c.NewMutex("defaults-mine")
		require.NoError(t, mine.Lock(ctx))
		s.start(t, 0)

		read := 2*defaultsNodeTimeout + defaultsBound // identity check + one fan-out
		write := 4*defaultsNodeTimeout + defaultsBound

		var states []lock.NodeState
		require.NoError(t, boundedRetry(t, "Inspect, first contact", read, func() error {
			var err error
			states, err = fresh.Inspect(ctx, busy)
			return err
		}))
		require.Error(t, states[0].Err, "the stalled node cannot have answered")

		require.NoError(t, timed(t, "Inspect", read, func() error {
			var err error
			states, err = c.Inspect(ctx, busy)
			return err
		}))
		require.Error(t, states[0].Err)
		var locked bool
		require.NoError(t, boundedRetry(t, "IsLocked", read, func() error {
			var err error
			locked, err = c.IsLocked(ctx, busy)
			return err
		}))
		require.True(t, locked)
		var ttl time.Duration
		require.NoError(t, boundedRetry(t, "TTL", read, func() error {
			var err error
			ttl, err = c.TTL(ctx, busy)
			return err
		}))
		require.Positive(t, ttl)

		require.NoError(t, boundedRetry(t, "TryLock of a held lock", write, func() error {
			ok, err := c.NewMutex(busy).TryLock(ctx)
			require.False(t, ok)
			return err
		}))
		wait := 300 * time.Millisecond
		require.ErrorIs(t, timed(t, "Lock of a held lock", wait+defaultsBound, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			return c.NewMutex(busy).Lock(ctx)
		}), context.DeadlineExceeded)

		free := c.NewMutex("defaults-free")
		require.NoError(t, boundedRetry(t, "TryLock of a free lock", write, func() error {
			ok, err := free.TryLock(ctx)
			if err == nil {
				require.True(t, ok)
			}
			return err
		}))
		require.NoError(t, timed(t, "its Unlock", write, func() error { return free.Unlock(ctx) }))
		leased := c.NewMutex("defaults-leased")
		require.NoError(t, timed(t, "LockFor of a free lock", write, func() error { return leased.LockFor(ctx, 10*time.Second) }))
		require.NoError(t, timed(t, "its Unlock", write, func() error { return leased.Unlock(ctx) }))
		require.NoError(t, timed(t, "Unlock of a hold taken before the stall", write, func() error { return mine.Unlock(ctx) }))

		require.NoError(t, boundedRetry(t, "ForceUnlock", 2*write, func() error { return c.ForceUnlock(ctx, busy) }))
		require.NoError(t, boundedRetry(t, "IsLocked after ForceUnlock", read, func() error {
			var err error
			locked, err = c.IsLocked(ctx, busy)
			return err
		}))
		require.False(t, locked)

		// Close waits for the node calls still on their way to the stalled
		// node, its own last clean-ups included; go-redis ends each after its
		// read timeout (3 s), or, on a connection it dials meanwhile, after
		// the handshake's DialTimeout (5 s); their ctx has ended, so no retry
		// follows. Close waits for them side by side: 5.0 s measured; its
		// stages one after the other took 9.4 s.
		closeBound := 5*time.Second + 2*defaultsBound
		require.NoError(t, timed(t, "Close", closeBound, c.Close))
		require.NoError(t, timed(t, "Close of the first-contact Client", closeBound, fresh.Close))
	})
}

// TestDefaultClientsUnlockDuringRepairIsBounded: the watchdog found a node
// without the lock a quorum holds (it lost its keys) and queued a repair;
// the node stalls just as the repair goes out. Unlock (and Lock of the same
// handle) must not wait for that background round trip, which a default
// go-redis client ends only after its 3 s read timeout (3.49 s before the
// fix, and the lease ran out meanwhile, since renewals skip a busy owner);
// and the late repair must not bring the released lock back.
func TestDefaultClientsUnlockDuringRepairIsBounded(t *testing.T) {
	reset(t)
	nodes := defaultClients(t, 3)
	var armed atomic.Bool
	stalled := make(chan time.Time, 1)
	// Node 0 stalls just before the first acquire script sent in a
	// pipeline once armed: the repair (a lone acquire goes out alone).
	nodes[0].AddHook(&onScript{script: lua.Acquire, pipelinedOnly: true, armed: &armed, fire: func() {
		stalled <- time.Now()
		_ = cluster.Nodes[0].Direct().Do(context.Background(), "CLIENT", "PAUSE", clientPauseFor.Milliseconds(), "ALL").Err()
	}})
	c := newLockClientOver(t, nodes, lock.Options{NodeTimeout: defaultsNodeTimeout, Lease: 1500 * time.Millisecond})
	ctx := ctxFor(t, 20*time.Second)
	m := c.NewMutex("defaults-repair")
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Lock(ctx)) // count 2: one Unlock leaves it held

	// Node 0 loses the lock; the next renewal (every 500 ms) repairs it.
	armed.Store(true)
	key, err := reentrant.NewKey("", "defaults-repair")
	require.NoError(t, err)
	require.NoError(t, cluster.Nodes[0].Direct().Del(ctx, key.Lock).Err())
	var at time.Time
	select {
	case at = <-stalled:
	case <-time.After(5 * time.Second):
		t.Fatal("no repair went out to node 0")
	}
	t.Cleanup(func() { time.Sleep(time.Until(at.Add(clientPauseFor))) })
	time.Sleep(20 * time.Millisecond) // the repair is on the wire

	bound := 4*defaultsNodeTimeout + defaultsBound
	require.NoError(t, timed(t, "Unlock during the repair", bound, func() error { return m.Unlock(ctx) }))
	require.NoError(t, timed(t, "Lock (re-entry) during the repair", bound, func() error { return m.Lock(ctx) }))
	require.NoError(t, timed(t, "Unlock", bound, func() error { return m.Unlock(ctx) }))
	require.NoError(t, timed(t, "last Unlock", bound, func() error { return m.Unlock(ctx) }))

	// The repair, still queued on node 0 behind the pause, must not bring
	// the lock back there when it runs: the release to zero's tombstone
	// makes it stale.
	time.Sleep(time.Until(at.Add(clientPauseFor)))
	requireFree(t, 3, "defaults-repair", 2*time.Second)
	time.Sleep(200 * time.Millisecond)
	requireFree(t, 3, "defaults-repair", 0)
}
