// Package relockprom exports relock's events as Prometheus metrics: a
// prometheus.Collector fed by a lock.Observer.
//
//	metrics := relockprom.New()
//	prometheus.MustRegister(metrics)
//	c, err := lock.New(lock.Options{Nodes: nodes, Observer: metrics.Observer()})
//
// It lives in its own module, github.com/relock-go/relock/prometheus, so that
// the library's module requires no metrics SDK (as go-redis ships
// extra/redisprometheus). Its package name is relockprom, not prometheus,
// so that it never shadows client_golang's package in the files that use
// both.
//
// Metrics carry no lock-name label by default: names are unbounded (one per
// order, per tenant), and a label per name would grow the series without
// end. WithLockLabel maps names to a bounded set of label values for those
// who want one. One Collector may serve several Clients; to tell them apart,
// register it through prometheus.WrapRegistererWith with a constant label.
package relockprom

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relock-go/relock/lock"
)

// Collector is a prometheus.Collector of relock's metrics, fed by the
// lock.Observer that Observer returns. It is safe for concurrent use.
type Collector struct {
	observer lock.Observer
	all      []prometheus.Collector

	acquires        *family[lock.AttemptOutcome, prometheus.Counter]
	acquireDuration *family[lock.AttemptOutcome, prometheus.Observer]
	agreed          prometheus.Histogram
	lockCalls       *family[callKey, prometheus.Counter]
	waitDuration    *family[callKey, prometheus.Observer]
	sleeps          *family[lock.WaitEnd, prometheus.Counter]
	waiters         *family[none, prometheus.Gauge]
	held            *family[none, prometheus.Gauge]
	releases        *family[lock.ReleaseOutcome, prometheus.Counter]
	releaseDuration prometheus.Histogram
	renewals        *family[renewalOutcome, prometheus.Counter]
	renewalDuration prometheus.Histogram
	renewalSize     prometheus.Histogram
	losses          *family[lock.LossReason, prometheus.Counter]
	nodeErrors      *prometheus.CounterVec
	disconnects     *prometheus.CounterVec
	reconnects      *prometheus.CounterVec
	clockTrouble    *family[clockKey, prometheus.Counter]
}

// Option configures a Collector.
type Option func(*config)

type config struct {
	lockLabel       func(name string) string
	acquireBuckets  []float64
	waitBuckets     []float64
	renewalBuckets  []float64
	batchSizeBucket []float64
}

// WithLockLabel adds a "lock" label to the metrics about one lock (attempts,
// calls, waits, sleeps, waiters, holds, releases, losses), valued f(name).
// f must map the unbounded set of lock names to a small, bounded one (a
// prefix such as "orders" for "orders:42", a tenant class): every distinct
// value is a set of time series kept for the life of the process. A value
// that is not valid UTF-8 (names may hold any bytes) has each run of bytes
// that is not replaced by U+FFFD, as Prometheus requires.
func WithLockLabel(f func(name string) string) Option {
	return func(c *config) { c.lockLabel = f }
}

// Prefix returns a lock labeller for WithLockLabel: the name up to the
// first sep ("orders" for "orders:42" with sep ":"), or the whole name
// when it has no sep. It is bounded only if your names' prefixes are.
func Prefix(sep string) func(name string) string {
	return func(name string) string {
		prefix, _, _ := strings.Cut(name, sep)
		return prefix
	}
}

// WithAcquireBuckets sets the buckets, in seconds, of
// relock_acquire_duration_seconds and relock_release_duration_seconds
// (default 0.5 ms to 2.5 s: one round trip to every node).
func WithAcquireBuckets(b []float64) Option {
	return func(c *config) { c.acquireBuckets = b }
}

// WithWaitBuckets sets the buckets, in seconds, of
// relock_wait_duration_seconds (default 1 ms to 60 s: a whole Lock call,
// waits included).
func WithWaitBuckets(b []float64) Option {
	return func(c *config) { c.waitBuckets = b }
}

