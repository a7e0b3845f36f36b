package relockotel

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/relock-go/relock/lock"
)

// Bucket boundaries, in seconds, the same as the Prometheus adapter's.
var (
	acquireBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
	waitBuckets    = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	nodeBuckets    = []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	batchBuckets   = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500}
)

// instruments are relock's metrics, with the attribute sets of their
// measurements cached (see measure).
type instruments struct {
	acquires        metric.Int64Counter
	acquireDuration metric.Float64Histogram
	agreed          metric.Int64Histogram
	lockCalls       metric.Int64Counter
	waitDuration    metric.Float64Histogram
	sleeps          metric.Int64Counter
	waiters         metric.Int64UpDownCounter
	held            metric.Int64UpDownCounter
	releases        metric.Int64Counter
	releaseDuration metric.Float64Histogram
	renewals        metric.Int64Counter
	renewalDuration metric.Float64Histogram
	renewalSize     metric.Int64Histogram
	losses          metric.Int64Counter
	nodeErrors      metric.Int64Counter
	disconnects     metric.Int64Counter
	reconnects      metric.Int64Counter
	clockTroubles   metric.Int64Counter

	lockLabel func(string) string
	constant  []attribute.KeyValue

	mu    sync.RWMutex
	cache map[attrKey]*measure
}

// attrKey names the attributes of a measurement: up to three pairs, and
// the lock label ("" for none).
type attrKey struct {
	k1, v1, k2, v2, k3, v3 string
	lock                   string
}

// measure is a cached attribute set as the options Add and Record take;
// reusing the slices makes a measurement allocation-free on relock's side.
type measure struct {
	add []metric.AddOption
	rec []metric.RecordOption
}

func (m *instruments) init(meter metric.Meter, cfg config) error {
	m.lockLabel, m.constant, m.cache = cfg.lockLabel, cfg.attrs, make(map[attrKey]*measure)
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	upDown := func(name, unit, desc string) metric.Int64UpDownCounter {
		c, err := meter.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	seconds := func(name, desc string, buckets []float64) metric.Float64Histogram {
		h, err := meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(buckets...))
		errs = append(errs, err)
		return h
	}
	count := func(name, unit, desc string, buckets []float64) metric.Int64Histogram {
		h, err := meter.Int64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(buckets...))
		errs = append(errs, err)
		return h
	}
	m.acquires = counter("relock.acquire", "{attempt}", "Acquire attempts sent to the nodes (a quorum round, or a probe of the tie-breaker node), by outcome.")
	m.acquireDuration = seconds("relock.acquire.duration", "Duration of one acquire attempt, from sending to the last answer waited for, by outcome.", acquireBuckets)
	m.agreed = count("relock.quorum.agreed_nodes", "{node}", "Nodes that took each acquire attempt (probes of the tie-breaker left out).", nodeBuckets)
	m.lockCalls = counter("relock.lock.calls", "{call}", "Lock and TryLock calls, by call (lock, trylock) and outcome.")
	m.waitDuration = seconds("relock.wait.duration", "Duration of Lock and TryLock calls, from the call to its return.", waitBuckets)
	m.sleeps = counter("relock.sleeps", "{sleep}", "Sleeps of waiting Lock calls between attempts, by how they ended (release, expiry, timeout, closed).")
	m.waiters = upDown("relock.waiters", "{call}", "Lock calls asleep right now, waiting for the holder's release or lease.")
	m.held = upDown("relock.locks.held", "{lock}", "Handles holding a lock right now (a lost hold counts until its handle unlocks it).")
	m.releases = counter("relock.releases", "{release}", "Releases (each Unlock, and each handle released at once), by outcome.")
	m.releaseDuration = seconds("relock.release.duration", "Duration of releases that were sent to the nodes.", acquireBuckets)
	m.renewals = counter("relock.renewals", "{renewal}", "Watchdog renewals of held locks, by outcome (renewed, failed, lost, skipped).")
	m.renewalDuration = seconds("relock.renewal.batch.duration", "Duration of one batch of watchdog renewals.", acquireBuckets)
	m.renewalSize = count("relock.renewal.batch.size", "{lock}", "Locks renewed together in one batch.", batchBuckets)
	m.losses = counter("relock.locks.lost", "{lock}", "Holds reported lost, by reason (not_held, renewal_failed, lease_expired).")
	m.nodeErrors = counter("relock.node.errors", "{error}", "Node calls that failed or did not answer in time, by node, operation and kind.")
	m.disconnects = counter("relock.pubsub.disconnects", "{disconnect}", "Times a node's working Pub/Sub connection broke.")
	m.reconnects = counter("relock.pubsub.reconnects", "{reconnect}", "Times a node's Pub/Sub connection worked again after failing.")
	m.clockTroubles = counter("relock.clock.trouble", "{operation}", "Operations whose timing undermines the validity rule, by operation and kind.")
	return errors.Join(errs...)
}

// lock is the lock label of name: "" without WithLockLabel.
func (m *instruments) lock(name string) string {
	if m.lockLabel == nil {
		return ""
	}
	return validUTF8(m.lockLabel(name))
}

// validUTF8 is v with each run of bytes that is not UTF-8 replaced by
// U+FFFD (see WithLockLabel).
func validUTF8(v string) string {
	if utf8.ValidString(v) {
		return v
	}
	return strings.ToValidUTF8(v, "\uFFFD")
}

