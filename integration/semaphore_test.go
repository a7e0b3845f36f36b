package integration_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/reentrant"
)

// permitsOn reads the semaphore name on the first n nodes directly (around
// any fault of the links): one map of owner → live permits per node.
func permitsOn(t *testing.T, n int, name string) []map[string]int64 {
	t.Helper()
	key := mustSemKey(t, name)
	out := make([]map[string]int64, n)
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		state, err := reentrant.NewNode(cluster.Nodes[i].Direct(), 0).InspectSemaphore(ctx, key)
		cancel()
		require.NoError(t, err, "inspect node %d", i)
		out[i] = map[string]int64{}
		for owner, h := range state.Holders {
			out[i][owner] = h.Permits
		}
	}
	return out
}

// requireNoPermitsSoon asserts that no node of the first n counts a holder
// of the semaphore, allowing wait for background clean-ups to land.
func requireNoPermitsSoon(t *testing.T, n int, name string, wait time.Duration) {
	t.Helper()
	requirePermitsSoon(t, n, name, map[string]int64{}, wait)
}

// requirePermitsSoon asserts that every node of the first n counts exactly
// the holders of want (owner → permits), allowing wait for background
// clean-ups to land.
func requirePermitsSoon(t *testing.T, n int, name string, want map[string]int64, wait time.Duration) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		have := permitsOn(t, n, name)
		if !slices.ContainsFunc(have, func(h map[string]int64) bool { return !maps.Equal(h, want) }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("semaphore %q: want %v on every node after %v, have %v", name, want, wait, have)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func newSemaphore(t *testing.T, c *lock.Client, name string, permits int) *lock.Semaphore {
	t.Helper()
	s, err := c.NewSemaphore(name, permits)
	require.NoError(t, err)
	return s
}

func TestSemaphoreBadInputIsRefusedAndChangesNothing(t *testing.T) {
	reset(t)
	c := newLockClient(t, 3, lock.Options{})
	ctx := ctxFor(t, 10*time.Second)
	for _, k := range []int{0, -1} {
		_, err := c.NewSemaphore("bad", k)
		require.ErrorIs(t, err, lock.ErrInvalidArgument, "capacity %d", k)
	}
	_, err := c.NewSemaphore("", 2)
	require.ErrorIs(t, err, lock.ErrInvalidArgument, "empty name")

	s := newSemaphore(t, c, "bad", 2)
	for _, n := range []int{0, -1, 3} {
		p, err := s.Acquire(ctx, n)
		require.ErrorIs(t, err, lock.ErrInvalidArgument, "Acquire(%d)", n)
		require.Nil(t, p)
		p, err = s.TryAcquire(ctx, n)
		require.ErrorIs(t, err, lock.ErrInvalidArgument, "TryAcquire(%d)", n)
		require.Nil(t, p)
	}
	_, err = s.AcquireFor(ctx, 1, time.Millisecond)
	require.ErrorIs(t, err, lock.ErrInvalidArgument, "a lease not well above the node timeout")
	for i, h := range permitsOn(t, 3, "bad") {
		require.Empty(t, h, "node %d", i)
	}
	require.Equal(t, 3, s.Quorum(), "k = 2 on 3 nodes needs every node")
	require.Equal(t, 2, s.Capacity())

	// Someone else's data where the semaphore's leases go: a typed error
	// naming the key, and the data left as it was.
	key := mustSemKey(t, "foreign")
	for i := range 3 {
		require.NoError(t, cluster.Nodes[i].Direct().Set(ctx, key.Leases, "theirs", 0).Err())
	}
	p, err := newSemaphore(t, c, "foreign", 2).TryAcquire(ctx, 1)
	require.Nil(t, p)
	var wt *reentrant.WrongTypeError
	require.ErrorAs(t, err, &wt)
	require.Equal(t, key.Leases, wt.Key)
	require.ErrorIs(t, err, lock.ErrWrongType)
	for i := range 3 {
		require.Equal(t, "theirs", cluster.Nodes[i].Direct().Get(ctx, key.Leases).Val())
	}
}

// TestSemaphoreCapacityMismatchIsRefused: a handle that gives a semaphore
// another capacity than its holders gave gets a typed error at once, from
// TryAcquire, from a waiting Acquire and from Available, and changes
// nothing on any node; once the semaphore is idle, the new capacity is
// taken.
func TestSemaphoreCapacityMismatchIsRefused(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		c := newLockClient(t, n, lock.Options{})
		ctx := ctxFor(t, 20*time.Second)
		const name = "capacity"
		two := newSemaphore(t, c, name, 2)
		held, err := two.Acquire(ctx, 1)
		require.NoError(t, err)

		three := newSemaphore(t, newLockClient(t, n, lock.Options{}), name, 3)
		p, err := three.TryAcquire(ctx, 1)
		require.Nil(t, p)
		require.ErrorIs(t, err, lock.ErrCapacityMismatch)
		var ce *reentrant.CapacityError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, reentrant.CapacityError{Key: mustSemKey(t, name).Lock, Capacity: 2, Asked: 3}, *ce)

		// A waiting Acquire does not wait for a quorum that cannot come.
		waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		p, err = three.Acquire(waitCtx, 1)
		require.Nil(t, p)
		require.ErrorIs(t, err, lock.ErrCapacityMismatch)
		require.NoError(t, waitCtx.Err(), "refused at once, not when ctx ended")

		requirePermitsSoon(t, n, name, map[string]int64{held.Owner(): 1}, 2*time.Second)
		free, err := two.Available(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, free, "the mismatched attempts took nothing")
		_, err = three.Available(ctx)
		require.ErrorAs(t, err, &ce, "a handle of another capacity gets no count made with it")
		require.Equal(t, reentrant.CapacityError{Key: mustSemKey(t, name).Lock, Capacity: 2, Asked: 3}, *ce)

		// Idle, the semaphore takes the new capacity, and the old one is
		// refused in turn.
		require.NoError(t, held.Release(ctx))
		requireNoPermitsSoon(t, n, name, 2*time.Second)
		p, err = three.TryAcquire(ctx, 3)
		require.NoError(t, err)
		require.NotNil(t, p)
		_, err = two.TryAcquire(ctx, 1)
		require.ErrorIs(t, err, lock.ErrCapacityMismatch)
		_, err = two.Available(ctx)
		require.ErrorIs(t, err, lock.ErrCapacityMismatch)
		require.NoError(t, p.Release(ctx))
		free, err = two.Available(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, free, "idle again: any capacity is the semaphore's")
	})
}

