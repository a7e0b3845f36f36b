// Package callctx gives one call to a Redis node a context of its own,
// with a deadline of its own, without the allocations of
// context.WithDeadline: the Context lives inside the call's own state, and
// makes its Done channel, and a timer, only for a call that waits on it.
// Most calls never do (go-redis waits on its context only for a connection
// from the pool, or a call for its turn behind busy pipelines), and a
// context.WithDeadline per call would cost a context, a timer and two
// closures every time.
package callctx

import (
	"context"
	"sync"
	"time"
)

// ValuesOf is context.WithoutCancel(ctx) without its allocation: ctx's
// values, none of its cancellation or deadline. Keep it in the call's
// state and make a Context's parent a pointer to it, which costs nothing,
// where a ValuesOf stored in an interface would be an allocation.
type ValuesOf struct{ context.Context }

// Deadline reports no deadline.
func (ValuesOf) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns nil: the context never ends.
func (ValuesOf) Done() <-chan struct{} { return nil }

// Err returns nil: the context never ends.
func (ValuesOf) Err() error { return nil }

// Context is the context of one call: its parent's values, a deadline of
// its own, and an end. Set Context (the parent), At and Timed before its
// first use, and call End once the call no longer needs it; its zero value
// is not usable. Use it through a pointer, and do not copy it after first
// use.
type Context struct {
	context.Context           // the parent: its values, its deadline when earlier
	At              time.Time // the call's own deadline
	// Timed: nothing else ends the context, so it ends itself: at At
	// (a timer, armed only while something waits on Done; Err reads the
	// clock), and when the parent is cancelled. Without Timed only End
	// ends it: its owner keeps a timer of its own for many calls at once
	// (a fan-out's loop).
	Timed bool

	mu        sync.Mutex
	done      chan struct{} // made by the first Done
	err       error         // why it ended; nil while it has not
	expiry    *expiry       // a Timed context's timer, while armed
	unwatched func() bool   // stops watching the parent; Timed only
}

// Deadline is At, or the parent's deadline when earlier.
func (x *Context) Deadline() (time.Time, bool) {
	if d, ok := x.Context.Deadline(); ok && d.Before(x.At) {
		return d, true
	}
	return x.At, true
}

// Done returns a channel closed once the context ends.
func (x *Context) Done() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done == nil {
		x.done = make(chan struct{})
		switch {
		case x.err != nil:
			close(x.done)
		case x.Timed && !time.Now().Before(x.At):
			x.endLocked(context.DeadlineExceeded)
		case x.Timed:
			x.expiry = armExpiry(x)
			if x.Context.Done() != nil {
				x.unwatched = context.AfterFunc(x.Context, func() { x.End(x.Context.Err()) })
			}
		}
	}
	return x.done
}

// Err is nil until the context ends, then why it ended. A Timed context
// tells its deadline off the clock, and its parent's end by asking it, so
// that nobody needs to wait on Done for it to end.
func (x *Context) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err == nil && x.Timed {
		if err := x.Context.Err(); err != nil {
			x.endLocked(err)
		} else if !time.Now().Before(x.At) {
			x.endLocked(context.DeadlineExceeded)
		}
	}
	return x.err
}

// End ends the context with err (a context's cancel function passes
// context.Canceled), unless it has ended already: the first reason stays.
// Its timer, if it armed one, goes.
func (x *Context) End(err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err == nil {
		x.endLocked(err)
	}
}

// endLocked records why the context ended and wakes whoever waits. The
// caller holds x.mu and has checked that it had not ended.
func (x *Context) endLocked(err error) {
	x.err = err
	if x.done != nil {
		close(x.done)
	}
	if x.expiry != nil {
		x.expiry.disarm()
		x.expiry = nil
	}
	if x.unwatched != nil {
		x.unwatched()
		x.unwatched = nil
	}
}

// expiry ends a Timed Context at its deadline. Its timer is made once and
// kept in expiries between uses: calls queued behind busy pipelines, as
// most are under load, would otherwise make a timer and a closure each.
type expiry struct {
	t *time.Timer
	x *Context // set before t is reset: the timer's start orders it before fire
}

// expiries keeps disarmed expiries whose timers will not fire.
var expiries sync.Pool

// armExpiry returns an expiry that ends x at its deadline.
func armExpiry(x *Context) *expiry {
	e, ok := expiries.Get().(*expiry)
	if !ok {
		e = &expiry{}
		e.t = time.AfterFunc(time.Hour, e.fire)
		e.t.Stop()
	}
	e.x = x
	e.t.Reset(time.Until(x.At))
	return e
}

// fire ends the context at its deadline.
func (e *expiry) fire() { e.x.End(context.DeadlineExceeded) }

// disarm stops the timer. Only an expiry stopped before it fired goes back
// to expiries: one that fired, or is firing, still reads e.x.
func (e *expiry) disarm() {
	if e.t.Stop() {
		e.x = nil
		expiries.Put(e)
	}
}
