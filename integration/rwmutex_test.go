package integration_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/reentrant"
)

// rwHold is one hold of an RWMutex as a test saw it: the handle, the mode,
// and the span in which it may act, from its acquisition to the earliest of
// its release (invoked), its loss and its last ValidUntil.
type rwHold struct {
	handle     int
	write      bool
	start, end time.Duration
}

// rwHistory records holds of one RWMutex name from many goroutines.
type rwHistory struct {
	start time.Time
	mu    sync.Mutex
	holds []rwHold
	// In-process counts, checked at each acquisition: writers and readers
	// inside now, by handle.
	readers, writers map[int]int
	violations       []string
	maxReaders       int
}

func newRWHistory() *rwHistory {
	return &rwHistory{start: time.Now(), readers: map[int]int{}, writers: map[int]int{}}
}

func (h *rwHistory) now() time.Duration { return time.Since(h.start) }

// enter records that handle got a hold (write or read) and checks, on the
// spot, that no other handle writes, nor (for a write) reads.
func (h *rwHistory) enter(handle int, write bool) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	for other := range h.writers {
		if other != handle {
			h.violations = append(h.violations, fmt.Sprintf("handle %d entered (write %v) while handle %d writes", handle, write, other))
		}
	}
	if write {
		h.writers[handle]++
		for other := range h.readers {
			if other != handle {
				h.violations = append(h.violations, fmt.Sprintf("handle %d writes while handle %d reads", handle, other))
			}
		}
	} else {
		h.readers[handle]++
		h.maxReaders = max(h.maxReaders, len(h.readers))
	}
	return h.now()
}

// leave records the end of the hold that began at start, before its
// release is sent; until is the hold's last ValidUntil.
func (h *rwHistory) leave(handle int, write bool, start time.Duration, until time.Time) {
	end := min(h.now(), until.Sub(h.start))
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.readers
	if write {
		m = h.writers
	}
	if m[handle]--; m[handle] == 0 {
		delete(m, handle)
	}
	h.holds = append(h.holds, rwHold{handle: handle, write: write, start: start, end: end})
}

// checkRWWindows reports a write window that overlaps any window of another
// handle: readers share, a writer is alone. Both ends of every window come
// from this process's monotonic clock.
func checkRWWindows(holds []rwHold) []string {
	sort.Slice(holds, func(i, j int) bool { return holds[i].start < holds[j].start })
	var out []string
	for i, a := range holds {
		for _, b := range holds[i+1:] {
			if b.start >= a.end {
				break
			}
			if a.handle != b.handle && (a.write || b.write) {
				out = append(out, fmt.Sprintf("handle %d (write %v) [%v, %v] overlaps handle %d (write %v) [%v, %v]",
					a.handle, a.write, a.start, a.end, b.handle, b.write, b.start, b.end))
			}
		}
	}
	return out
}

func TestRWMutexCheckerCatchesOverlaps(t *testing.T) {
	ok := []rwHold{{1, false, 0, 10}, {2, false, 5, 15}, {3, true, 15, 20}, {3, false, 18, 30}}
	require.Empty(t, checkRWWindows(ok))
	bad := []rwHold{{1, false, 0, 10}, {2, true, 9, 12}}
	require.Len(t, checkRWWindows(bad), 1)
	bad = []rwHold{{1, true, 0, 10}, {2, true, 3, 4}}
	require.Len(t, checkRWWindows(bad), 1)
}

// readersOn reads the read holds of name on node i directly: owner → count.
func readersOn(t *testing.T, i int, name string) map[string]string {
	t.Helper()
	key, err := reentrant.NewKey("", name)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	all, err := cluster.Nodes[i].Direct().HGetAll(ctx, key.Readers()).Result()
	require.NoError(t, err)
	out := map[string]string{}
	for k, v := range all {
		if !strings.HasSuffix(k, "/seq") {
			out[k] = v
		}
	}
	return out
}