// TestSemaphoreTryAcquireAndAvailable: TryAcquire takes what is free and
// returns no permit when the semaphore is full; Available follows; Release
// gives the permits back on every node.
func TestSemaphoreTryAcquireAndAvailable(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		c := newLockClient(t, n, lock.Options{})
		ctx := ctxFor(t, 15*time.Second)
		s := newSemaphore(t, c, "try", 3)
		free, err := s.Available(ctx)
		require.NoError(t, err)
		require.Equal(t, 3, free)

		two, err := s.TryAcquire(ctx, 2)
		require.NoError(t, err)
		require.NotNil(t, two)
		require.Equal(t, 2, two.Permits())
		require.True(t, two.ValidUntil().After(time.Now()))
		free, err = s.Available(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, free)

		p, err := s.TryAcquire(ctx, 2)
		require.NoError(t, err)
		require.Nil(t, p, "2 + 2 > 3: no permit, no error")
		one, err := s.TryAcquire(ctx, 1)
		require.NoError(t, err)
		require.NotNil(t, one)
		p, err = s.TryAcquire(ctx, 1)
		require.NoError(t, err)
		require.Nil(t, p, "full")
		free, err = s.Available(ctx)
		require.NoError(t, err)
		require.Zero(t, free)
		for i, h := range permitsOn(t, n, "try") {
			require.Equal(t, map[string]int64{two.Owner(): 2, one.Owner(): 1}, h, "node %d", i)
		}
		// The Client's Inspect reads them too, as the semaphore's quorum
		// counts them, and no lock of the name.
		states, err := c.Inspect(ctx, "try")
		require.NoError(t, err)
		holders := lock.QuorumPermits(states, s.Quorum())
		require.Len(t, holders, 2)
		for _, h := range holders {
			require.Equal(t, map[string]int64{two.Owner(): 2, one.Owner(): 1}[h.Owner], h.Count, h.Owner)
			require.Equal(t, n, h.Nodes, h.Owner)
			require.Positive(t, h.TTL, h.Owner)
		}
		_, held := lock.QuorumHolder(states, s.Quorum())
		require.False(t, held)
		for i, st := range states {
			require.Equal(t, int64(3), st.Info.Capacity, "node %d records the capacity the holders gave", i)
		}

		require.NoError(t, two.Release(ctx))
		require.ErrorIs(t, two.Release(ctx), lock.ErrNotHeld, "a permit is released once")
		select {
		case <-two.Lost():
		default:
			t.Fatal("a released permit's Lost channel is closed")
		}
		require.True(t, two.ValidUntil().IsZero())
		free, err = s.Available(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, free)
		require.NoError(t, one.Release(ctx))
		requireNoPermitsSoon(t, n, "try", time.Second)
	})
}

