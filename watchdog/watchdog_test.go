package watchdog_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
		w.Watch(i, 100*time.Millisecond, time.Now().Add(300*time.Millisecond), func(bool) { lost.Add(1) })
	}
	time.Sleep(1050 * time.Millisecond) // ten intervals, three leases
	calls := r.calls()
	if n := lost.Load(); n != 0 {
		t.Fatalf("%d renewed locks reported lost", n)
	}
	if len(calls) < 7 || len(calls) > 14 {
		t.Fatalf("want a renewal about every interval, locks due together sharing a call (7 to 14 calls): %v", calls)
	}
	for _, n := range calls {
		if n != 100 {
			t.Fatalf("every batch must carry all 100 locks: %v", calls)
		}
	}
}

func TestMaxBatchSplitsLargeBatches(t *testing.T) {
	r := &renewer{outcome: extendBy(time.Second)}
	w := watchdog.New(r.renew, watchdog.Options{MaxBatch: 40})
	defer w.Close()
	for i := range 100 {
		w.Watch(i, 50*time.Millisecond, time.Now().Add(time.Second), func(bool) {})
	}
	for deadline := time.Now().Add(time.Second); len(r.calls()) < 3; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 3 batches after 1s: %v", r.calls())
		}
	}
	if calls := r.calls(); !slices.Equal(calls[:3], []int{40, 40, 20}) {
		t.Fatalf("batches %v, want 40, 40, 20 first", calls)
	}
}

func TestFailingRenewalIsRetriedThenLostAtTheDeadline(t *testing.T) {
	r := &renewer{outcome: func(any) watchdog.Outcome { return watchdog.Outcome{} }}
	w := watchdog.New(r.renew, watchdog.Options{})
	defer w.Close()

	deadline := time.Now().Add(400 * time.Millisecond)
	due := deadline.Add(-20 * time.Millisecond) // Options.Early's default
	lostAt := make(chan time.Time, 1)
	var expired atomic.Bool
	const every = 100 * time.Millisecond
	w.Watch("x", every, deadline, func(exp bool) { expired.Store(exp); lostAt <- time.Now() })
	// A plain timer due at the same moment measures how late this machine
	// runs timers right now: on a loaded machine no code can report a loss
	// sooner than its runtime lets it run.
	plainAt := make(chan time.Time, 1)
	time.AfterFunc(time.Until(due), func() { plainAt <- time.Now() })
	at, plain := <-lostAt, <-plainAt
	if !expired.Load() {
		t.Fatal("a loss at the deadline must be reported as expired")
	}
	runtimeLate := max(0, plain.Sub(due))
	t.Logf("loss reported %v before the deadline; a plain timer due then ran %v late", deadline.Sub(at), runtimeLate)
	if at.Before(due.Add(-10 * time.Millisecond)) {
		t.Fatalf("reported lost %v before the deadline, more than Early", deadline.Sub(at))
	}
	// Two timers due at the same moment still run their goroutines apart,
	// by tens of milliseconds with -race on a loaded 2-core machine (26 ms
	// beyond the plain timer's lateness in one run). The bound tells a loss
	// reported by its deadline's timer from one a renewal interval late.
	if slack := runtimeLate + every; at.After(deadline.Add(slack)) {
		t.Fatalf("loss reported %v after the deadline, more than the runtime's own timer lateness (%v) and a renewal interval explain", at.Sub(deadline), runtimeLate)
	}
	// After the first renewal at 100ms, failures are retried every 10ms:
	// about 30 times before the deadline, fewer on a slow machine, never
	// hundreds (a retry taken at once, over and over, made 736,240 calls).
	if calls := r.calls(); len(calls) <= 10 || len(calls) > 100 {
		t.Fatalf("failed renewals must be retried every 10ms: %d calls", len(calls))
	}
}

func TestLostOutcomeIsReportedAtOnce(t *testing.T) {
	r := &renewer{outcome: func(any) watchdog.Outcome { return watchdog.Outcome{Lost: true} }}
	w := watchdog.New(r.renew, watchdog.Options{})
	defer w.Close()
	start := time.Now()
	lost := make(chan bool, 1)
	e := w.Watch("x", 50*time.Millisecond, time.Now().Add(10*time.Second), func(expired bool) { lost <- expired })
	if expired := <-lost; expired {
		t.Fatal("a loss the RenewFunc reported must not be reported as expired")
	}
	if took := time.Since(start); took >= time.Second {
		t.Fatalf("loss reported after %v, want at the first renewal", took)
	}
	if e.Stop() {
		t.Fatal("a lost entry must already be stopped")
	}
	if n := w.Len(); n != 0 {
		t.Fatalf("%d entries watched after the loss", n)
	}
}