// TestRWMutexReadersShareWritersExclude: handles of three Clients take read
// and write holds of one name at random, in a bounded loop; readers are
// seen together, and no write hold ever overlaps another handle's hold
// (counted in-process on the spot, and checked over the recorded windows).
func TestRWMutexReadersShareWritersExclude(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		ctx := ctxFor(t, 60*time.Second)
		clients := []*lock.Client{newLockClient(t, n, lock.Options{}), newLockClient(t, n, lock.Options{}), newLockClient(t, n, lock.Options{})}
		runRWMix(t, ctx, clients, "rw-mix")

		// Readers of different owners hold together, deterministically.
		a, b := clients[0].NewRWMutex("rw-share"), clients[1].NewRWMutex("rw-share")
		w := clients[2].NewRWMutex("rw-share")
		require.NoError(t, a.RLock(ctx))
		ok, err := b.TryRLock(ctx)
		require.NoError(t, err)
		require.True(t, ok, "a second reader shares")
		ok, err = w.TryLock(ctx)
		require.NoError(t, err)
		require.False(t, ok, "no writer beside readers")
		require.NoError(t, a.RUnlock(ctx))
		require.NoError(t, b.RUnlock(ctx))
		ok, err = w.TryLock(ctx)
		require.NoError(t, err)
		require.True(t, ok, "the writer once the readers left")
		ok, err = a.TryRLock(ctx)
		require.NoError(t, err)
		require.False(t, ok, "no reader beside the writer")
		require.NoError(t, w.Unlock(ctx))
		requireFree(t, n, "rw-share", time.Second)
		for i := range n {
			require.Empty(t, readersOn(t, i, "rw-share"), "node %d", i)
		}
	})
}

