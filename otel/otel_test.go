package relockotel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/relock-go/relock/lock"
	relockotel "github.com/relock-go/relock/otel"
)

// These tests feed the Observer the events a Client would report and read
// the real SDK's output: a ManualReader for metrics, an in-memory exporter
// for spans. The same against Redis in containers is in the integration
// module (integration/observe_test.go).

type sdk struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
	inst   *relockotel.Instrumentation
}

func newSDK(t *testing.T, opts ...relockotel.Option) *sdk {
	t.Helper()
	s := &sdk{reader: sdkmetric.NewManualReader(), spans: tracetest.NewInMemoryExporter()}
	s.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(s.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.reader))
	t.Cleanup(func() {
		_ = s.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	inst, err := relockotel.New(append([]relockotel.Option{relockotel.WithMeterProvider(mp), relockotel.WithTracerProvider(s.tp)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	s.inst = inst
	return s
}

// doEvents reports, through obs, a Do whose Lock waited once, met a node
// timeout and won, and whose Unlock released the lock.
func doEvents(ctx context.Context, obs *lock.Observer, name string) {
	dctx := obs.DoStart(ctx, lock.DoStartInfo{Name: name})
	lctx := obs.LockStart(dctx, lock.LockStartInfo{Name: name, Lease: 30 * time.Second, Renewed: true})
	obs.Attempt(lctx, lock.AttemptInfo{Name: name, Outcome: lock.AttemptContended, Nodes: 3, Quorum: 2, Elapsed: time.Millisecond})
	obs.SleepStart(lctx, lock.SleepStartInfo{Name: name, Max: time.Second})
	obs.SleepDone(lctx, lock.SleepDoneInfo{Name: name, Slept: 10 * time.Millisecond, Ended: lock.WokenByRelease})
	obs.NodeError(lctx, lock.NodeErrorInfo{Node: 2, Addr: "10.0.0.3:6379", Op: lock.OpAcquire, Kind: lock.NodeTimeout, Err: lock.ErrNodeTimeout})
	obs.Attempt(lctx, lock.AttemptInfo{Name: name, Outcome: lock.AttemptAcquired, Agreed: 2, Nodes: 3, Quorum: 2, Elapsed: 2 * time.Millisecond})
	obs.Hold(lock.HoldInfo{Name: name, Held: true})
	obs.LockDone(lctx, lock.LockDoneInfo{Name: name, Outcome: lock.LockAcquired, Attempts: 2, Sleeps: 1, LastWake: lock.WokenByRelease, Wait: 15 * time.Millisecond})
	uctx := obs.UnlockStart(dctx, lock.UnlockStartInfo{Name: name})
	obs.Release(uctx, lock.ReleaseInfo{Name: name, Outcome: lock.Released, Full: true, Reached: 3, Agreed: 3, Nodes: 3, Elapsed: time.Millisecond})
	obs.Hold(lock.HoldInfo{Name: name, Held: false})
	obs.DoDone(dctx, lock.DoDoneInfo{Name: name, Ran: true, Took: 20 * time.Millisecond})
}

func TestSpansNestUnderTheCallerAndCarryTheOutcome(t *testing.T) {
	s := newSDK(t, relockotel.WithSpanLockName(func(name string) string { return name }))
	ctx, root := s.tp.Tracer("test").Start(context.Background(), "request")
	doEvents(ctx, s.inst.Observer(), "orders:42")
	root.End()

	spans := map[string]tracetest.SpanStub{}
	for _, sp := range s.spans.GetSpans() {
		spans[sp.Name] = sp
	}
	do, lk, unlock := spans["relock.Do"], spans["relock.Lock"], spans["relock.Unlock"]
	switch {
	case len(spans) != 4:
		t.Fatalf("spans %v; want request, relock.Do, relock.Lock, relock.Unlock", names(s.spans.GetSpans()))
	case do.Parent.SpanID() != root.SpanContext().SpanID():
		t.Fatal("relock.Do is not a child of the caller's span")
	case lk.Parent.SpanID() != do.SpanContext.SpanID() || unlock.Parent.SpanID() != do.SpanContext.SpanID():
		t.Fatal("Do's Lock and Unlock are not children of relock.Do")
	}
	want := map[attribute.Key]attribute.Value{
		"relock.lock":         attribute.StringValue("orders:42"),
		"relock.outcome":      attribute.StringValue("acquired"),
		"relock.attempts":     attribute.IntValue(2),
		"relock.nodes.agreed": attribute.IntValue(2),
		"relock.sleeps":       attribute.IntValue(1),
		"relock.last_wake":    attribute.StringValue("release"),
		"relock.wait.seconds": attribute.Float64Value(0.015),
	}
	for k, v := range want {
		if got := attrOf(lk.Attributes, k); got != v {
			t.Errorf("relock.Lock %s = %v; want %v", k, got.String(), v.String())
		}
	}
	var events []string
	for _, e := range lk.Events {
		events = append(events, e.Name)
	}
	if got := len(events); got != 4 || events[0] != "relock.attempt" || events[1] != "relock.sleep" || events[2] != "relock.node_error" {
		t.Errorf("relock.Lock events %v; want attempt, sleep, node_error, attempt", events)
	}
	if attrOf(unlock.Attributes, "relock.full") != attribute.BoolValue(true) || unlock.Status.Code == codes.Error {
		t.Errorf("relock.Unlock attributes %v status %v", unlock.Attributes, unlock.Status)
	}
}

// A Done hook ends only the span its Start hook began: a caller's span in
// the context, or none (holds released at Close), is left alone.
func TestDoneEndsOnlyItsOwnSpan(t *testing.T) {
	s := newSDK(t)
	obs := s.inst.Observer()
	ctx, caller := s.tp.Tracer("test").Start(context.Background(), "caller")
	obs.Release(ctx, lock.ReleaseInfo{Name: "x", All: true, Outcome: lock.Released, Full: true})
	obs.LockDone(ctx, lock.LockDoneInfo{Name: "x", Outcome: lock.LockAcquired})
	if !caller.IsRecording() {
		t.Fatal("relock ended the caller's span")
	}
	caller.End()

	// A failed Lock is an error span; a TryLock that found the lock held is not.
	lctx := obs.LockStart(context.Background(), lock.LockStartInfo{Name: "x"})
	obs.LockDone(lctx, lock.LockDoneInfo{Name: "x", Outcome: lock.LockTimedOut, Err: context.DeadlineExceeded})
	tctx := obs.LockStart(context.Background(), lock.LockStartInfo{Name: "x", Try: true})
	obs.LockDone(tctx, lock.LockDoneInfo{Name: "x", Try: true, Outcome: lock.LockBusy})
	got := s.spans.GetSpans()
	if len(got) != 3 || got[1].Status.Code != codes.Error || got[2].Name != "relock.TryLock" || got[2].Status.Code == codes.Error {
		t.Fatalf("spans %v; want caller, an errored relock.Lock and a relock.TryLock without error", got)
	}
	if attrOf(got[1].Attributes, "relock.lock").Type() != attribute.EMPTY {
		t.Fatal("a span carries the lock's name without WithSpanLockName")
	}
}

func TestMetricsCountEvents(t *testing.T) {
	s := newSDK(t, relockotel.WithAttributes(attribute.String("client", "billing")))
	obs := s.inst.Observer()
	doEvents(context.Background(), obs, "orders:42")
	obs.Loss(lock.LossInfo{Name: "orders:42", Reason: lock.LossRenewalFailed})
	obs.Renewal(lock.RenewalInfo{Locks: 2, Renewed: 1, Failed: 1, Nodes: 3, Answered: 2, Elapsed: time.Millisecond})
	obs.PubSub(lock.PubSubInfo{Node: 0, Addr: "10.0.0.1:6379"})
	obs.ClockTrouble(lock.ClockTroubleInfo{Op: lock.OpAcquire, Kind: lock.ValidityExhausted})

	m := collect(t, s.reader)
	client := attribute.String("client", "billing")
	for _, tc := range []struct {
		name  string
		attrs []attribute.KeyValue
		want  int64
	}{
		{"relock.acquire", []attribute.KeyValue{attribute.String("outcome", "acquired")}, 1},
		{"relock.acquire", []attribute.KeyValue{attribute.String("outcome", "contended")}, 1},
		{"relock.acquire.duration", []attribute.KeyValue{attribute.String("outcome", "acquired")}, 1},
		{"relock.quorum.agreed_nodes", nil, 2},
		{"relock.lock.calls", []attribute.KeyValue{attribute.String("call", "lock"), attribute.String("outcome", "acquired")}, 1},
		{"relock.wait.duration", []attribute.KeyValue{attribute.String("call", "lock"), attribute.String("outcome", "acquired")}, 1},
		{"relock.sleeps", []attribute.KeyValue{attribute.String("ended", "release")}, 1},
		{"relock.waiters", nil, 0},
		{"relock.locks.held", nil, 0},
		{"relock.releases", []attribute.KeyValue{attribute.String("outcome", "released")}, 1},
		{"relock.renewals", []attribute.KeyValue{attribute.String("outcome", "failed")}, 1},
		{"relock.renewal.batch.size", nil, 1},
		{"relock.locks.lost", []attribute.KeyValue{attribute.String("reason", "renewal_failed")}, 1},
		{"relock.node.errors", []attribute.KeyValue{attribute.String("node", "10.0.0.3:6379"), attribute.String("op", "acquire"), attribute.String("kind", "timeout")}, 1},
		{"relock.pubsub.disconnects", []attribute.KeyValue{attribute.String("node", "10.0.0.1:6379")}, 1},
		{"relock.clock.trouble", []attribute.KeyValue{attribute.String("op", "acquire"), attribute.String("kind", "validity_exhausted")}, 1},
	} {
		set := attribute.NewSet(append(tc.attrs, client)...)
		if got := m.value(t, tc.name, set); got != tc.want {
			t.Errorf("%s{%v} = %d; want %d", tc.name, set.Encoded(attribute.DefaultEncoder()), got, tc.want)
		}
	}
}

func TestLockLabelIsBounded(t *testing.T) {
	s := newSDK(t, relockotel.WithLockLabel(relockotel.Prefix(":")))
	for _, name := range []string{"orders:1", "orders:2"} {
		doEvents(context.Background(), s.inst.Observer(), name)
	}
	m := collect(t, s.reader)
	set := attribute.NewSet(attribute.String("outcome", "acquired"), attribute.String("lock", "orders"))
	if got := m.value(t, "relock.acquire", set); got != 2 {
		t.Fatalf("relock.acquire{lock=orders} = %d; want 2", got)
	}
	if got := m.value(t, "relock.node.errors", attribute.NewSet(attribute.String("node", "10.0.0.3:6379"),
		attribute.String("op", "acquire"), attribute.String("kind", "timeout"))); got != 2 {
		t.Fatalf("node errors (no lock label) = %d; want 2", got)
	}
}

// A lock name may hold any bytes; OTLP's protobuf strings must be UTF-8,
// or the whole export fails: the label and the span attribute are made
// valid.
func TestLockNameThatIsNotUTF8(t *testing.T) {
	s := newSDK(t, relockotel.WithLockLabel(relockotel.Prefix(":")), relockotel.WithSpanLockName(func(n string) string { return n }))
	doEvents(context.Background(), s.inst.Observer(), "\xffor\xfe\xfd-ders:42")
	m := collect(t, s.reader)
	set := attribute.NewSet(attribute.String("outcome", "acquired"), attribute.String("lock", "\uFFFDor\uFFFD-ders"))
	if got := m.value(t, "relock.acquire", set); got != 1 {
		t.Fatalf("relock.acquire{lock=...} = %d; want 1", got)
	}
	named := 0
	for _, span := range s.spans.GetSpans() {
		for _, a := range span.Attributes {
			if a.Key == "relock.lock" {
				named++
				if a.Value.AsString() != "\uFFFDor\uFFFD-ders:42" {
					t.Errorf("span %s: relock.lock %q", span.Name, a.Value.AsString())
				}
			}
		}
	}
	if named == 0 {
		t.Fatal("no span carries relock.lock")
	}
}

// BenchmarkInstrumentationCycle is the cost of the events of one Do (two
// attempts, a sleep, a node error) with the real SDK, spans sampled.
func BenchmarkInstrumentationCycle(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) }()
	inst, err := relockotel.New(relockotel.WithMeterProvider(mp), relockotel.WithTracerProvider(tp))
	if err != nil {
		b.Fatal(err)
	}
	obs := inst.Observer()
	b.ReportAllocs()
	for b.Loop() {
		doEvents(context.Background(), obs, "orders:42")
	}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func attrOf(attrs []attribute.KeyValue, k attribute.Key) attribute.Value {
	for _, kv := range attrs {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}

type metrics map[string]metricdata.Aggregation

func collect(t *testing.T, r *sdkmetric.ManualReader) metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != relockotel.ScopeName {
			t.Fatalf("scope %q; want %q", sm.Scope.Name, relockotel.ScopeName)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// value is a counter's sum or a histogram's count for the data point with
// exactly the attributes set.
func (m metrics) value(t *testing.T, name string, set attribute.Set) int64 {
	t.Helper()
	switch d := m[name].(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&set) {
				return p.Value
			}
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&set) {
				return int64(p.Count)
			}
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&set) {
				return int64(p.Count)
			}
		}
	case nil:
		t.Fatalf("no metric %s", name)
	}
	t.Fatalf("%s has no data point %v", name, set.Encoded(attribute.DefaultEncoder()))
	return 0
}
