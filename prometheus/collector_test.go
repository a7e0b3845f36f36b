package relockprom_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/relock-go/relock/lock"
	relockprom "github.com/relock-go/relock/prometheus"
)

// These tests feed the Collector's Observer the events a Client would
// report, and read them back through a registry, as a scrape would. The
// events from real Clients against Redis are tested in the integration
// module (integration/observe_test.go).

func registered(t *testing.T, opts ...relockprom.Option) (*relockprom.Collector, *prometheus.Registry) {
	t.Helper()
	c := relockprom.New(opts...)
	reg := prometheus.NewPedanticRegistry() // also checks Describe against Collect
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	return c, reg
}

// cycleEvents reports, through obs, a contended Lock that slept once and
// then won, its Unlock, a renewal batch, a node timeout and a loss.
func cycleEvents(obs *lock.Observer, name string) {
	ctx := context.Background()
	if obs.LockStart != nil {
		ctx = obs.LockStart(ctx, lock.LockStartInfo{Name: name, Lease: 30 * time.Second, Renewed: true})
	}
	obs.Attempt(ctx, lock.AttemptInfo{Name: name, Outcome: lock.AttemptContended, Agreed: 0, Nodes: 3, Quorum: 2, Elapsed: time.Millisecond})
	obs.SleepStart(ctx, lock.SleepStartInfo{Name: name, Max: time.Second})
	obs.SleepDone(ctx, lock.SleepDoneInfo{Name: name, Slept: 20 * time.Millisecond, Ended: lock.WokenByRelease})
	obs.Attempt(ctx, lock.AttemptInfo{Name: name, Outcome: lock.AttemptProbeWon, Probe: true, Agreed: 1, Nodes: 3, Quorum: 2, Elapsed: time.Millisecond})
	obs.Attempt(ctx, lock.AttemptInfo{Name: name, Outcome: lock.AttemptAcquired, Agreed: 3, Nodes: 3, Quorum: 2, Elapsed: 2 * time.Millisecond})
	obs.NodeError(ctx, lock.NodeErrorInfo{Node: 2, Addr: "10.0.0.3:6379", Op: lock.OpAcquire, Kind: lock.NodeTimeout, Err: lock.ErrNodeTimeout})
	obs.Hold(lock.HoldInfo{Name: name, Held: true})
	obs.LockDone(ctx, lock.LockDoneInfo{Name: name, Outcome: lock.LockAcquired, Attempts: 3, Sleeps: 1, LastWake: lock.WokenByRelease, Wait: 25 * time.Millisecond})
	obs.Renewal(lock.RenewalInfo{Locks: 3, Renewed: 2, Failed: 1, Nodes: 3, Answered: 3, Elapsed: time.Millisecond})
	obs.Release(context.Background(), lock.ReleaseInfo{Name: name, Outcome: lock.Released, Full: true, Reached: 3, Agreed: 3, Nodes: 3, Elapsed: time.Millisecond})
	obs.Hold(lock.HoldInfo{Name: name, Held: false})
}