// runRWMix has six handles of the given Clients take read and write holds
// of name at random, in a bounded loop, and checks the history: no write
// hold beside another handle's hold (counted in-process on the spot, and
// over the recorded windows).
func runRWMix(t *testing.T, ctx context.Context, clients []*lock.Client, name string) {
	t.Helper()
	hist := newRWHistory()
	const workers, rounds = 6, 12
	stop := time.Now().Add(25 * time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		rw := clients[w%len(clients)].NewRWMutex(name)
		wg.Go(func() {
			for r := 0; r < rounds && time.Now().Before(stop); r++ {
				write := r%4 == w%4 // a quarter of the holds write
				var err error
				if write {
					err = rw.Lock(ctx)
				} else {
					err = rw.RLock(ctx)
				}
				if err != nil {
					errs <- err
					return
				}
				start := hist.enter(w, write)
				time.Sleep(time.Duration(2+rand.IntN(10)) * time.Millisecond)
				hist.leave(w, write, start, rw.ValidUntil())
				if write {
					err = rw.Unlock(ctx)
				} else {
					err = rw.RUnlock(ctx)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Empty(t, hist.violations)
	require.Empty(t, checkRWWindows(hist.holds))
	require.NotEmpty(t, hist.holds)
	t.Logf("%d holds, at most %d readers at once", len(hist.holds), hist.maxReaders)
}

// TestRWMutexMinorityFaults: the mixed workload stays correct while a
// minority of the nodes loses its replies (the scripts run there, the
// client never hears): retries count once, failed attempts are undone,
// and every hold is let go on every node afterwards.
func TestRWMutexMinorityFaults(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(itoaName(n), func(t *testing.T) {
			c := reset(t)
			require.NoError(t, c.Warm(t.Context()))
			ctx := ctxFor(t, 60*time.Second)
			clients := []*lock.Client{newLockClient(t, n, lock.Options{}), newLockClient(t, n, lock.Options{})}
			// The scripts loaded on every node before the fault.
			warm := clients[0].NewRWMutex("rw-faults")
			require.NoError(t, warm.Lock(ctx))
			require.NoError(t, warm.RLock(ctx))
			require.NoError(t, warm.Unlock(ctx))
			require.NoError(t, warm.RUnlock(ctx))
			for i := range (n - 1) / 2 {
				require.NoError(t, c.Nodes[i].DropReplies())
			}
			runRWMix(t, ctx, clients, "rw-faults")
			for i := range (n - 1) / 2 {
				require.NoError(t, c.Nodes[i].Heal())
			}
			requireFree(t, n, "rw-faults", 3*time.Second)
			requireNoReaders(t, n, "rw-faults", 3*time.Second)
		})
	}
}

// TestRWMutexWriterNotStarved: readers of eight owners keep the lock read
// without a gap (each takes its next hold before it gives up the last one,
// unless that takes long); a writer still gets it, since new readers wait
// behind it. Without the writer's mark the writer never would.
func TestRWMutexWriterNotStarved(t *testing.T) {
	forMasters(t, testWriterNotStarved)
}

func testWriterNotStarved(t *testing.T, n int) {
	reset(t)
	ctx := ctxFor(t, 40*time.Second)
	c := newLockClient(t, n, lock.Options{})
	other := newLockClient(t, n, lock.Options{})
	done := make(chan struct{})
	var reads atomic.Int64
	var wg sync.WaitGroup
	for r := range 4 {
		client := []*lock.Client{c, other}[r%2]
		pair := []*lock.RWMutex{client.NewRWMutex("rw-starve"), client.NewRWMutex("rw-starve")}
		wg.Go(func() {
			cur := pair[0]
			if cur.RLock(ctx) != nil {
				return
			}
			for i := 0; i < 2000; i++ { // bounded; ends when the writer is in
				select {
				case <-done:
					_ = cur.RUnlock(ctx)
					return
				case <-time.After(20 * time.Millisecond):
				}
				next := pair[(i+1)%2]
				tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				err := next.RLock(tctx) // the next hold before the last one goes
				cancel()
				_ = cur.RUnlock(ctx)
				if err != nil && next.RLock(ctx) != nil {
					return
				}
				reads.Add(1)
				cur = next
			}
			_ = cur.RUnlock(ctx)
		})
	}
	time.Sleep(300 * time.Millisecond) // the stream is flowing
	before := reads.Load()
	require.Positive(t, before)
	w := other.NewRWMutex("rw-starve")
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	err := w.Lock(wctx)
	close(done)
	require.NoError(t, err, "the writer was starved")
	t.Logf("writer in after %v; %d reads before it waited", time.Since(start), before)
	require.Equal(t, 1, w.WriteHoldCount())
	require.NoError(t, w.Unlock(ctx))
	wg.Wait()
}

// TestRWMutexDowngrade: a writer takes a read hold, unlocks its write hold,
// and still reads: other readers come in, writers do not.
func TestRWMutexDowngrade(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		ctx := ctxFor(t, 20*time.Second)
		c := newLockClient(t, n, lock.Options{})
		rw, other, writer := c.NewRWMutex("rw-down"), c.NewRWMutex("rw-down"), c.NewRWMutex("rw-down")
		require.NoError(t, rw.Lock(ctx))
		require.NoError(t, rw.Lock(ctx)) // reentrant
		require.NoError(t, rw.RLock(ctx))
		require.NoError(t, rw.RLock(ctx))
		require.Equal(t, 2, rw.WriteHoldCount())
		require.Equal(t, 2, rw.ReadHoldCount())
		ok, err := other.TryRLock(ctx)
		require.NoError(t, err)
		require.False(t, ok, "no reader of another owner beside a writer")

		require.NoError(t, rw.Unlock(ctx))
		require.NoError(t, rw.Unlock(ctx))
		require.Equal(t, 0, rw.WriteHoldCount())
		require.Equal(t, 2, rw.ReadHoldCount(), "it still reads")
		requireNotLost(t, rw.Lost(), "the read hold")
		for i := range n {
			require.Equal(t, map[string]string{rw.Owner(): "2"}, readersOn(t, i, "rw-down"), "node %d", i)
		}
		ok, err = other.TryRLock(ctx)
		require.NoError(t, err)
		require.True(t, ok, "readers share with the downgraded one")
		ok, err = writer.TryLock(ctx)
		require.NoError(t, err)
		require.False(t, ok, "no writer while it reads")
		require.NoError(t, other.RUnlock(ctx))
		require.NoError(t, rw.RUnlock(ctx))
		require.NoError(t, rw.RUnlock(ctx))
		require.ErrorIs(t, rw.RUnlock(ctx), lock.ErrNotHeld)
		ok, err = writer.TryLock(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, writer.Unlock(ctx))
	})
}

// TestRWMutexUpgradeRefused: a reader asking to write gets ErrUpgrade at
// once, and nothing changes on any node.
func TestRWMutexUpgradeRefused(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		ctx := ctxFor(t, 20*time.Second)
		c := newLockClient(t, n, lock.Options{})
		rw := c.NewRWMutex("rw-up")
		require.NoError(t, rw.RLock(ctx))
		start := time.Now()
		require.ErrorIs(t, rw.Lock(ctx), lock.ErrUpgrade)
		ok, err := rw.TryLock(ctx)
		require.ErrorIs(t, err, lock.ErrUpgrade)
		require.False(t, ok)
		require.ErrorIs(t, rw.LockFor(ctx, time.Second), lock.ErrUpgrade)
		require.Less(t, time.Since(start), time.Second, "refused at once")
		require.Equal(t, 0, rw.WriteHoldCount())
		require.Equal(t, 1, rw.ReadHoldCount())
		for i, h := range holdersOn(t, n, "rw-up") {
			require.Empty(t, h, "node %d: no write hold", i)
			require.Equal(t, map[string]string{rw.Owner(): "1"}, readersOn(t, i, "rw-up"), "node %d", i)
		}
		// Another reader still comes in: the refusal left no mark.
		ok, err = c.NewRWMutex("rw-up").TryRLockFor(ctx, 5*time.Second)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, rw.RUnlock(ctx))
	})
}

