package integration_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/lock"
)

// The observability tests run real workloads against Redis in containers
// with both adapters on the real SDKs, then read the Prometheus registry,
// the OpenTelemetry ManualReader and the in-memory span exporter: every
// metric must have the value the workload implies, and both adapters the
// same values.

// observedTimeout is a node timeout generous enough that a healthy node on
// a loaded two-core machine never misses it: these tests count node errors.
const observedTimeout = time.Second

// TestObservedContention: three Clients, two workers each, on one lock,
// by Lock, TryLock and Do. Every acquisition, call, release and wake is
// counted as the workload made it, and nothing failed.
func TestObservedContention(t *testing.T) {
	reset(t)
	o := observe(t)
	const clients, workers, rounds = 3, 2, 9
	var lcs []*lock.Client
	for range clients {
		lcs = append(lcs, newLockClient(t, 5, lock.Options{Observer: o.obs, NodeTimeout: observedTimeout}))
	}
	ctx := ctxFor(t, 2*time.Minute)
	var (
		locked, dos, tryAcquired, tryBusy atomic.Int64
		inside                            atomic.Int32
		overlaps                          atomic.Int32
		errs                              = make(chan error, clients*workers)
	)
	hold := func() {
		if inside.Add(1) != 1 {
			overlaps.Add(1)
		}
		time.Sleep(time.Millisecond)
		inside.Add(-1)
	}
	var wg sync.WaitGroup
	for _, lc := range lcs {
		for range workers {
			wg.Go(func() {
				m := lc.NewMutex("obs:contended")
				for r := range rounds {
					if err := contendOnce(ctx, lc, m, r, hold, &locked, &dos, &tryAcquired, &tryBusy); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	require.NoError(t, <-errs)
	require.Zero(t, overlaps.Load(), "two holders at once")

	prom, otel := o.prom(t), o.otel(t)
	var stats lock.Stats
	for _, lc := range lcs {
		s := lc.Stats()
		stats.Attempts += s.Attempts
		stats.Acquired += s.Acquired
		stats.WokenByPub += s.WokenByPub
		stats.WokenByTTL += s.WokenByTTL
	}
	acquired := locked.Load() + dos.Load() + tryAcquired.Load()
	t.Logf("%d Locks (%d in Do), TryLock %d acquired / %d busy; %d attempts; %d sleeps ended by a release, %d by expiry",
		locked.Load()+dos.Load(), dos.Load(), tryAcquired.Load(), tryBusy.Load(), stats.Attempts, stats.WokenByPub, stats.WokenByTTL)

	require.Equal(t, float64(locked.Load()+dos.Load()), prom.get("relock_lock_calls_total", "call", "lock", "outcome", "acquired"))
	require.Equal(t, float64(tryAcquired.Load()), prom.get("relock_lock_calls_total", "call", "trylock", "outcome", "acquired"))
	require.Equal(t, float64(tryBusy.Load()), prom.get("relock_lock_calls_total", "call", "trylock", "outcome", "busy"))
	require.Equal(t, float64(acquired+tryBusy.Load()), prom.total("relock_lock_calls_total"), "no call ended otherwise")
	require.Equal(t, float64(locked.Load()+dos.Load()), prom.get("relock_wait_duration_seconds_count", "call", "lock", "outcome", "acquired"))
	require.Equal(t, float64(acquired), prom.get("relock_acquire_total", "outcome", "acquired"))
	require.Equal(t, float64(stats.Attempts), prom.total("relock_acquire_total"))
	require.Equal(t, float64(stats.Acquired), prom.get("relock_acquire_total", "outcome", "acquired"))
	require.Equal(t, float64(acquired), prom.get("relock_releases_total", "outcome", "released"))
	require.Equal(t, float64(acquired), prom.total("relock_releases_total"), "every release freed the lock")
	require.Equal(t, float64(stats.WokenByPub), prom.get("relock_sleeps_total", "ended", "release"))
	require.Equal(t, float64(stats.WokenByTTL), prom.get("relock_sleeps_total", "ended", "expiry"))
	require.Positive(t, prom.get("relock_sleeps_total", "ended", "release"), "contended waiters are woken by releases")
	require.Zero(t, prom.get("relock_waiters"))
	require.Zero(t, prom.get("relock_locks_held"))
	require.Empty(t, prom.nonZero("relock_node_errors_total"))
	require.Empty(t, prom.nonZero("relock_locks_lost_total"))
	require.Empty(t, prom.nonZero("relock_clock_trouble_total"))
	// Every winning attempt had at least a quorum, 3 of 5.
	winners := prom.get("relock_acquire_total", "outcome", "acquired")
	require.LessOrEqual(t, prom.get("relock_quorum_agreed_nodes_bucket", "le", "2"), prom.get("relock_quorum_agreed_nodes_count")-winners)
	requireSameInOTel(t, prom, otel)

	// One span per call, Do's Lock and Unlock under Do's span, and the
	// attempts the spans count are the attempts the metrics count.
	locks, tries, unlocks, doSpans := o.spansNamed("relock.Lock"), o.spansNamed("relock.TryLock"), o.spansNamed("relock.Unlock"), o.spansNamed("relock.Do")
	require.Len(t, locks, int(locked.Load()+dos.Load()))
	require.Len(t, tries, int(tryAcquired.Load()+tryBusy.Load()))
	require.Len(t, unlocks, int(acquired))
	require.Len(t, doSpans, int(dos.Load()))
	attempts := int64(0)
	for _, s := range append(locks, tries...) {
		attempts += spanAttr(s, "relock.attempts").AsInt64()
		require.NotEqual(t, codes.Error, s.Status.Code, "%s %v", s.Name, s.Status)
	}
	require.Equal(t, int64(stats.Attempts), attempts)
	children := map[trace.SpanID]int{}
	for _, s := range append(locks, unlocks...) {
		children[s.Parent.SpanID()]++
	}
	for _, d := range doSpans {
		require.Equal(t, 2, children[d.SpanContext.SpanID()], "relock.Do has its Lock and Unlock as children")
	}
}

// contendOnce is one round of a contention worker: round r is a Do, a
// TryLock (and its Unlock when it won) or a Lock and Unlock.
func contendOnce(ctx context.Context, lc *lock.Client, m *lock.Mutex, r int, hold func(), locked, dos, tryAcquired, tryBusy *atomic.Int64) error {
	switch r % 3 {
	case 0:
		dos.Add(1)
		return lc.Do(ctx, m.Name(), func(context.Context) error { hold(); return nil })
	case 1:
		ok, err := m.TryLock(ctx)
		if err != nil || !ok {
			tryBusy.Add(1)
			return err
		}
		tryAcquired.Add(1)
	default:
		if err := m.Lock(ctx); err != nil {
			return err
		}
		locked.Add(1)
	}
	hold()
	return m.Unlock(ctx)
}

// TestObservedPausedNode: one node of five paused (a stalled process)
// during three Lock/Unlock cycles. Node errors come from that node alone,
// one per acquire attempt and one per release; every attempt in the pause
// agreed on four nodes and took longer than the drift allowance.
func TestObservedPausedNode(t *testing.T) {
	c := reset(t)
	ctx := ctxFor(t, 2*time.Minute)
	require.NoError(t, c.Warm(ctx))
	o := observe(t)
	// A 10 s lease allows 102 ms of drift; each attempt in the pause waits
	// the node timeout for the paused node once a quorum agreed.
	const timeout, lease, cycles = 500 * time.Millisecond, 10 * time.Second, 3
	lc := newLockClient(t, 5, lock.Options{Observer: o.obs, NodeTimeout: timeout, Lease: lease})
	m := lc.NewMutex("obs:paused")
	require.NoError(t, m.Lock(ctx)) // before the pause: all five agree
	require.NoError(t, m.Unlock(ctx))

	paused := c.Nodes[4]
	require.NoError(t, paused.Pause(ctx))
	t.Cleanup(func() { _ = paused.Unpause(context.Background()) })
	for range cycles {
		require.NoError(t, m.Lock(ctx))
		require.NoError(t, m.Unlock(ctx))
	}
	require.NoError(t, paused.Unpause(ctx))
	require.NoError(t, lc.Close()) // the background clean-ups are done

	prom, otel := o.prom(t), o.otel(t)
	node := paused.Link().Addr()
	attempts := prom.total("relock_acquire_total")
	t.Logf("node errors: %v", prom.nonZero("relock_node_errors_total"))
	require.Equal(t, float64(1+cycles), prom.get("relock_acquire_total", "outcome", "acquired"))
	require.Equal(t, float64(lc.Stats().Attempts), attempts)
	for _, series := range prom.nonZero("relock_node_errors_total") {
		require.Contains(t, series, `node="`+node+`"`, "a node error from a node that was not paused")
	}
	require.Equal(t, attempts-1, prom.get("relock_node_errors_total", "node", node, "op", "acquire", "kind", "timeout"),
		"one timeout per attempt in the pause")
	require.Equal(t, float64(cycles), prom.get("relock_node_errors_total", "node", node, "op", "release", "kind", "timeout"),
		"one timeout per Unlock in the pause")
	// Five nodes agreed before the pause, four in it.
	require.Equal(t, 5+4*(attempts-1), prom.get("relock_quorum_agreed_nodes_sum"))
	require.Equal(t, attempts-1, prom.get("relock_quorum_agreed_nodes_bucket", "le", "4"))
	require.GreaterOrEqual(t, prom.get("relock_clock_trouble_total", "op", "acquire", "kind", "slower_than_drift"), float64(cycles))
	require.LessOrEqual(t, prom.get("relock_clock_trouble_total", "op", "acquire", "kind", "slower_than_drift"), attempts)
	require.Zero(t, prom.get("relock_clock_trouble_total", "op", "acquire", "kind", "validity_exhausted"))
	require.Equal(t, float64(1+cycles), prom.get("relock_releases_total", "outcome", "released"))
	require.Empty(t, prom.nonZero("relock_pubsub_disconnects_total"))
	require.Empty(t, prom.nonZero("relock_locks_lost_total"))
	require.Zero(t, prom.get("relock_locks_held"))
	requireSameInOTel(t, prom, otel)

	// The failures are events on the spans of the calls they slowed.
	withNodeErrors := map[string]int{}
	for _, s := range o.spans.GetSpans() {
		for _, e := range s.Events {
			if e.Name == "relock.node_error" {
				withNodeErrors[s.Name]++
				break
			}
		}
	}
	require.Equal(t, map[string]int{"relock.Lock": cycles, "relock.Unlock": cycles}, withNodeErrors)
}

// TestObservedLoss: a renewed hold force-unlocked by an operator. The next
// renewal finds it gone: exactly one loss, for not_held, and the Unlock
// that follows reports it.
func TestObservedLoss(t *testing.T) {
	reset(t)
	o := observe(t)
	ctx := ctxFor(t, time.Minute)
	lc := newLockClient(t, 5, lock.Options{Observer: o.obs, NodeTimeout: 300 * time.Millisecond, Lease: 3 * time.Second})
	admin := newLockClient(t, 5, lock.Options{NodeTimeout: observedTimeout})
	m := lc.NewMutex("obs:lost")
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, admin.ForceUnlock(ctx, "obs:lost"))
	select {
	case <-m.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the loss was not reported within a renewal interval and some")
	}
	require.ErrorIs(t, m.Unlock(ctx), lock.ErrLost)

	prom, otel := o.prom(t), o.otel(t)
	require.Equal(t, []string{key("relock_locks_lost_total", "reason", "not_held")}, prom.nonZero("relock_locks_lost_total"))
	require.Equal(t, 1.0, prom.get("relock_locks_lost_total", "reason", "not_held"))
	require.Equal(t, 1.0, prom.get("relock_renewals_total", "outcome", "lost"))
	require.Equal(t, 1.0, prom.get("relock_releases_total", "outcome", "lost"))
	require.Equal(t, 1.0, prom.get("relock_lock_calls_total", "call", "lock", "outcome", "acquired"))
	require.Zero(t, prom.get("relock_locks_held"))
	require.Empty(t, prom.nonZero("relock_node_errors_total"))
	require.Equal(t, uint64(1), lc.Stats().Losses)
	requireSameInOTel(t, prom, otel)

	unlocks := o.spansNamed("relock.Unlock")
	require.Len(t, unlocks, 1)
	require.Equal(t, codes.Error, unlocks[0].Status.Code)
	require.Equal(t, "lost", spanAttr(unlocks[0], "relock.outcome").AsString())
}

// TestObservedPubSubReconnect: a waiter's shared Pub/Sub connection to one
// node breaks when the node stops and comes back when it starts: one
// disconnect and one reconnect of that node, and node errors from it alone.
func TestObservedPubSubReconnect(t *testing.T) {
	c := reset(t)
	o := observe(t)
	ctx := ctxFor(t, time.Minute)
	holder := newLockClient(t, 3, lock.Options{NodeTimeout: observedTimeout})
	lc := newLockClient(t, 3, lock.Options{Observer: o.obs, NodeTimeout: observedTimeout})
	h := holder.NewMutex("obs:pubsub")
	require.NoError(t, h.Lock(ctx))
	got := make(chan error, 1)
	w := lc.NewMutex("obs:pubsub")
	go func() { got <- w.Lock(ctx) }()
	waitUntil(t, 10*time.Second, "the waiter to sleep", func() bool { return lc.Stats().Sleeping == 1 })

	stopped := c.Nodes[2]
	node := stopped.Link().Addr()
	require.NoError(t, stopped.Stop(ctx))
	waitUntil(t, 10*time.Second, "the disconnect", func() bool {
		return o.prom(t).get("relock_pubsub_disconnects_total", "node", node) == 1
	})
	require.NoError(t, stopped.Start(ctx))
	waitUntil(t, 10*time.Second, "the reconnect", func() bool {
		return o.prom(t).get("relock_pubsub_reconnects_total", "node", node) == 1
	})
	require.NoError(t, h.Unlock(ctx))
	require.NoError(t, <-got)
	require.NoError(t, w.Unlock(ctx))

	prom, otel := o.prom(t), o.otel(t)
	require.Equal(t, []string{key("relock_pubsub_disconnects_total", "node", node)}, prom.nonZero("relock_pubsub_disconnects_total"))
	require.Equal(t, []string{key("relock_pubsub_reconnects_total", "node", node)}, prom.nonZero("relock_pubsub_reconnects_total"))
	for _, series := range prom.nonZero("relock_node_errors_total") {
		require.Contains(t, series, `node="`+node+`"`, "a node error from a node that was not stopped")
	}
	require.Equal(t, 1.0, prom.get("relock_lock_calls_total", "call", "lock", "outcome", "acquired"))
	require.Positive(t, prom.get("relock_sleeps_total", "ended", "release"))
	require.Zero(t, prom.get("relock_waiters"))
	requireSameInOTel(t, prom, otel)
}

// TestObservedTraceNesting: every script relock sends for a Lock, an Unlock
// and a Do runs on a context whose span is relock's span of that call, so a
// redisotel hook on the go-redis clients nests its command spans there.
func TestObservedTraceNesting(t *testing.T) {
	c := reset(t)
	o := observe(t)
	rec := &commandRecorder{}
	nodes := make([]redis.UniversalClient, 3)
	for i := range nodes {
		rdb := redis.NewClient(fixture.ClientOptions(c.Nodes[i].Link().Addr()))
		rdb.AddHook(rec)
		t.Cleanup(func() { _ = rdb.Close() })
		nodes[i] = rdb
	}
	lc := newLockClientOver(t, nodes, lock.Options{Observer: o.obs, NodeTimeout: observedTimeout})
	ctx, root := o.tracer.Start(ctxFor(t, 30*time.Second), "request")
	m := lc.NewMutex("obs:trace")
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Lock(ctx)) // a re-entry: its own span, its own scripts
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, lc.Do(ctx, "obs:trace", func(context.Context) error { return nil }))
	root.End()

	relockSpans := map[trace.SpanID]string{}
	for _, s := range o.spans.GetSpans() {
		switch s.Name {
		case "relock.Lock", "relock.Unlock":
			relockSpans[s.SpanContext.SpanID()] = s.Name
		case "relock.Do":
			require.Equal(t, root.SpanContext().SpanID(), s.Parent.SpanID(), "relock.Do under the caller's span")
		}
	}
	require.Len(t, relockSpans, 6, "3 Locks and 3 Unlocks")
	perSpan := map[trace.SpanID]int{}
	scripts := rec.scripts()
	require.NotEmpty(t, scripts)
	for _, cmd := range scripts {
		require.True(t, cmd.span.IsValid(), "%s ran on a context without a span", cmd.name)
		require.Equal(t, root.SpanContext().TraceID(), cmd.span.TraceID(), "%s ran in another trace", cmd.name)
		_, ok := relockSpans[cmd.span.SpanID()]
		require.True(t, ok, "%s ran under span %s, not one of relock's", cmd.name, cmd.span.SpanID())
		perSpan[cmd.span.SpanID()]++
	}
	for id, name := range relockSpans {
		require.GreaterOrEqual(t, perSpan[id], len(nodes), "%s: one script per node under its span", name)
	}
}