// Default buckets.
var (
	// DefaultAcquireBuckets span one round trip to the nodes, from a
	// loopback's to a far node's timeout.
	DefaultAcquireBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
	// DefaultWaitBuckets span a Lock call, from an uncontended one to a
	// wait of a minute.
	DefaultWaitBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
)

// Label values of the metrics this package adds to relock's own values.
const (
	callLock    = "lock"
	callTryLock = "trylock"
)

type (
	none    struct{}
	callKey struct {
		call    string
		outcome lock.LockOutcome
	}
	clockKey struct {
		op   lock.NodeOp
		kind lock.ClockTroubleKind
	}
	renewalOutcome string
)

const (
	renewalRenewed renewalOutcome = "renewed"
	renewalFailed  renewalOutcome = "failed"
	renewalLost    renewalOutcome = "lost"
	renewalSkipped renewalOutcome = "skipped"
)

// New returns a Collector; register it, and give its Observer to the
// Clients to observe. New panics when the buckets given by an option are not
// in increasing order, as client_golang does when it makes a histogram:
// with a lock label it makes them at the first event of each label value,
// in a hook, on a Client's goroutine, and New is the place to find out.
func New(opts ...Option) *Collector {
	cfg := config{
		acquireBuckets:  DefaultAcquireBuckets,
		waitBuckets:     DefaultWaitBuckets,
		renewalBuckets:  DefaultAcquireBuckets,
		batchSizeBucket: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500},
	}
	for _, o := range opts {
		o(&cfg)
	}
	mustIncrease("WithAcquireBuckets", cfg.acquireBuckets)
	mustIncrease("WithWaitBuckets", cfg.waitBuckets)
	byLock := cfg.lockLabel
	c := &Collector{}

	c.acquires = newFamily(c, byLock, counters("relock_acquire_total",
		"Acquire attempts sent to the nodes (a quorum round, or a probe of the tie-breaker node), by outcome."), []string{"outcome"},
		label[lock.AttemptOutcome], attemptOutcomes...)
	c.acquireDuration = newFamily(c, byLock, histograms("relock_acquire_duration_seconds",
		"Duration of one acquire attempt, from sending to the last answer waited for, by outcome.", cfg.acquireBuckets), []string{"outcome"},
		label[lock.AttemptOutcome], attemptOutcomes...)
	c.agreed = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "relock_quorum_agreed_nodes",
		Help:    "Nodes that took each acquire attempt (probes of the tie-breaker left out): a healthy N-node attempt that wins has N.",
		Buckets: prometheus.LinearBuckets(0, 1, 10)})
	c.all = append(c.all, c.agreed)

	calls := []callKey{}
	for _, call := range []string{callLock, callTryLock} {
		for _, o := range []lock.LockOutcome{lock.LockAcquired, lock.LockBusy, lock.LockTimedOut,
			lock.LockNoQuorum, lock.LockLost, lock.LockClosed, lock.LockFailed} {
			if o != lock.LockBusy || call == callTryLock {
				calls = append(calls, callKey{call, o})
			}
		}
	}
	callLabels := func(k callKey) []string { return []string{k.call, string(k.outcome)} }
	c.lockCalls = newFamily(c, byLock, counters("relock_lock_calls_total",
		"Lock and TryLock calls, by call (lock, trylock) and outcome."), []string{"call", "outcome"}, callLabels, calls...)
	c.waitDuration = newFamily(c, byLock, histograms("relock_wait_duration_seconds",
		"Duration of Lock and TryLock calls, from the call to its return: the time a caller waited for the lock.", cfg.waitBuckets), []string{"call", "outcome"}, callLabels, calls...)
	c.sleeps = newFamily(c, byLock, counters("relock_sleeps_total",
		"Sleeps of waiting Lock calls between attempts, by how they ended: release (woken by the holder's release), expiry (the holder's lease or a retry delay ran out), timeout (the caller's ctx ended), closed."), []string{"ended"},
		label[lock.WaitEnd], lock.WokenByRelease, lock.WokenByExpiry, lock.WaitTimedOut, lock.WaitClosed)
	c.waiters = newFamily(c, byLock, gauges("relock_waiters",
		"Lock calls asleep right now, waiting for the holder's release or lease."), nil, noLabels, none{})
	c.held = newFamily(c, byLock, gauges("relock_locks_held",
		"Handles holding a lock right now (a lost hold counts until its handle unlocks it)."), nil, noLabels, none{})
	c.releases = newFamily(c, byLock, counters("relock_releases_total",
		"Releases, by outcome: each Unlock, and each handle released at once when its hold context ended or its Client closed."), []string{"outcome"},
		label[lock.ReleaseOutcome], lock.Released, lock.ReleaseStillHeld, lock.ReleaseLost, lock.ReleaseNoQuorum, lock.ReleaseNotHeld, lock.ReleaseClosed)
	c.releaseDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "relock_release_duration_seconds",
		Help: "Duration of releases that were sent to the nodes.", Buckets: cfg.acquireBuckets})
	c.all = append(c.all, c.releaseDuration)

	c.renewals = newFamily(c, nil, counters("relock_renewals_total",
		"Watchdog renewals of held locks, by outcome: renewed, failed (retried before the deadline), lost (a quorum said not held), skipped (the owner had an operation on the wire)."), []string{"outcome"},
		label[renewalOutcome], renewalRenewed, renewalFailed, renewalLost, renewalSkipped)
	c.renewalDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "relock_renewal_batch_duration_seconds",
		Help: "Duration of one batch of watchdog renewals: one pipelined round trip to every node.", Buckets: cfg.renewalBuckets})
	c.renewalSize = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "relock_renewal_batch_size",
		Help: "Locks renewed together in one batch.", Buckets: cfg.batchSizeBucket})
	c.all = append(c.all, c.renewalDuration, c.renewalSize)

	c.losses = newFamily(c, byLock, counters("relock_locks_lost_total",
		"Holds reported lost (Mutex.Lost closed), by reason: not_held (a quorum of nodes no longer has it), renewal_failed (renewals could not reach a quorum before the deadline), lease_expired (an explicit lease ran out before Unlock)."), []string{"reason"},
		label[lock.LossReason], lock.LossNotHeld, lock.LossRenewalFailed, lock.LossLeaseExpired)

	c.nodeErrors = counterVec("relock_node_errors_total",
		"Node calls that failed or did not answer in time, by node address, operation and kind (timeout, unreachable, wrong_type, not_replicated, server, other).", "node", "op", "kind")
	c.disconnects = counterVec("relock_pubsub_disconnects_total",
		"Times a node's working Pub/Sub connection broke (its waiters are woken: a release may have been missed).", "node")
	c.reconnects = counterVec("relock_pubsub_reconnects_total",
		"Times a node's Pub/Sub connection worked again after failing.", "node")
	c.all = append(c.all, c.nodeErrors, c.disconnects, c.reconnects)

	var clock []clockKey
	for _, op := range []lock.NodeOp{lock.OpAcquire, lock.OpRenew} {
		for _, k := range []lock.ClockTroubleKind{lock.ValidityExhausted, lock.SlowerThanDrift} {
			clock = append(clock, clockKey{op, k})
		}
	}
	c.clockTrouble = newFamily(c, nil, counters("relock_clock_trouble_total",
		"Operations whose timing undermines the validity rule, by operation and kind: validity_exhausted (a quorum agreed after lease − elapsed − drift ran out), slower_than_drift (the round took longer than the clock drift allowance)."), []string{"op", "kind"},
		func(k clockKey) []string { return []string{string(k.op), string(k.kind)} }, clock...)

	c.observer = c.hooks()
	return c
}