// TestRWMutexReaderCrashFreesOnlyItsShare: a reader cut off from every
// node stops renewing; its share ends with its own lease while another
// reader, renewed, keeps reading; a writer waits for that one alone and is
// woken by its release.
func TestRWMutexReaderCrashFreesOnlyItsShare(t *testing.T) {
	forMasters(t, testReaderCrashFreesOnlyItsShare)
}

func testReaderCrashFreesOnlyItsShare(t *testing.T, n int) {
	const lease = 3 * time.Second
	c := reset(t)
	ctx := ctxFor(t, 30*time.Second)
	links, err := c.NewLinks()
	require.NoError(t, err)
	crashing := newLockClientOver(t, linkClients(links[:n]), lock.Options{Lease: lease})
	steady := newLockClient(t, n, lock.Options{Lease: lease})
	a, b := crashing.NewRWMutex("rw-crash"), steady.NewRWMutex("rw-crash")
	require.NoError(t, a.RLock(ctx))
	require.NoError(t, b.RLock(ctx))
	for _, l := range links[:n] {
		require.NoError(t, l.Partition())
	}
	select {
	case <-a.Lost():
	case <-time.After(2 * lease):
		t.Fatal("the cut-off reader was not told of its loss")
	}
	// a's share ends on the nodes at its own lease's end, b's does not:
	// past that, a writer finds b alone.
	time.Sleep(lease / 2)
	w := newLockClient(t, n, lock.Options{Lease: lease}).NewRWMutex("rw-crash")
	ok, err := w.TryLock(ctx)
	require.NoError(t, err)
	require.False(t, ok, "the renewed reader still reads")
	for i := range n {
		require.NotContains(t, readersOn(t, i, "rw-crash"), a.Owner(), "node %d: the crashed reader's share is gone", i)
		require.Contains(t, readersOn(t, i, "rw-crash"), b.Owner(), "node %d", i)
	}
	got := make(chan error, 1)
	go func() { got <- w.Lock(ctx) }()
	time.Sleep(3 * lease) // several of b's renewals: still no writer
	select {
	case err := <-got:
		t.Fatalf("the writer came in beside a renewed reader: %v", err)
	default:
	}
	released := time.Now()
	require.NoError(t, b.RUnlock(ctx))
	select {
	case err := <-got:
		require.NoError(t, err)
		t.Logf("writer in %v after the last reader's release", time.Since(released))
		require.Less(t, time.Since(released), lease, "woken by the release")
	case <-time.After(5 * time.Second):
		t.Fatal("the writer was not woken by the last reader's release")
	}
	require.NoError(t, w.Unlock(ctx))
	require.ErrorIs(t, a.RUnlock(ctx), lock.ErrLost)
}