func TestStopPreventsRenewalAndLoss(t *testing.T) {
	r := &renewer{outcome: extendBy(time.Second)}
	w := watchdog.New(r.renew, watchdog.Options{})
	defer w.Close()
	var lost atomic.Bool
	e := w.Watch("x", 20*time.Millisecond, time.Now().Add(60*time.Millisecond), func(bool) { lost.Store(true) })
	if !e.Stop() {
		t.Fatal("Stop of a watched entry reported false")
	}
	time.Sleep(150 * time.Millisecond)
	if calls := r.calls(); len(calls) != 0 || lost.Load() {
		t.Fatalf("after Stop: renewals %v, lost %v", calls, lost.Load())
	}
}

func TestUnrenewedEntryIsLostAtItsDeadlineUnlessExtended(t *testing.T) {
	r := &renewer{outcome: extendBy(time.Second)}
	w := watchdog.New(r.renew, watchdog.Options{})
	defer w.Close()
	deadline := time.Now().Add(100 * time.Millisecond)
	lostAt := make(chan time.Time, 1)
	e := w.Watch("x", 0, deadline, func(bool) { lostAt <- time.Now() })
	e.Extend(deadline.Add(100 * time.Millisecond))
	at := <-lostAt
	if at.Before(deadline.Add(70 * time.Millisecond)) {
		t.Fatal("the extension was ignored")
	}
	if calls := r.calls(); len(calls) != 0 {
		t.Fatalf("an entry with no interval must never be renewed: %v", calls)
	}
}

func TestCloseStopsEverything(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	r := &renewer{outcome: extendBy(time.Second)}
	w := watchdog.New(r.renew, watchdog.Options{})
	var lost atomic.Bool
	for i := range 10 {
		w.Watch(i, 10*time.Millisecond, time.Now().Add(50*time.Millisecond), func(bool) { lost.Store(true) })
	}
	w.Close()
	w.Close() // idempotent
	e := w.Watch("late", time.Millisecond, time.Now().Add(time.Millisecond), func(bool) { lost.Store(true) })
	if e.Stop() {
		t.Fatal("Watch after Close must return a stopped entry")
	}
	time.Sleep(100 * time.Millisecond)
	if lost.Load() {
		t.Fatal("a loss callback ran after Close")
	}
}

// TestIntervalCountsFromTheRoundsStart: renewals that take most of the
// interval still come once an interval, not once an interval plus the
// round's own length.
func TestIntervalCountsFromTheRoundsStart(t *testing.T) {
	const every, took = 600 * time.Millisecond, 300 * time.Millisecond
	var mu sync.Mutex
	var starts []time.Time
	slow := func(_ context.Context, values []any) []watchdog.Outcome {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		time.Sleep(took)
		return []watchdog.Outcome{{Renewed: true, ValidUntil: time.Now().Add(3 * every)}}
	}
	w := watchdog.New(slow, watchdog.Options{})
	defer w.Close()
	w.Watch("x", every, time.Now().Add(3*every), func(bool) {})
	time.Sleep(5*every + every/2) // five rounds
	mu.Lock()
	defer mu.Unlock()
	var gaps []time.Duration
	for i := 1; i < len(starts); i++ {
		gaps = append(gaps, starts[i].Sub(starts[i-1]))
	}
	if len(gaps) < 3 {
		t.Fatalf("only %d rounds in %v: %v", len(starts), 5*every+every/2, gaps)
	}
	// Counted from the round's end the gaps would be every + took (900 ms);
	// from its start, every (600 ms), plus the timers' lateness. The median
	// tells them apart with room for a loaded machine's stalls.
	slices.Sort(gaps)
	if median := gaps[len(gaps)/2]; median >= every+took/2 {
		t.Fatalf("median gap between round starts %v, want about %v (sorted gaps %v)", median, every, gaps)
	}
}