// TestSemaphoreNeverAboveCapacity: workers of separate Clients acquire 1 or
// 2 permits of 3 over and over; the permits held at any moment, counted in
// process and checked over the recorded history, never exceed 3.
func TestSemaphoreNeverAboveCapacity(t *testing.T) {
	const (
		capacity = 3
		workers  = 6
		rounds   = 6
	)
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		ctx := ctxFor(t, 120*time.Second)
		start := time.Now()
		var (
			inside, peak atomic.Int64
			mu           sync.Mutex
			holds        []semHold
			wg           sync.WaitGroup
			errs         = make(chan error, workers)
		)
		var clients []*lock.Client
		for w := range workers {
			c := newLockClient(t, n, lock.Options{})
			clients = append(clients, c)
			s := newSemaphore(t, c, "capacity", capacity)
			want := 1 + w%2
			wg.Go(func() {
				for range rounds {
					p, err := s.Acquire(ctx, want)
					if err != nil {
						errs <- fmt.Errorf("worker %d: %w", w, err)
						return
					}
					from := time.Since(start)
					now := inside.Add(int64(want))
					for old := peak.Load(); now > old && !peak.CompareAndSwap(old, now); old = peak.Load() {
					}
					time.Sleep(5 * time.Millisecond)
					inside.Add(-int64(want))
					to := time.Since(start)
					mu.Lock()
					holds = append(holds, semHold{from, to, int64(want)})
					mu.Unlock()
					if err := p.Release(ctx); err != nil {
						errs <- fmt.Errorf("worker %d: release: %w", w, err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		var sum lock.Stats
		for _, c := range clients {
			st := c.Stats()
			sum.Attempts += st.Attempts
			sum.WokenByPub += st.WokenByPub
			sum.WokenByTTL += st.WokenByTTL
		}
		t.Logf("%d holds in %v: %d attempts, %d wakes by a release, %d by a lease or retry delay",
			len(holds), time.Since(start), sum.Attempts, sum.WokenByPub, sum.WokenByTTL)
		require.Len(t, holds, workers*rounds)
		require.LessOrEqual(t, peak.Load(), int64(capacity), "counted in process")
		require.LessOrEqual(t, maxConcurrent(holds), int64(capacity), "checked over the history")
		require.Greater(t, maxConcurrent(holds), int64(1), "the holders did overlap: the check means something")
		requireNoPermitsSoon(t, n, "capacity", 2*time.Second)
	})
}

// semHold is one recorded hold: from the return of Acquire to the call of
// Release (inside the hold's validity), with its permits.
type semHold struct {
	from, to time.Duration
	permits  int64
}

// maxConcurrent is the most permits held at one instant over holds (a hold
// that ends at t does not overlap one that starts at t).
func maxConcurrent(holds []semHold) int64 {
	type edge struct {
		at    time.Duration
		delta int64
	}
	var edges []edge
	for _, h := range holds {
		edges = append(edges, edge{h.from, h.permits}, edge{h.to, -h.permits})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return int(a.delta - b.delta) // ends before starts at the same instant
	})
	var cur, most int64
	for _, e := range edges {
		cur += e.delta
		most = max(most, cur)
	}
	return most
}

func TestSemaphoreCheckerCatchesOvercount(t *testing.T) {
	ok := []semHold{{0, 10, 2}, {10, 20, 2}, {5, 15, 1}}
	require.Equal(t, int64(3), maxConcurrent(ok))
	bad := append(ok, semHold{12, 13, 1})
	require.Equal(t, int64(4), maxConcurrent(bad))
}

// TestSemaphoreMajorityWouldOvercount is the case that breaks a plain
// majority quorum: a semaphore of 2 permits on 3 nodes, and three Clients,
// each cut off from a different node, so that each acquisition lands on a
// different pair: {1,2}, {0,2}, {0,1}. Every node then counts 2 holders,
// within its capacity, so every node grants: each acquisition has 2 of 3
// nodes, a majority, and with a majority quorum all three would hold a
// permit at once, 3 > 2. The first part shows that on the nodes themselves;
// the second that the Semaphore, whose quorum for k = 2 on 3 nodes is 3,
// lets at most 2 through (here none: no Client reaches 3 nodes), and leaves
// nothing behind once the links heal.
func TestSemaphoreMajorityWouldOvercount(t *testing.T) {
	c := reset(t)
	ctx := ctxFor(t, 30*time.Second)
	const name = "pairs"
	type client struct {
		sem   *lock.Semaphore
		raw   []*reentrant.Node
		links []*fixture.Link
	}
	var clients []client
	for cut := range 3 {
		links, err := c.NewLinks()
		require.NoError(t, err)
		require.NoError(t, links[cut].Partition())
		lc := newLockClientOver(t, linkClients(links[:3]), lock.Options{})
		var raw []*reentrant.Node
		for _, l := range links[:3] {
			raw = append(raw, reentrant.NewNode(l.Client(), testNodeTimeout))
		}
		clients = append(clients, client{newSemaphore(t, lc, name, 2), raw, links[:3]})
	}
	require.Equal(t, 3, clients[0].sem.Quorum())

	// Part 1: the nodes alone. Each client sends its acquire to the nodes
	// it reaches; each of the three gets a majority of grants.
	key := mustSemKey(t, name)
	grants := make([]int, 3)
	for i, cl := range clients {
		var seq int64
		op := semOp(key, fmt.Sprintf("c:raw%d", i), 1, 2, 1, &seq)
		for j, node := range cl.raw {
			if j == i {
				continue // cut off: the request never arrives
			}
			a, err := node.Acquire(ctx, op)
			require.NoError(t, err)
			if a.Acquired {
				grants[i]++
			}
		}
	}
	require.Equal(t, []int{2, 2, 2}, grants, "each acquisition won a majority (2 of 3)")
	for i, h := range permitsOn(t, 3, name) {
		require.Len(t, h, 2, "node %d counts only 2 holders, within capacity", i)
	}
	t.Log("with a majority quorum, three holders of a 2-permit semaphore at once")
	for i := range 3 {
		require.NoError(t, c.Nodes[i].Direct().Del(ctx, key.Lock, key.Leases).Err())
	}

	// Part 2: the Semaphore, the same three acquisitions at once.
	var won atomic.Int64
	var wg sync.WaitGroup
	results := make([]error, 3)
	permits := make([]*lock.Permit, 3)
	for i, cl := range clients {
		wg.Go(func() {
			permits[i], results[i] = cl.sem.TryAcquire(ctx, 1)
			if permits[i] != nil {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, won.Load(), int64(2), "never above capacity")
	require.Zero(t, won.Load(), "no Client reaches the 3 nodes a grant needs")
	for i, err := range results {
		require.ErrorIs(t, err, lock.ErrNoQuorum, "client %d cannot tell: a node is cut off", i)
	}
	for _, cl := range clients {
		for _, l := range cl.links {
			require.NoError(t, l.Heal())
		}
	}
	// Healed, the failed attempts leave nothing on any node: their undo
	// reached what they took, and the full capacity is there.
	requireNoPermitsSoon(t, 3, name, 3*time.Second)
	free, err := clients[0].sem.Available(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, free)

	// Part 3: a dropped reply. The acquire runs on node 2, but its reply is
	// lost: 2 of the 3 grants the quorum needs are known, so the attempt
	// fails, and its undo, which runs on node 2 though its reply is lost
	// too, gives the permit back there.
	dropper := clients[0]
	require.NoError(t, dropper.links[2].Warm(ctx, 2))
	require.NoError(t, dropper.links[2].DropReplies())
	p, err := dropper.sem.TryAcquire(ctx, 1)
	require.Nil(t, p)
	require.ErrorIs(t, err, lock.ErrNoQuorum)
	requireNoPermitsSoon(t, 3, name, 3*time.Second)
	require.NoError(t, dropper.links[2].Heal())
	two, err := clients[1].sem.TryAcquire(ctx, 2)
	require.NoError(t, err)
	require.NotNil(t, two, "nothing of the failed attempts holds a permit")
	require.NoError(t, two.Release(ctx))
}

// TestSemaphoreWaitersWokenByRelease: a blocking Acquire sleeps while the
// semaphore is full and is woken by a release, long before the holder's
// lease (30 s) would run out; one release of 2 permits lets two waiters of
// 1 in. ctx bounds the wait only: an Acquire whose ctx ends first returns
// its error and leaves nothing on any node.
func TestSemaphoreWaitersWokenByRelease(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		ctx := ctxFor(t, 30*time.Second)
		holder := newSemaphore(t, newLockClient(t, n, lock.Options{}), "woken", 2)
		p, err := holder.Acquire(ctx, 2)
		require.NoError(t, err)

		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		waiter := newSemaphore(t, newLockClient(t, n, lock.Options{}), "woken", 2)
		q, err := waiter.Acquire(short, 1)
		require.Nil(t, q)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		for i, h := range permitsOn(t, n, "woken") {
			require.Equal(t, map[string]int64{p.Owner(): 2}, h, "node %d: the abandoned wait left nothing", i)
		}
		require.NoError(t, p.Release(ctx))

		// Two waiters as two processes (two Clients), then as one process
		// (one Client): one release must let both in either way.
		for _, shared := range []bool{false, true} {
			p, err := holder.Acquire(ctx, 2)
			require.NoError(t, err)
			one := newLockClient(t, n, lock.Options{})
			got := make(chan time.Time, 2)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var permits []*lock.Permit
			for range 2 {
				c := one
				if !shared {
					c = newLockClient(t, n, lock.Options{})
				}
				s := newSemaphore(t, c, "woken", 2)
				wg.Go(func() {
					q, err := s.Acquire(ctx, 1)
					if err != nil {
						t.Errorf("waiter: %v", err)
						return
					}
					got <- time.Now()
					mu.Lock()
					permits = append(permits, q)
					mu.Unlock()
				})
			}
			time.Sleep(300 * time.Millisecond) // both asleep on the full semaphore
			released := time.Now()
			require.NoError(t, p.Release(ctx))
			wg.Wait()
			close(got)
			for at := range got {
				// The lease is 30 s: anything under 10 s is the release's wake.
				require.Less(t, at.Sub(released), 10*time.Second, "woken by the release, not the lease")
				t.Logf("one Client: %v; waiter in %v after the release", shared, at.Sub(released))
			}
			require.Len(t, permits, 2)
			for _, q := range permits {
				require.NoError(t, q.Release(ctx))
			}
		}
		requireNoPermitsSoon(t, n, "woken", time.Second)
	})
}

// TestSemaphorePermitsComeBackAtLeaseEnd: a holder whose links are all cut
// (it can neither renew nor release: a crashed process) keeps its permits
// until its lease runs out, not before, and only its own: another holder's
// renewed permit stays held, past several leases. A waiter gets the freed
// permit at the end of that lease without a release.
func TestSemaphorePermitsComeBackAtLeaseEnd(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		c := reset(t)
		ctx := ctxFor(t, 30*time.Second)
		opts := lock.Options{Lease: shortLease, NodeTimeout: shortNodeTimeout}
		steady := newSemaphore(t, newLockClient(t, n, opts), "expiry", 2)
		kept, err := steady.Acquire(ctx, 1)
		require.NoError(t, err)

		links, err := c.NewLinks()
		require.NoError(t, err)
		crashed := newSemaphore(t, newLockClientOver(t, linkClients(links[:n]), opts), "expiry", 2)
		doomed, err := crashed.Acquire(ctx, 1)
		require.NoError(t, err)
		time.Sleep(shortLease / 2) // at least one renewal
		for _, l := range links[:n] {
			require.NoError(t, l.Partition())
		}
		cut := time.Now()

		waiter := newSemaphore(t, newLockClient(t, n, opts), "expiry", 2)
		p, err := waiter.Acquire(ctx, 1)
		require.NoError(t, err)
		in := time.Now()
		last := doomed.ValidUntil() // the doomed holder's last deadline
		select {
		case <-doomed.Lost(): // closed by its deadline, give or take this machine's timer lag
		case <-time.After(2 * time.Second):
			t.Fatal("the cut-off holder was never told of its loss")
		}
		t.Logf("cut-off holder valid until +%v after the cut; waiter in at +%v", last.Sub(cut), in.Sub(cut))
		require.True(t, in.After(last), "the permit came back %v before the holder's validity ended", last.Sub(in))
		require.Less(t, in.Sub(cut), shortLease+5*time.Second, "the permit came back at the lease's end")
		select {
		case <-kept.Lost():
			t.Fatal("the steady holder's permit went with the other's lease")
		default:
		}
		// The watchdog keeps renewed permits past several leases.
		time.Sleep(2 * shortLease)
		for _, q := range []*lock.Permit{kept, p} {
			select {
			case <-q.Lost():
				t.Fatal("a renewed permit was lost")
			default:
			}
		}
		for i, h := range permitsOn(t, n, "expiry") {
			require.Equal(t, map[string]int64{kept.Owner(): 1, p.Owner(): 1}, h, "node %d", i)
		}
		require.ErrorIs(t, doomed.Release(ctx), lock.ErrLost)
		require.NoError(t, p.Release(ctx))
		require.NoError(t, kept.Release(ctx))
	})
}

// TestSemaphoreCloseReleasesPermits: Client.Close gives back the permits
// its holders still have.
func TestSemaphoreCloseReleasesPermits(t *testing.T) {
	reset(t)
	ctx := ctxFor(t, 10*time.Second)
	c, err := lock.New(lock.Options{Nodes: cluster.Clients()[:3], NodeTimeout: testNodeTimeout})
	require.NoError(t, err)
	s := newSemaphore(t, c, "closed", 3)
	_, err = s.Acquire(ctx, 2)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	for i, h := range permitsOn(t, 3, "closed") {
		require.Empty(t, h, "node %d", i)
	}
	_, err = s.TryAcquire(ctx, 1)
	require.ErrorIs(t, err, lock.ErrClosed)
}

// TestSemaphoreFaultTolerance is what the quorum costs: on 5 nodes a
// semaphore of 2 permits needs 4 of them, so it works with one node cut
// off and not with two, where a semaphore of 1 permit (a majority, 3)
// still does.
func TestSemaphoreFaultTolerance(t *testing.T) {
	c := reset(t)
	ctx := ctxFor(t, 20*time.Second)
	lc := newLockClient(t, 5, lock.Options{})
	two, one := newSemaphore(t, lc, "tolerance-2", 2), newSemaphore(t, lc, "tolerance-1", 1)
	require.Equal(t, 4, two.Quorum())
	require.Equal(t, 3, one.Quorum())

	require.NoError(t, c.Nodes[4].Partition())
	p, err := two.TryAcquire(ctx, 2)
	require.NoError(t, err)
	require.NotNil(t, p, "one node of five down: 4 still grant")
	require.NoError(t, p.Release(ctx))

	require.NoError(t, c.Nodes[3].Partition())
	p, err = two.TryAcquire(ctx, 1)
	require.Nil(t, p)
	require.ErrorIs(t, err, lock.ErrNoQuorum, "two nodes down: 3 of the 4 needed")
	p, err = one.TryAcquire(ctx, 1)
	require.NoError(t, err)
	require.NotNil(t, p, "a majority still serves one permit")
	require.NoError(t, p.Release(ctx))
	_, err = two.Available(ctx)
	require.ErrorIs(t, err, lock.ErrNoQuorum, "Available reads the same quorum")
}