// TestRWMutexWakeups: a write release wakes every waiting reader, across
// Clients and within one; the last read release wakes a waiting writer.
// The lease is long, so coming in well before it ends means woken by the
// release, not by expiry.
func TestRWMutexWakeups(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		ctx := ctxFor(t, 40*time.Second)
		opts := lock.Options{Lease: 20 * time.Second}
		c1, c2 := newLockClient(t, n, opts), newLockClient(t, n, opts)
		writer := c1.NewRWMutex("rw-wake")
		require.NoError(t, writer.Lock(ctx))
		readers := []*lock.RWMutex{c1.NewRWMutex("rw-wake"), c1.NewRWMutex("rw-wake"), c2.NewRWMutex("rw-wake"), c2.NewRWMutex("rw-wake")}
		in := make(chan time.Time, len(readers))
		for _, r := range readers {
			go func() {
				if err := r.RLock(ctx); err == nil {
					in <- time.Now()
				} else {
					in <- time.Time{}
				}
			}()
		}
		time.Sleep(500 * time.Millisecond) // every reader waits
		released := time.Now()
		require.NoError(t, writer.Unlock(ctx))
		for range readers {
			select {
			case at := <-in:
				require.False(t, at.IsZero(), "a reader failed")
				require.Less(t, at.Sub(released), 5*time.Second, "woken by the release")
			case <-time.After(10 * time.Second):
				t.Fatal("a reader was not woken by the write release")
			}
		}

		// Now the readers hold: a writer waits for the last of them.
		w2 := c2.NewRWMutex("rw-wake")
		got := make(chan error, 1)
		go func() { got <- w2.Lock(ctx) }()
		time.Sleep(500 * time.Millisecond)
		for _, r := range readers[1:] {
			require.NoError(t, r.RUnlock(ctx))
		}
		select {
		case err := <-got:
			t.Fatalf("the writer came in beside a reader: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
		released = time.Now()
		require.NoError(t, readers[0].RUnlock(ctx))
		select {
		case err := <-got:
			require.NoError(t, err)
			require.Less(t, time.Since(released), 5*time.Second, "woken by the release")
		case <-time.After(10 * time.Second):
			t.Fatal("the writer was not woken by the last read release")
		}
		require.NoError(t, w2.Unlock(ctx))
	})
}

// TestRWMutexWaitingWriterHoldsNewReadersBack: while a writer waits, new
// readers of other owners wait too (owners already reading re-enter); a
// writer that gives up takes its mark back, and a TryLock leaves none.
func TestRWMutexWaitingWriterHoldsNewReadersBack(t *testing.T) {
	forMasters(t, func(t *testing.T, n int) {
		reset(t)
		ctx := ctxFor(t, 30*time.Second)
		c := newLockClient(t, n, lock.Options{})
		reader, newcomer, writer := c.NewRWMutex("rw-mark"), c.NewRWMutex("rw-mark"), c.NewRWMutex("rw-mark")
		require.NoError(t, reader.RLock(ctx))

		ok, err := writer.TryLock(ctx)
		require.NoError(t, err)
		require.False(t, ok)
		ok, err = newcomer.TryRLock(ctx)
		require.NoError(t, err)
		require.True(t, ok, "a TryLock that failed leaves no mark")
		require.NoError(t, newcomer.RUnlock(ctx))

		wctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		waited := make(chan error, 1)
		go func() { waited <- writer.Lock(wctx) }()
		time.Sleep(500 * time.Millisecond)
		ok, err = newcomer.TryRLock(ctx)
		require.NoError(t, err)
		require.False(t, ok, "a new reader waits behind the waiting writer")
		require.NoError(t, reader.RLock(ctx), "a reader re-enters")
		require.NoError(t, reader.RUnlock(ctx))

		// A new reader that waits is let in once the writer gives up.
		in := make(chan error, 1)
		go func() { in <- newcomer.RLock(ctx) }()
		require.ErrorIs(t, <-waited, context.DeadlineExceeded)
		select {
		case err := <-in:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("the waiting reader was not let in after the writer gave up")
		}
		key, _ := reentrant.NewKey("", "rw-mark")
		require.Eventually(t, func() bool {
			for i := range n {
				if cluster.Nodes[i].Direct().Exists(ctx, key.WriterWaiting()).Val() != 0 {
					return false
				}
			}
			return true
		}, 2*time.Second, 20*time.Millisecond, "a mark left behind")
		require.NoError(t, newcomer.RUnlock(ctx))
		require.NoError(t, reader.RUnlock(ctx))
	})
}

