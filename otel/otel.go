// Package relockotel reports relock's events through OpenTelemetry: metrics
// with the same meaning as the Prometheus adapter's (through
// go.opentelemetry.io/otel/metric), and spans for Lock, TryLock, Unlock and
// Client.Do.
//
//	inst, err := relockotel.New() // the global MeterProvider and TracerProvider
//	c, err := lock.New(lock.Options{Nodes: nodes, Observer: inst.Observer()})
//
// The spans are the parents of relock's go-redis commands: relock runs each
// node call on the context its Lock or Unlock span lives in, so a go-redis
// hook such as redisotel's nests its command spans under them. Each attempt,
// sleep and node failure is an event on the span.
//
// Instrument names map to the Prometheus adapter's metric names under
// OpenTelemetry's Prometheus naming rules (relock.acquire →
// relock_acquire_total, relock.acquire.duration in s →
// relock_acquire_duration_seconds), and carry the same attributes.
//
// It lives in its own module, github.com/relock-go/relock/otel, so that
// the library's module requires no OpenTelemetry; its package name is
// relockotel so that it never shadows go.opentelemetry.io/otel.
package relockotel

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/lock"
)

// ScopeName is the instrumentation scope of relock's meter and tracer.
const ScopeName = "github.com/relock-go/relock/otel"

// Instrumentation holds relock's OpenTelemetry instruments and tracer. It
// is safe for concurrent use, and one may serve several Clients.
type Instrumentation struct {
	cfg    config
	tracer trace.Tracer
	m      instruments
}

// Option configures an Instrumentation.
type Option func(*config)

type config struct {
	meters    metric.MeterProvider
	tracers   trace.TracerProvider
	lockLabel func(name string) string
	spanName  func(name string) string
	attrs     []attribute.KeyValue
}

// WithMeterProvider sets the MeterProvider (default: otel.GetMeterProvider()).
func WithMeterProvider(p metric.MeterProvider) Option {
	return func(c *config) { c.meters = p }
}

// WithTracerProvider sets the TracerProvider (default: otel.GetTracerProvider()).
func WithTracerProvider(p trace.TracerProvider) Option {
	return func(c *config) { c.tracers = p }
}

// WithLockLabel adds a "lock" attribute, valued f(name), to the metrics
// about one lock (as relockprom.WithLockLabel does). f must map the
// unbounded set of names to a small, bounded one: each value is a set of
// time series in every backend the metrics reach. A value that is not
// valid UTF-8 (names may hold any bytes) has each run of bytes that is not
// replaced by U+FFFD, here and in WithSpanLockName: OTLP carries strings as
// protobuf strings, and one that is not UTF-8 fails the whole export.
func WithLockLabel(f func(name string) string) Option {
	return func(c *config) { c.lockLabel = f }
}

// WithSpanLockName records the lock's name on spans as the attribute
// relock.lock, valued f(name) (return name itself for the full name; ""
// leaves it out). Spans are not time series, so full names cost no
// cardinality there, but they may be sensitive: without this option spans
// carry no name.
func WithSpanLockName(f func(name string) string) Option {
	return func(c *config) { c.spanName = f }
}

// WithAttributes adds attrs to every measurement: a constant attribute to
// tell the Clients of one process apart.
func WithAttributes(attrs ...attribute.KeyValue) Option {
	return func(c *config) { c.attrs = append(c.attrs, attrs...) }
}

// Prefix returns a labeller for WithLockLabel or WithSpanLockName: the
// name up to the first sep ("orders" for "orders:42" with sep ":").
func Prefix(sep string) func(name string) string {
	return func(name string) string {
		prefix, _, _ := strings.Cut(name, sep)
		return prefix
	}
}

// New returns an Instrumentation over the configured providers; it fails
// only if an instrument cannot be created.
func New(opts ...Option) (*Instrumentation, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.meters == nil {
		cfg.meters = otel.GetMeterProvider()
	}
	if cfg.tracers == nil {
		cfg.tracers = otel.GetTracerProvider()
	}
	i := &Instrumentation{cfg: cfg, tracer: cfg.tracers.Tracer(ScopeName)}
	if err := i.m.init(cfg.meters.Meter(ScopeName), cfg); err != nil {
		return nil, err
	}
	return i, nil
}

// Observer returns the lock.Observer that feeds the instruments and starts
// the spans: set it as lock.Options.Observer (with others, through
// lock.Merge).
func (i *Instrumentation) Observer() *lock.Observer {
	return &lock.Observer{
		LockStart:    i.lockStart,
		LockDone:     i.lockDone,
		Attempt:      i.attempt,
		SleepStart:   i.sleepStart,
		SleepDone:    i.sleepDone,
		UnlockStart:  i.unlockStart,
		Release:      i.release,
		DoStart:      i.doStart,
		DoDone:       i.doDone,
		Hold:         i.m.hold,
		Renewal:      i.m.renewal,
		Loss:         i.m.loss,
		NodeError:    i.nodeError,
		PubSub:       i.m.pubsub,
		ClockTrouble: i.m.clockTrouble,
	}
}

// errorOf is the error a span records: the call's own, or its outcome's
// name when it returned none.
func errorOf(err error, outcome string) error {
	if err != nil {
		return err
	}
	return errors.New(outcome)
}

// background is the context of measurements with none of their own.
var background = context.Background()