// attrs returns the cached options for k, making them on first use.
func (m *instruments) attrs(k attrKey) *measure {
	m.mu.RLock()
	o := m.cache[k]
	m.mu.RUnlock()
	if o != nil {
		return o
	}
	kvs := append([]attribute.KeyValue(nil), m.constant...)
	for _, p := range [][2]string{{k.k1, k.v1}, {k.k2, k.v2}, {k.k3, k.v3}} {
		if p[0] != "" {
			kvs = append(kvs, attribute.String(p[0], p[1]))
		}
	}
	if m.lockLabel != nil && k.lock != "" {
		kvs = append(kvs, attribute.String("lock", k.lock))
	}
	opt := metric.WithAttributeSet(attribute.NewSet(kvs...))
	o = &measure{add: []metric.AddOption{opt}, rec: []metric.RecordOption{opt}}
	m.mu.Lock()
	defer m.mu.Unlock()
	if have := m.cache[k]; have != nil {
		return have
	}
	m.cache[k] = o
	return o
}

func (m *instruments) attempt(ctx context.Context, e lock.AttemptInfo) {
	a := m.attrs(attrKey{k1: "outcome", v1: string(e.Outcome), lock: m.lock(e.Name)})
	m.acquires.Add(ctx, 1, a.add...)
	m.acquireDuration.Record(ctx, e.Elapsed.Seconds(), a.rec...)
	if !e.Probe {
		m.agreed.Record(ctx, int64(e.Agreed), m.attrs(attrKey{}).rec...)
	}
}

func (m *instruments) lockDone(ctx context.Context, e lock.LockDoneInfo) {
	call := "lock"
	if e.Try {
		call = "trylock"
	}
	a := m.attrs(attrKey{k1: "call", v1: call, k2: "outcome", v2: string(e.Outcome), lock: m.lock(e.Name)})
	m.lockCalls.Add(ctx, 1, a.add...)
	m.waitDuration.Record(ctx, e.Wait.Seconds(), a.rec...)
}

func (m *instruments) sleepStart(ctx context.Context, e lock.SleepStartInfo) {
	m.waiters.Add(ctx, 1, m.attrs(attrKey{lock: m.lock(e.Name)}).add...)
}

func (m *instruments) sleepDone(ctx context.Context, e lock.SleepDoneInfo) {
	m.waiters.Add(ctx, -1, m.attrs(attrKey{lock: m.lock(e.Name)}).add...)
	m.sleeps.Add(ctx, 1, m.attrs(attrKey{k1: "ended", v1: string(e.Ended), lock: m.lock(e.Name)}).add...)
}

func (m *instruments) release(ctx context.Context, e lock.ReleaseInfo) {
	m.releases.Add(ctx, 1, m.attrs(attrKey{k1: "outcome", v1: string(e.Outcome), lock: m.lock(e.Name)}).add...)
	if e.Reached > 0 || e.Outcome == lock.ReleaseNoQuorum {
		m.releaseDuration.Record(ctx, e.Elapsed.Seconds(), m.attrs(attrKey{}).rec...)
	}
}

func (m *instruments) hold(e lock.HoldInfo) {
	delta := int64(-1)
	if e.Held {
		delta = 1
	}
	m.held.Add(background, delta, m.attrs(attrKey{lock: m.lock(e.Name)}).add...)
}

func (m *instruments) renewal(e lock.RenewalInfo) {
	for _, r := range [...]struct {
		outcome string
		n       int
	}{{"renewed", e.Renewed}, {"failed", e.Failed}, {"lost", e.Lost}, {"skipped", e.Skipped}} {
		m.renewals.Add(background, int64(r.n), m.attrs(attrKey{k1: "outcome", v1: r.outcome}).add...)
	}
	m.renewalDuration.Record(background, e.Elapsed.Seconds(), m.attrs(attrKey{}).rec...)
	m.renewalSize.Record(background, int64(e.Locks), m.attrs(attrKey{}).rec...)
}

func (m *instruments) loss(e lock.LossInfo) {
	m.losses.Add(background, 1, m.attrs(attrKey{k1: "reason", v1: string(e.Reason), lock: m.lock(e.Name)}).add...)
}

func (m *instruments) nodeError(ctx context.Context, e lock.NodeErrorInfo) {
	m.nodeErrors.Add(ctx, 1, m.attrs(attrKey{k1: "node", v1: nodeLabel(e.Node, e.Addr), k2: "op", v2: string(e.Op), k3: "kind", v3: string(e.Kind)}).add...)
}

func (m *instruments) pubsub(e lock.PubSubInfo) {
	c := m.disconnects
	if e.Up {
		c = m.reconnects
	}
	c.Add(background, 1, m.attrs(attrKey{k1: "node", v1: nodeLabel(e.Node, e.Addr)}).add...)
}

func (m *instruments) clockTrouble(e lock.ClockTroubleInfo) {
	m.clockTroubles.Add(background, 1, m.attrs(attrKey{k1: "op", v1: string(e.Op), k2: "kind", v2: string(e.Kind)}).add...)
}

// nodeLabel is a node's attribute value: its address, or its index when it
// has none to show.
func nodeLabel(node int, addr string) string {
	if addr == "" {
		return strconv.Itoa(node)
	}
	return addr
}