// TestRWMutexBadInput: bad input is a typed error and changes nothing.
func TestRWMutexBadInput(t *testing.T) {
	reset(t)
	ctx := ctxFor(t, 10*time.Second)
	c := newLockClient(t, 3, lock.Options{})
	empty := c.NewRWMutex("")
	require.ErrorIs(t, empty.RLock(ctx), lock.ErrInvalidArgument)
	require.ErrorIs(t, empty.Lock(ctx), lock.ErrInvalidArgument)
	require.ErrorIs(t, empty.RUnlock(ctx), lock.ErrInvalidArgument)
	rw := c.NewRWMutex("rw-bad")
	require.ErrorIs(t, rw.RLockFor(ctx, 0), lock.ErrInvalidArgument)
	require.ErrorIs(t, rw.LockFor(ctx, -time.Second), lock.ErrInvalidArgument)
	require.ErrorIs(t, rw.RUnlock(ctx), lock.ErrNotHeld)
	require.ErrorIs(t, rw.Unlock(ctx), lock.ErrNotHeld)
	requireFree(t, 3, "rw-bad", 0)
	for i := range 3 {
		require.Empty(t, readersOn(t, i, "rw-bad"))
	}
	// A key of another type where the readers live: an error naming it.
	key, _ := reentrant.NewKey("", "rw-bad")
	require.NoError(t, cluster.Nodes[0].Direct().Set(ctx, key.Readers(), "x", 0).Err())
	var wt *reentrant.WrongTypeError
	_, err := c.NewRWMutex("rw-bad").TryRLock(ctx)
	if err != nil { // two nodes of three still agree: the read may succeed
		require.True(t, errors.As(err, &wt) || errors.Is(err, lock.ErrNoQuorum), "%v", err)
	}
	one := newLockClient(t, 1, lock.Options{})
	_, err = one.NewRWMutex("rw-bad").TryRLock(ctx)
	require.ErrorAs(t, err, &wt)
	require.Equal(t, key.Readers(), wt.Key)
	require.Equal(t, "x", cluster.Nodes[0].Direct().Get(ctx, key.Readers()).Val(), "left untouched")
}

// requireNoReaders asserts that no node of the first n has a read hold of
// name, waiting up to wait for background clean-ups to land.
func requireNoReaders(t *testing.T, n int, name string, wait time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		for i := range n {
			if len(readersOn(t, i, name)) > 0 {
				return false
			}
		}
		return true
	}, wait, 20*time.Millisecond, "read holds left behind: %v", func() []map[string]string {
		out := make([]map[string]string, n)
		for i := range n {
			out[i] = readersOn(t, i, name)
		}
		return out
	}())
}

// TestRWMutexLostRepliesCountOnce: with one node losing its replies the
// read and write holds count right on every node (the scripts run there,
// retried calls count once); with a majority losing them, a failed read
// leaves nothing behind.
func TestRWMutexLostRepliesCountOnce(t *testing.T) {
	c := reset(t)
	require.NoError(t, c.Warm(t.Context()))
	ctx := ctxFor(t, 30*time.Second)
	rw := newLockClient(t, 3, lock.Options{}).NewRWMutex("rw-lost-replies")
	require.NoError(t, rw.RLock(ctx)) // the scripts loaded on every node
	require.NoError(t, rw.RUnlock(ctx))

	require.NoError(t, c.Nodes[0].DropReplies())
	require.NoError(t, rw.RLock(ctx))
	require.NoError(t, rw.RLock(ctx))
	require.NoError(t, rw.RUnlock(ctx))
	require.NoError(t, rw.RLock(ctx))
	require.NoError(t, c.Nodes[0].Heal())
	for i := range 3 {
		require.Equal(t, map[string]string{rw.Owner(): "2"}, readersOn(t, i, "rw-lost-replies"), "node %d", i)
	}
	require.NoError(t, rw.RUnlock(ctx))
	require.NoError(t, rw.RUnlock(ctx))
	requireNoReaders(t, 3, "rw-lost-replies", 2*time.Second)

	require.NoError(t, c.Warm(ctx))
	require.NoError(t, c.Nodes[0].DropReplies())
	require.NoError(t, c.Nodes[1].DropReplies())
	ok, err := rw.TryRLock(ctx)
	require.False(t, ok)
	require.ErrorIs(t, err, lock.ErrNoQuorum)
	require.NoError(t, c.Nodes[0].Heal())
	require.NoError(t, c.Nodes[1].Heal())
	requireNoReaders(t, 3, "rw-lost-replies", 3*time.Second)

	// A writer whose attempt a minority's reader refuses takes back what it
	// took elsewhere.
	links, err := c.NewLinks()
	require.NoError(t, err)
	require.NoError(t, links[2].Partition())
	reader := newLockClientOver(t, linkClients(links[:3]), lock.Options{}).NewRWMutex("rw-lost-replies")
	require.NoError(t, reader.RLock(ctx)) // on nodes 0 and 1 only
	require.NoError(t, links[2].Heal())
	ok, err = rw.TryLock(ctx)
	require.NoError(t, err)
	require.False(t, ok)
	requireFree(t, 3, "rw-lost-replies", 2*time.Second)
	require.NoError(t, reader.RUnlock(ctx))
	requireNoReaders(t, 3, "rw-lost-replies", 2*time.Second)
	require.NoError(t, rw.Lock(ctx))
	requireCounts(t, []int{0, 1, 2}, "rw-lost-replies", rw.Owner(), 1)
	require.NoError(t, rw.Unlock(ctx))
	requireFree(t, 3, "rw-lost-replies", time.Second)
}

