package relockotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/lock"
)

// spanKey marks, in a context, the span this Instrumentation started for
// the operation the context belongs to: a Done hook ends that span and no
// other (not a caller's span, not another Instrumentation's).
type spanKey struct{ i *Instrumentation }

// Attribute keys of relock's spans and span events.
const (
	attrLock     = attribute.Key("relock.lock")
	attrOutcome  = attribute.Key("relock.outcome")
	attrAttempts = attribute.Key("relock.attempts")
	attrAgreed   = attribute.Key("relock.nodes.agreed")
	attrReached  = attribute.Key("relock.nodes.reached")
	attrNodes    = attribute.Key("relock.nodes")
	attrWait     = attribute.Key("relock.wait.seconds")
	attrSleeps   = attribute.Key("relock.sleeps")
	attrLastWake = attribute.Key("relock.last_wake")
	attrLease    = attribute.Key("relock.lease.seconds")
	attrFull     = attribute.Key("relock.full")
	attrLost     = attribute.Key("relock.lost")
	attrProbe    = attribute.Key("relock.probe")
	attrElapsed  = attribute.Key("relock.elapsed.seconds")
	attrEnded    = attribute.Key("relock.ended")
	attrNode     = attribute.Key("relock.node")
	attrOp       = attribute.Key("relock.op")
	attrKind     = attribute.Key("relock.kind")
)

// start starts a span named name under ctx and marks it as this
// Instrumentation's.
func (i *Instrumentation) start(ctx context.Context, name, lockName string, attrs ...attribute.KeyValue) context.Context {
	if i.cfg.spanName != nil {
		if v := i.cfg.spanName(lockName); v != "" {
			attrs = append(attrs, attrLock.String(validUTF8(v)))
		}
	}
	ctx, span := i.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, spanKey{i}, span)
}

// span is this Instrumentation's span of the operation ctx belongs to, or
// nil.
func (i *Instrumentation) span(ctx context.Context) trace.Span {
	s, _ := ctx.Value(spanKey{i}).(trace.Span)
	return s
}

// end ends the span of ctx with attrs, as failed with err unless ok.
func (i *Instrumentation) end(ctx context.Context, ok bool, err error, outcome string, attrs ...attribute.KeyValue) {
	s := i.span(ctx)
	if s == nil {
		return
	}
	s.SetAttributes(attrs...)
	if !ok {
		err = errorOf(err, outcome)
		s.RecordError(err)
		s.SetStatus(codes.Error, err.Error())
	}
	s.End()
}

func (i *Instrumentation) lockStart(ctx context.Context, e lock.LockStartInfo) context.Context {
	name := "relock.Lock"
	if e.Try {
		name = "relock.TryLock"
	}
	return i.start(ctx, name, e.Name, attrLease.Float64(e.Lease.Seconds()))
}

func (i *Instrumentation) lockDone(ctx context.Context, e lock.LockDoneInfo) {
	i.m.lockDone(ctx, e)
	ok := e.Outcome == lock.LockAcquired || e.Outcome == lock.LockBusy
	i.end(ctx, ok, e.Err, string(e.Outcome),
		attrOutcome.String(string(e.Outcome)), attrAttempts.Int(e.Attempts), attrWait.Float64(e.Wait.Seconds()),
		attrSleeps.Int(e.Sleeps), attrLastWake.String(string(e.LastWake)))
}

func (i *Instrumentation) attempt(ctx context.Context, e lock.AttemptInfo) {
	i.m.attempt(ctx, e)
	if s := i.span(ctx); s != nil {
		// The last attempt's count stays on the span: the one that won, or
		// the last that failed.
		s.SetAttributes(attrAgreed.Int(e.Agreed), attrNodes.Int(e.Nodes))
		s.AddEvent("relock.attempt", trace.WithAttributes(attrOutcome.String(string(e.Outcome)),
			attrAgreed.Int(e.Agreed), attrProbe.Bool(e.Probe), attrElapsed.Float64(e.Elapsed.Seconds())))
	}
}

func (i *Instrumentation) sleepStart(ctx context.Context, e lock.SleepStartInfo) {
	i.m.sleepStart(ctx, e)
}

func (i *Instrumentation) sleepDone(ctx context.Context, e lock.SleepDoneInfo) {
	i.m.sleepDone(ctx, e)
	if s := i.span(ctx); s != nil {
		s.AddEvent("relock.sleep", trace.WithAttributes(attrEnded.String(string(e.Ended)), attrElapsed.Float64(e.Slept.Seconds())))
	}
}

func (i *Instrumentation) unlockStart(ctx context.Context, e lock.UnlockStartInfo) context.Context {
	return i.start(ctx, "relock.Unlock", e.Name)
}

func (i *Instrumentation) release(ctx context.Context, e lock.ReleaseInfo) {
	i.m.release(ctx, e)
	ok := e.Outcome == lock.Released || e.Outcome == lock.ReleaseStillHeld
	i.end(ctx, ok, e.Err, string(e.Outcome), attrOutcome.String(string(e.Outcome)), attrFull.Bool(e.Full),
		attrAgreed.Int(e.Agreed), attrReached.Int(e.Reached), attrNodes.Int(e.Nodes))
}

func (i *Instrumentation) doStart(ctx context.Context, e lock.DoStartInfo) context.Context {
	return i.start(ctx, "relock.Do", e.Name)
}

func (i *Instrumentation) doDone(ctx context.Context, e lock.DoDoneInfo) {
	i.end(ctx, e.Err == nil, e.Err, "error", attrLost.Bool(e.Lost), attribute.Bool("relock.ran", e.Ran))
}

func (i *Instrumentation) nodeError(ctx context.Context, e lock.NodeErrorInfo) {
	i.m.nodeError(ctx, e)
	if s := i.span(ctx); s != nil {
		s.AddEvent("relock.node_error", trace.WithAttributes(attrNode.String(nodeLabel(e.Node, e.Addr)),
			attrOp.String(string(e.Op)), attrKind.String(string(e.Kind))))
	}
}
