package integration_test

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/lock"
	relockotel "github.com/relock-go/relock/otel"
	relockprom "github.com/relock-go/relock/prometheus"
)

// observation is one test's view of relock through both adapters and the
// real SDKs: a Prometheus Collector on its own registry, and an
// OpenTelemetry Instrumentation with a ManualReader and an in-memory span
// exporter, fed by one merged Observer.
type observation struct {
	reg    *prometheus.Registry
	reader *sdkmetric.ManualReader
	spans  *tracetest.InMemoryExporter
	tracer trace.Tracer // for the test's own root spans
	obs    *lock.Observer
}

// observe makes an observation; its providers shut down after the test's
// Clients close (cleanups run last-in first-out), so Close's events count.
func observe(t *testing.T) *observation {
	t.Helper()
	o := &observation{reg: prometheus.NewPedanticRegistry(), reader: sdkmetric.NewManualReader(), spans: tracetest.NewInMemoryExporter()}
	collector := relockprom.New()
	require.NoError(t, o.reg.Register(collector))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(o.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(o.spans))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	inst, err := relockotel.New(relockotel.WithMeterProvider(mp), relockotel.WithTracerProvider(tp))
	require.NoError(t, err)
	o.tracer = tp.Tracer("integration")
	o.obs = lock.Merge(collector.Observer(), inst.Observer())
	return o
}

// samples are metric values keyed name{label="value",...} (labels sorted);
// a histogram gives name_count, name_sum and name_bucket{le="..."}
// (cumulative, +Inf left out).
type samples map[string]float64

// key is the sample key of name with labels given as name, value pairs.
func key(name string, labels ...string) string {
	pairs := make([][2]string, 0, len(labels)/2)
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, [2]string{labels[i], labels[i+1]})
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i][0] < pairs[j][0] })
	if len(pairs) == 0 {
		return name
	}
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = fmt.Sprintf("%s=%q", p[0], p[1])
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// get is the value of name with labels (0 when the series does not exist).
func (s samples) get(name string, labels ...string) float64 { return s[key(name, labels...)] }

// total sums every series of name.
func (s samples) total(name string) float64 {
	sum := 0.0
	for k, v := range s {
		if k == name || strings.HasPrefix(k, name+"{") {
			sum += v
		}
	}
	return sum
}

// nonZero lists the series of name whose value is not zero.
func (s samples) nonZero(name string) []string {
	var out []string
	for k, v := range s {
		if (k == name || strings.HasPrefix(k, name+"{")) && v != 0 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func le(bound float64) string { return strconv.FormatFloat(bound, 'g', -1, 64) }

// prom gathers the registry, as a scrape does.
func (o *observation) prom(t *testing.T) samples {
	t.Helper()
	families, err := o.reg.Gather()
	require.NoError(t, err)
	s := samples{}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName(), l.GetValue())
			}
			switch {
			case m.GetCounter() != nil:
				s[key(mf.GetName(), labels...)] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				s[key(mf.GetName(), labels...)] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				s[key(mf.GetName()+"_count", labels...)] = float64(h.GetSampleCount())
				s[key(mf.GetName()+"_sum", labels...)] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					s[key(mf.GetName()+"_bucket", append(labels, "le", le(b.GetUpperBound()))...)] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	return s
}

// otel collects the ManualReader, naming each series as OpenTelemetry's
// Prometheus exporter would (dots to underscores, _seconds for unit s,
// _total for monotonic sums).
func (o *observation) otel(t *testing.T) samples {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, o.reader.Collect(context.Background(), &rm))
	s := samples{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			name := strings.ReplaceAll(m.Name, ".", "_")
			if m.Unit == "s" {
				name += "_seconds"
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if d.IsMonotonic {
					name += "_total"
				}
				for _, p := range d.DataPoints {
					s[key(name, attrs(p.Attributes)...)] = float64(p.Value)
				}
			case metricdata.Histogram[float64]:
				histogramSamples(s, name, d.DataPoints)
			case metricdata.Histogram[int64]:
				histogramSamples(s, name, d.DataPoints)
			default:
				t.Fatalf("metric %s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return s
}

func histogramSamples[N int64 | float64](s samples, name string, points []metricdata.HistogramDataPoint[N]) {
	for _, p := range points {
		labels := attrs(p.Attributes)
		s[key(name+"_count", labels...)] = float64(p.Count)
		s[key(name+"_sum", labels...)] = float64(p.Sum)
		cumulative := uint64(0)
		for i, bound := range p.Bounds {
			cumulative += p.BucketCounts[i]
			s[key(name+"_bucket", append(labels, "le", le(bound))...)] = float64(cumulative)
		}
	}
}

func attrs(set attribute.Set) []string {
	var out []string
	for _, kv := range set.ToSlice() {
		out = append(out, string(kv.Key), kv.Value.String())
	}
	return out
}

// requireSameInOTel checks that the two adapters, fed by the same events,
// report the same value for every series (OpenTelemetry only has the
// series it saw a measurement for; Prometheus exports known ones at zero).
func requireSameInOTel(t *testing.T, prom, otel samples) {
	t.Helper()
	for k, v := range otel {
		if _, ok := prom[k]; !ok {
			t.Errorf("OpenTelemetry series %s = %v has no Prometheus counterpart", k, v)
		}
	}
	for k, p := range prom {
		if o := otel[k]; math.Abs(p-o) > 1e-9*math.Max(1, math.Abs(p)) {
			t.Errorf("%s: Prometheus %v, OpenTelemetry %v", k, p, o)
		}
	}
}

// spansNamed returns the ended spans called name.
func (o *observation) spansNamed(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range o.spans.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// spanAttr is the value of attribute k of s.
func spanAttr(s tracetest.SpanStub, k string) attribute.Value {
	for _, kv := range s.Attributes {
		if string(kv.Key) == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// commandRecorder is a go-redis hook that records the span context of the
// ctx each command runs with, as redisotel would see it when it starts the
// command's span.
type commandRecorder struct {
	mu       sync.Mutex
	commands []recorded
}

type recorded struct {
	name string
	span trace.SpanContext
}

func (r *commandRecorder) record(ctx context.Context, cmds ...redis.Cmder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cmds {
		r.commands = append(r.commands, recorded{name: c.Name(), span: trace.SpanContextFromContext(ctx)})
	}
}

func (r *commandRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *commandRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.record(ctx, cmd)
		return next(ctx, cmd)
	}
}

func (r *commandRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.record(ctx, cmds...)
		return next(ctx, cmds)
	}
}

func (r *commandRecorder) scripts() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recorded
	for _, c := range r.commands {
		if c.name == "evalsha" || c.name == "eval" {
			out = append(out, c)
		}
	}
	return out
}