// TestRWMutexInspectShowsReaders: Inspect reads an RWMutex's readers on
// every node (each owner's read count and its own lease), beside its
// writer's hold at the lock hash, and QuorumReaders finds those on a quorum;
// a reader whose lease ended is left out, and a released one is gone.
func TestRWMutexInspectShowsReaders(t *testing.T) {
	forMasters(t, testInspectShowsReaders)
}

func testInspectShowsReaders(t *testing.T, n int) {
	const lease = 10 * time.Second
	reset(t)
	ctx := ctxFor(t, 30*time.Second)
	c := newLockClient(t, n, lock.Options{Lease: lease})
	const name = "rw-inspect"
	a, b := c.NewRWMutex(name), c.NewRWMutex(name)
	require.NoError(t, a.RLock(ctx))
	require.NoError(t, a.RLock(ctx)) // count 2
	require.NoError(t, b.RLock(ctx))

	states, err := c.Inspect(ctx, name)
	require.NoError(t, err)
	require.Len(t, states, n)
	for _, s := range states {
		require.NoError(t, s.Err)
		require.Empty(t, s.Info.Holders, "node %d: readers only, no writer", s.Node)
		require.Len(t, s.Info.Readers, 2, "node %d", s.Node)
		require.EqualValues(t, 2, s.Info.Readers[a.Owner()].Count, "node %d", s.Node)
		require.EqualValues(t, 1, s.Info.Readers[b.Owner()].Count, "node %d", s.Node)
		for owner, r := range s.Info.Readers {
			require.True(t, r.TTL > lease/2 && r.TTL <= lease, "node %d: %s's lease %v", s.Node, owner, r.TTL)
		}
	}
	_, quorum := c.Nodes()
	_, held := lock.QuorumHolder(states, quorum)
	require.False(t, held, "readers are not a writer")
	readers := lock.QuorumReaders(states, quorum)
	require.Len(t, readers, 2)
	for _, r := range readers {
		require.Equal(t, n, r.Nodes)
	}

	// A reader whose lease has ended is left out, though its entry is
	// still on the node until a script drops it.
	direct := cluster.Direct()[0]
	key, err := reentrant.NewKey("", name)
	require.NoError(t, err)
	require.NoError(t, direct.ZAdd(ctx, key.ReadLeases(), redis.Z{Score: 1, Member: "gone:reader"}).Err())
	require.NoError(t, direct.HSet(ctx, key.Readers(), "gone:reader", 1).Err())
	states, err = c.Inspect(ctx, name)
	require.NoError(t, err)
	require.NotContains(t, states[0].Info.Readers, "gone:reader")

	require.NoError(t, a.RUnlock(ctx))
	require.NoError(t, a.RUnlock(ctx))
	states, err = c.Inspect(ctx, name)
	require.NoError(t, err)
	for _, s := range states {
		require.NotContains(t, s.Info.Readers, a.Owner(), "node %d: released", s.Node)
		require.Contains(t, s.Info.Readers, b.Owner(), "node %d", s.Node)
	}
	require.NoError(t, b.RUnlock(ctx))
}
