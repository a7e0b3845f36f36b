package integration_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/relock-go/relock/lock"
	relockotel "github.com/relock-go/relock/otel"
	relockprom "github.com/relock-go/relock/prometheus"
)

// BenchmarkObservedCycle is BenchmarkSequentialCycle on 3 masters with no
// Observer, with the Prometheus Collector, with the OpenTelemetry
// Instrumentation (every span sampled and exported to a no-op exporter),
// and with both: what observing costs per Lock/Unlock cycle.
//
//	go test -run '^$' -bench ObservedCycle -benchtime 2000x .
func BenchmarkObservedCycle(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	}()
	inst, err := relockotel.New(relockotel.WithMeterProvider(mp), relockotel.WithTracerProvider(tp))
	if err != nil {
		b.Fatal(err)
	}
	prom := relockprom.New().Observer()
	for _, tc := range []struct {
		name string
		obs  *lock.Observer
	}{
		{"unset", nil},
		{"prometheus", prom},
		{"otel", inst.Observer()},
		{"both", lock.Merge(prom, inst.Observer())},
	} {
		b.Run(tc.name, func(b *testing.B) { sequentialCycles(b, 3, tc.obs) })
	}
}