// Observer returns the lock.Observer that feeds the Collector: set it as
// lock.Options.Observer (merge it with others with lock.Merge).
func (c *Collector) Observer() *lock.Observer {
	o := c.observer
	return &o
}

// Describe sends the descriptors of every metric of the Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.all {
		m.Describe(ch)
	}
}

// Collect sends the current value of every metric of the Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.all {
		m.Collect(ch)
	}
}

func (c *Collector) hooks() lock.Observer {
	return lock.Observer{
		Attempt: func(_ context.Context, e lock.AttemptInfo) {
			c.acquires.with(e.Outcome, e.Name).Inc()
			c.acquireDuration.with(e.Outcome, e.Name).Observe(e.Elapsed.Seconds())
			if !e.Probe {
				c.agreed.Observe(float64(e.Agreed))
			}
		},
		LockDone: func(_ context.Context, e lock.LockDoneInfo) {
			k := callKey{callLock, e.Outcome}
			if e.Try {
				k.call = callTryLock
			}
			c.lockCalls.with(k, e.Name).Inc()
			c.waitDuration.with(k, e.Name).Observe(e.Wait.Seconds())
		},
		SleepStart: func(_ context.Context, e lock.SleepStartInfo) { c.waiters.with(none{}, e.Name).Inc() },
		SleepDone: func(_ context.Context, e lock.SleepDoneInfo) {
			c.waiters.with(none{}, e.Name).Dec()
			c.sleeps.with(e.Ended, e.Name).Inc()
		},
		Release: func(_ context.Context, e lock.ReleaseInfo) {
			c.releases.with(e.Outcome, e.Name).Inc()
			if e.Reached > 0 || e.Outcome == lock.ReleaseNoQuorum {
				c.releaseDuration.Observe(e.Elapsed.Seconds())
			}
		},
		Hold: func(e lock.HoldInfo) {
			if e.Held {
				c.held.with(none{}, e.Name).Inc()
			} else {
				c.held.with(none{}, e.Name).Dec()
			}
		},
		Renewal: func(e lock.RenewalInfo) {
			c.renewals.with(renewalRenewed, "").Add(float64(e.Renewed))
			c.renewals.with(renewalFailed, "").Add(float64(e.Failed))
			c.renewals.with(renewalLost, "").Add(float64(e.Lost))
			c.renewals.with(renewalSkipped, "").Add(float64(e.Skipped))
			c.renewalDuration.Observe(e.Elapsed.Seconds())
			c.renewalSize.Observe(float64(e.Locks))
		},
		Loss: func(e lock.LossInfo) { c.losses.with(e.Reason, e.Name).Inc() },
		NodeError: func(_ context.Context, e lock.NodeErrorInfo) {
			c.nodeErrors.WithLabelValues(nodeLabel(e.Node, e.Addr), string(e.Op), string(e.Kind)).Inc()
		},
		PubSub: func(e lock.PubSubInfo) {
			if e.Up {
				c.reconnects.WithLabelValues(nodeLabel(e.Node, e.Addr)).Inc()
			} else {
				c.disconnects.WithLabelValues(nodeLabel(e.Node, e.Addr)).Inc()
			}
		},
		ClockTrouble: func(e lock.ClockTroubleInfo) { c.clockTrouble.with(clockKey{e.Op, e.Kind}, "").Inc() },
	}
}

// nodeLabel is a node's label value: its address, or its index when it has
// none to show.
func nodeLabel(node int, addr string) string {
	if addr == "" {
		return strconv.Itoa(node)
	}
	return addr
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func noLabels(none) []string { return nil }

// label is the label values of a key that is one string.
func label[K ~string](k K) []string { return []string{string(k)} }

// attemptOutcomes are the outcomes this version knows, exported at zero
// from the start.
var attemptOutcomes = []lock.AttemptOutcome{lock.AttemptAcquired, lock.AttemptContended, lock.AttemptNoQuorum,
	lock.AttemptLate, lock.AttemptCanceled, lock.AttemptProbeWon, lock.AttemptLost}

// mustIncrease panics unless buckets, from option, are in increasing order.
func mustIncrease(option string, buckets []float64) {
	for i := 1; i < len(buckets); i++ {
		if !(buckets[i] > buckets[i-1]) {
			panic(fmt.Sprintf("relockprom: %s: bucket %v follows %v: the bounds must increase", option, buckets[i], buckets[i-1]))
		}
	}
}