func TestCollectorCountsEvents(t *testing.T) {
	c, reg := registered(t)
	obs := c.Observer()
	cycleEvents(obs, "orders:42")
	obs.LockDone(context.Background(), lock.LockDoneInfo{Name: "orders:7", Try: true, Outcome: lock.LockBusy, Attempts: 1})
	obs.Loss(lock.LossInfo{Name: "orders:42", Reason: lock.LossNotHeld})
	obs.PubSub(lock.PubSubInfo{Node: 1, Addr: "10.0.0.2:6379", Up: false})
	obs.PubSub(lock.PubSubInfo{Node: 1, Addr: "10.0.0.2:6379", Up: true})
	obs.ClockTrouble(lock.ClockTroubleInfo{Op: lock.OpRenew, Kind: lock.SlowerThanDrift})

	expected := `
# HELP relock_node_errors_total Node calls that failed or did not answer in time, by node address, operation and kind (timeout, unreachable, wrong_type, not_replicated, server, other).
# TYPE relock_node_errors_total counter
relock_node_errors_total{kind="timeout",node="10.0.0.3:6379",op="acquire"} 1
# HELP relock_pubsub_disconnects_total Times a node's working Pub/Sub connection broke (its waiters are woken: a release may have been missed).
# TYPE relock_pubsub_disconnects_total counter
relock_pubsub_disconnects_total{node="10.0.0.2:6379"} 1
# HELP relock_pubsub_reconnects_total Times a node's Pub/Sub connection worked again after failing.
# TYPE relock_pubsub_reconnects_total counter
relock_pubsub_reconnects_total{node="10.0.0.2:6379"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expected),
		"relock_node_errors_total", "relock_pubsub_disconnects_total", "relock_pubsub_reconnects_total"); err != nil {
		t.Fatal(err)
	}

	families := gather(t, reg)
	for _, tc := range []struct {
		metric string
		labels map[string]string
		want   float64
	}{
		{"relock_acquire_total", map[string]string{"outcome": "acquired"}, 1},
		{"relock_acquire_total", map[string]string{"outcome": "contended"}, 1},
		{"relock_acquire_total", map[string]string{"outcome": "probe_won"}, 1},
		{"relock_acquire_total", map[string]string{"outcome": "no_quorum"}, 0},
		{"relock_acquire_duration_seconds", map[string]string{"outcome": "acquired"}, 1},
		{"relock_quorum_agreed_nodes", nil, 2}, // the probe is left out
		{"relock_lock_calls_total", map[string]string{"call": "lock", "outcome": "acquired"}, 1},
		{"relock_lock_calls_total", map[string]string{"call": "trylock", "outcome": "busy"}, 1},
		{"relock_wait_duration_seconds", map[string]string{"call": "lock", "outcome": "acquired"}, 1},
		{"relock_sleeps_total", map[string]string{"ended": "release"}, 1},
		{"relock_waiters", nil, 0},
		{"relock_locks_held", nil, 0},
		{"relock_releases_total", map[string]string{"outcome": "released"}, 1},
		{"relock_release_duration_seconds", nil, 1},
		{"relock_renewals_total", map[string]string{"outcome": "renewed"}, 2},
		{"relock_renewals_total", map[string]string{"outcome": "failed"}, 1},
		{"relock_renewal_batch_size", nil, 1},
		{"relock_renewal_batch_duration_seconds", nil, 1},
		{"relock_locks_lost_total", map[string]string{"reason": "not_held"}, 1},
		{"relock_locks_lost_total", map[string]string{"reason": "renewal_failed"}, 0},
		{"relock_clock_trouble_total", map[string]string{"op": "renew", "kind": "slower_than_drift"}, 1},
	} {
		if got := value(t, families, tc.metric, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v; want %v", tc.metric, tc.labels, got, tc.want)
		}
	}
	// The agreed-nodes histogram holds the 0 of the contended attempt and
	// the 3 of the winning one.
	if sum := histogram(t, families, "relock_quorum_agreed_nodes", nil).GetSampleSum(); sum != 3 {
		t.Errorf("relock_quorum_agreed_nodes sum %v; want 0 + 3", sum)
	}
	if sum := histogram(t, families, "relock_wait_duration_seconds", map[string]string{"call": "lock", "outcome": "acquired"}).GetSampleSum(); sum != 0.025 {
		t.Errorf("wait sum %v; want the Lock call's 25 ms", sum)
	}
}

// Every series of a known label value is exported from the start, at
// zero, so that rate() and alerts see it before its first event; no lock
// name appears anywhere.
func TestCollectorExportsKnownSeriesAtZeroWithoutNames(t *testing.T) {
	c, reg := registered(t)
	if n := testutil.CollectAndCount(c, "relock_acquire_total"); n != 7 {
		t.Fatalf("%d relock_acquire_total series before any event; want one per outcome, 7", n)
	}
	if n := testutil.CollectAndCount(c, "relock_lock_calls_total"); n != 13 {
		t.Fatalf("%d relock_lock_calls_total series; want 6 Lock outcomes and 7 TryLock ones", n)
	}
	cycleEvents(c.Observer(), "orders:42")
	for _, mf := range gather(t, reg) {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "lock" || strings.Contains(l.GetValue(), "orders") {
					t.Fatalf("%s has a lock label %s=%q without WithLockLabel", mf.GetName(), l.GetName(), l.GetValue())
				}
			}
		}
	}
}

func TestLockLabelMapsNamesToABoundedLabel(t *testing.T) {
	c, reg := registered(t, relockprom.WithLockLabel(relockprom.Prefix(":")))
	obs := c.Observer()
	for _, name := range []string{"orders:1", "orders:2", "tenants:9"} {
		cycleEvents(obs, name)
	}
	families := gather(t, reg)
	if got := value(t, families, "relock_acquire_total", map[string]string{"outcome": "acquired", "lock": "orders"}); got != 2 {
		t.Fatalf("acquired for lock=orders: %v; want 2 (orders:1 and orders:2 share it)", got)
	}
	if got := value(t, families, "relock_lock_calls_total", map[string]string{"call": "lock", "outcome": "acquired", "lock": "tenants"}); got != 1 {
		t.Fatalf("Lock calls for lock=tenants: %v; want 1", got)
	}
	if n := testutil.CollectAndCount(c, "relock_releases_total"); n != 2 {
		t.Fatalf("%d release series; want one per prefix", n)
	}
	// Node errors are about nodes, not locks: no lock label there.
	if got := value(t, families, "relock_node_errors_total", map[string]string{"node": "10.0.0.3:6379", "op": "acquire", "kind": "timeout"}); got != 3 {
		t.Fatalf("node errors %v; want 3", got)
	}
}

// A lock name may hold any bytes; a label value must be UTF-8, or
// client_golang panics in the hook, on the Client's goroutine.
func TestLockLabelOfANameThatIsNotUTF8(t *testing.T) {
	c, reg := registered(t, relockprom.WithLockLabel(relockprom.Prefix(":")))
	cycleEvents(c.Observer(), "\xffor\xfe\xfders:42")
	families := gather(t, reg)
	if got := value(t, families, "relock_acquire_total", map[string]string{"outcome": "acquired", "lock": "\uFFFDor\uFFFDers"}); got != 1 {
		t.Fatalf("acquired for the name's label: %v; want 1", got)
	}
}

// Buckets out of order panic in New, with or without a lock label, not at
// the first event of a label value, in a hook.
func TestBucketsOutOfOrderPanicInNew(t *testing.T) {
	for _, opts := range [][]relockprom.Option{
		{relockprom.WithAcquireBuckets([]float64{2, 1})},
		{relockprom.WithWaitBuckets([]float64{1, 1})},
		{relockprom.WithWaitBuckets([]float64{2, 1}), relockprom.WithLockLabel(relockprom.Prefix(":"))},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "must increase") {
					t.Errorf("New: recovered %v; want a panic about the buckets", r)
				}
			}()
			relockprom.New(opts...)
		}()
	}
	relockprom.New(relockprom.WithWaitBuckets([]float64{.1, 1}), relockprom.WithAcquireBuckets(nil)) // fine
}

func TestPrefix(t *testing.T) {
	p := relockprom.Prefix(":")
	for name, want := range map[string]string{"orders:42": "orders", "orders": "orders", "": "", "a:b:c": "a"} {
		if got := p(name); got != want {
			t.Errorf("Prefix(%q) = %q; want %q", name, got, want)
		}
	}
}

// The hooks of a cycle cost no allocation without a lock label: children
// are resolved up front, and an observation is an atomic add.
func TestCollectorHotPathAllocatesNothing(t *testing.T) {
	c, _ := registered(t)
	obs := c.Observer()
	cycleEvents(obs, "x") // node errors make their series once
	if n := testing.AllocsPerRun(100, func() { cycleEvents(obs, "x") }); n != 0 {
		t.Fatalf("%v allocations per cycle of events; want 0", n)
	}
}

// BenchmarkCollectorCycle is the Collector's cost for the events of one
// contended Lock and its Unlock (three attempts, a sleep, a node error, a
// renewal batch), without and with a lock label.
func BenchmarkCollectorCycle(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts []relockprom.Option
	}{
		{"no-lock-label", nil},
		{"lock-label", []relockprom.Option{relockprom.WithLockLabel(relockprom.Prefix(":"))}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			obs := relockprom.New(tc.opts...).Observer()
			b.ReportAllocs()
			for b.Loop() {
				cycleEvents(obs, "orders:42")
			}
		})
	}
}

func gather(t *testing.T, reg *prometheus.Registry) []*dto.MetricFamily {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// find returns the metric of family name whose labels are exactly labels.
func find(t *testing.T, families []*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
					continue next
				}
			}
			return m
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return nil
}

// value is a counter's or gauge's value, or a histogram's sample count.
func value(t *testing.T, families []*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	m := find(t, families, name, labels)
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	t.Fatal(errors.New("unknown metric type"))
	return 0
}

func histogram(t *testing.T, families []*dto.MetricFamily, name string, labels map[string]string) *dto.Histogram {
	t.Helper()
	return find(t, families, name, labels).GetHistogram()
}
