package watchdog_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/watchdog"
)

// These tests drive the scheduler with a RenewFunc written here: what is
// tested is scheduling, batching and loss timing, not Redis.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// renewer records each batch and answers with a configurable outcome.
type renewer struct {
	mu      sync.Mutex
	batches []int
	outcome func(v any) watchdog.Outcome
}

func (r *renewer) renew(_ context.Context, values []any) []watchdog.Outcome {
	r.mu.Lock()
	r.batches = append(r.batches, len(values))
	f := r.outcome
	r.mu.Unlock()
	out := make([]watchdog.Outcome, len(values))
	for i, v := range values {
		out[i] = f(v)
	}
	return out
}

func (r *renewer) calls() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.batches...)
}

func extendBy(d time.Duration) func(any) watchdog.Outcome {
	return func(any) watchdog.Outcome {
		return watchdog.Outcome{Renewed: true, ValidUntil: time.Now().Add(d)}
	}
}

func TestRenewsInBatchesEveryInterval(t *testing.T) {
	r := &renewer{outcome: extendBy(300 * time.Millisecond)}
	w := watchdog.New(r.renew, watchdog.Options{})
	defer w.Close()

	var lost atomic.Int32
	for i := range 100 {
		w.Watch(i, 100*time.Millisecond, time.Now().Add(300*time.Millisecond), func() { lost.Add(1) })
	}
	time.Sleep(1050 * time.Millisecond) // ten intervals, three leases
	calls := r.calls()
	require.Zero(t, lost.Load(), "renewed locks must not be reported lost")
	require.GreaterOrEqual(t, len(calls), 7, "renewed about every interval: %v", calls)
	require.LessOrEqual(t, len(calls), 14, "locks due together share a call: %v", calls)
	for _, n := range calls {
		require.Equal(t, 100, n, "every batch carries all 100 locks: %v", calls)
	}
}

func TestMaxBatchSplitsLargeBatches(t *testing.T) {
	r := &renewer{outcome: extendBy(time.Second)}
	w := watchdog.New(r.renew, watchdog.Options{MaxBatch: 40})
	defer w.Close()
	for i := range 100 {
		w.Watch(i, 50*time.Millisecond, time.Now().Add(time.Second), func() {})
	}
	require.Eventually(t, func() bool { return len(r.calls()) >= 3 }, time.Second, 5*time.Millisecond)
	calls := r.calls()
	require.Equal(t, []int{40, 40, 20}, calls[:3])
}

func TestFailingRenewalIsRetriedThenLostAtTheDeadline(t *testing.T) {
	r := &renewer{outcome: func(any) watchdog.Outcome { return watchdog.Outcome{} }}
	w := watchdog.New(r.renew, watchdog.Options{})
	defer w.Close()

	deadline := time.Now().Add(400 * time.Millisecond)
	lostAt := make(chan time.Time, 1)
	w.Watch("x", 100*time.Millisecond, deadline, func() { lostAt <- time.Now() })
	at := <-lostAt
	// Reported Early (20ms) before the deadline, give or take timer latency,
	// and never after it.
	require.False(t, at.Before(deadline.Add(-30*time.Millisecond)), "reported lost %v before the deadline", deadline.Sub(at))
	require.True(t, at.Before(deadline), "loss reported %v after the deadline", at.Sub(deadline))
	// After the first renewal at 100ms, failures are retried every 10ms.
	require.Greater(t, len(r.calls()), 10, "failed renewals must be retried: %v", r.calls())
}

func TestLostOutcomeIsReportedAtOnce(t *testing.T) {
	r := &renewer{outcome: func(any) watchdog.Outcome { return watchdog.Outcome{Lost: true} }}
	w := watchdog.New(r.renew, watchdog.Options{})
	defer w.Close()
	start := time.Now()
	lost := make(chan struct{})
	e := w.Watch("x", 50*time.Millisecond, time.Now().Add(10*time.Second), func() { close(lost) })
	<-lost
	require.Less(t, time.Since(start), time.Second)
	require.False(t, e.Stop(), "a lost entry is already stopped")
	require.Zero(t, w.Len())
}

func TestStopPreventsRenewalAndLoss(t *testing.T) {
	r := &renewer{outcome: extendBy(time.Second)}
	w := watchdog.New(r.renew, watchdog.Options{})
	defer w.Close()
	var lost atomic.Bool
	e := w.Watch("x", 20*time.Millisecond, time.Now().Add(60*time.Millisecond), func() { lost.Store(true) })
	require.True(t, e.Stop())
	time.Sleep(150 * time.Millisecond)
	require.Empty(t, r.calls())
	require.False(t, lost.Load())
}

func TestUnrenewedEntryIsLostAtItsDeadlineUnlessExtended(t *testing.T) {
	r := &renewer{outcome: extendBy(time.Second)}
	w := watchdog.New(r.renew, watchdog.Options{})
	defer w.Close()
	deadline := time.Now().Add(100 * time.Millisecond)
	lostAt := make(chan time.Time, 1)
	e := w.Watch("x", 0, deadline, func() { lostAt <- time.Now() })
	e.Extend(deadline.Add(100 * time.Millisecond))
	at := <-lostAt
	require.False(t, at.Before(deadline.Add(70*time.Millisecond)), "the extension was ignored")
	require.Empty(t, r.calls(), "an entry with no interval is never renewed")
}

func TestCloseStopsEverything(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	r := &renewer{outcome: extendBy(time.Second)}
	w := watchdog.New(r.renew, watchdog.Options{})
	var lost atomic.Bool
	for i := range 10 {
		w.Watch(i, 10*time.Millisecond, time.Now().Add(50*time.Millisecond), func() { lost.Store(true) })
	}
	w.Close()
	w.Close() // idempotent
	e := w.Watch("late", time.Millisecond, time.Now().Add(time.Millisecond), func() { lost.Store(true) })
	require.False(t, e.Stop(), "Watch after Close returns a stopped entry")
	time.Sleep(100 * time.Millisecond)
	require.False(t, lost.Load(), "no loss callback after Close")
}
