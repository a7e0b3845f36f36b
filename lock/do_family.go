package lock

import (
	"context"
	"fmt"
)

// Reentrancy through the context for the rest of the lock family, on the
// scopes of held.go: each entry point below is Do or LockContext with its
// own kind of hold and its own fresh owner.
//
//   - FairMutex: a fair lock's data on the nodes is a Mutex's, so its holds
//     share the Mutex's scope: DoFair and Do nest in each other, and only
//     a fresh owner differs (a FairMutex, which waits its turn).
//   - RWMutex: two kinds, read and write. A nested call enters through the
//     read scope the context carries, else its write scope, and takes the
//     side it asks for on that scope's handle: the handle's own rules then
//     decide (a read of a writer is a downgrade, a write of a reader is
//     ErrUpgrade at once, a write of a writer re-enters).
//   - Semaphore: a nested Do asking for no more permits than the scope
//     holds re-enters its Permit; asking for more is refused at once.

const (
	// rwReadScope is an RWMutex's read hold (DoRead, ReadLockContext).
	rwReadScope scopeKind = "rw-read"
	// rwWriteScope is an RWMutex's write hold (DoWrite, WriteLockContext).
	rwWriteScope scopeKind = "rw-write"
	// semaphoreScope is a Semaphore's Permit (Semaphore.Do, AcquireContext).
	semaphoreScope scopeKind = "semaphore"
)

// DoFair is Do with a fair lock: when ctx carries no hold of the lock
// named name, the fresh owner is a FairMutex, which waits its turn behind
// the owners that asked before it (see FairMutex), with the Client's
// renewed lease. fn's context and everything else are as for Do. A fair
// lock's data on the nodes is a Mutex's, so a DoFair or a Do with a
// context derived from fn's re-enters the same owner, as does a DoFair in
// a Do's fn; as with the handles, use a name either fair or not for every
// fresh owner.
func (c *Client) DoFair(ctx context.Context, name string, fn func(ctx context.Context) error) error {
	return c.doIn(ctx, name, func(ctx context.Context) (*holdScope, error) {
		return c.enter(ctx, holdKey{c, mutexScope, name}, newFairHold)
	}, fn)
}

// FairLockContext is DoFair without the callback, as LockContext is Do
// without it: it returns a context carrying the hold and the unlock
// function that releases it, once.
func (c *Client) FairLockContext(ctx context.Context, name string) (held context.Context, unlock func() error, err error) {
	return scopeContext(ctx)(c.enter(ctx, holdKey{c, mutexScope, name}, newFairHold))
}

// newFairHold returns a fresh fair owner of key's lock, for enter.
func newFairHold(key holdKey) reentrantHold { return key.c.NewFairMutex(key.name) }

// DoRead runs fn while holding a read hold of the read-write lock named
// name, with the Client's renewed lease, and releases it when fn returns or
// panics. It waits as RWMutex.RLock does, bounded by ctx; fn's context
// ends as Do's does (ctx ends, the read hold is lost, the Client closes).
//
// Owners. fn's context carries the read hold, and a nested call with a
// context derived from it (DoRead, DoWrite, ReadLockContext,
// WriteLockContext on the same name and Client) is a call of the same
// RWMutex owner:
//
//   - a DoRead re-enters its read hold at once;
//   - a DoWrite returns an error wrapping ErrUpgrade at once, sends nothing
//     and does not run its fn, since a reader may not become a writer
//     (unless the owner writes too: a read nested in a write scope);
//   - in the fn of a DoWrite, a DoRead takes a read hold of the writer,
//     which does not wait for other owners (a downgrade: RWMutex.RLock of
//     a writer), released when that DoRead returns; it returns ErrLost,
//     taking nothing, once the write hold is lost.
//
// Any other context gets a fresh owner, which waits while a writer holds
// the lock. As with Do, once the call whose fn received the context has
// returned, a nested call with it returns an error wrapping ErrNotHeld and
// takes nothing.
func (c *Client) DoRead(ctx context.Context, name string, fn func(ctx context.Context) error) error {
	return c.doIn(ctx, name, func(ctx context.Context) (*holdScope, error) { return c.enterRW(ctx, name, true) }, fn)
}

// DoWrite runs fn while holding the write hold of the read-write lock named
// name, with the Client's renewed lease, and releases it when fn returns
// or panics. It waits as RWMutex.Lock does (new readers of other owners
// wait behind it), bounded by ctx; fn's context ends as Do's does.
//
// Owners. A DoWrite or WriteLockContext with a context derived from fn's
// re-enters the write hold at once; a DoRead or ReadLockContext takes a
// read hold of the same owner (a downgrade, see DoRead). A DoWrite with a
// context that carries only a read hold of the lock (a DoRead's fn, or a
// read nested in a write scope whose write has been released) returns an
// error wrapping ErrUpgrade at once, never waiting for itself. Any other
// context gets a fresh owner.
func (c *Client) DoWrite(ctx context.Context, name string, fn func(ctx context.Context) error) error {
	return c.doIn(ctx, name, func(ctx context.Context) (*holdScope, error) { return c.enterRW(ctx, name, false) }, fn)
}

// ReadLockContext is DoRead without the callback: it waits for a read hold
// of the lock named name as DoRead does and returns a context carrying it,
// and the unlock function that releases it (once; later calls return an
// error wrapping ErrNotHeld). held ends when ctx ends, when the read hold
// is lost, when the Client is closed, or at unlock; nested calls with a
// context derived from it behave as in DoRead's fn. A read taken through
// a write scope's context is derived from that context and ends with it,
// even though its read hold lasts until its own unlock.
func (c *Client) ReadLockContext(ctx context.Context, name string) (held context.Context, unlock func() error, err error) {
	return scopeContext(ctx)(c.enterRW(ctx, name, true))
}

// WriteLockContext is DoWrite without the callback: it waits for the write
// hold of the lock named name as DoWrite does and returns a context
// carrying it, and the unlock function that releases it (once). Nested
// calls with a context derived from held behave as in DoWrite's fn.
func (c *Client) WriteLockContext(ctx context.Context, name string) (held context.Context, unlock func() error, err error) {
	return scopeContext(ctx)(c.enterRW(ctx, name, false))
}

// enterRW takes a read (read true) or write hold of the read-write lock
// name for ctx. Through a scope of the lock that ctx carries (its read
// scope first: the nearer one when a read is nested in a write), it takes
// that side on the scope's handle, whose rules decide; with none, a fresh
// RWMutex takes it.
func (c *Client) enterRW(ctx context.Context, name string, read bool) (*holdScope, error) {
	rk, wk := holdKey{c, rwReadScope, name}, holdKey{c, rwWriteScope, name}
	key, side := wk, func(rw *RWMutex) reentrantHold { return rwWrite{rw} }
	if read {
		key, side = rk, func(rw *RWMutex) reentrantHold { return rwRead{rw} }
	}
	via := scopeIn(ctx, rk)
	if via == nil {
		via = scopeIn(ctx, wk)
	}
	if via != nil {
		return via.reenter(ctx, key, side(rwOf(via.h)))
	}
	return c.enter(ctx, key, func(k holdKey) reentrantHold { return side(c.NewRWMutex(k.name)) })
}

// rwRead is an RWMutex's read hold as a scope's handle. A writer whose
// write hold is known lost gets ErrLost rather than a read that could wait
// for the owner that may have taken the lock since.
type rwRead struct{ rw *RWMutex }

func (r rwRead) Lock(ctx context.Context) error {
	if r.rw.w.holdCount() > 0 {
		select {
		case <-r.rw.w.lostChan():
			return ErrLost
		default:
		}
	}
	return r.rw.RLock(ctx)
}

func (r rwRead) Unlock(ctx context.Context) error { return r.rw.RUnlock(ctx) }
func (r rwRead) Lost() <-chan struct{}            { return r.rw.r.lostChan() }

// rwWrite is an RWMutex's write hold as a scope's handle: Lock refuses an
// upgrade (RWMutex.Lock).
type rwWrite struct{ rw *RWMutex }

func (w rwWrite) Lock(ctx context.Context) error   { return w.rw.Lock(ctx) }
func (w rwWrite) Unlock(ctx context.Context) error { return w.rw.Unlock(ctx) }
func (w rwWrite) Lost() <-chan struct{}            { return w.rw.w.lostChan() }

// rwOf returns the RWMutex whose side h is.
func rwOf(h reentrantHold) *RWMutex {
	if r, ok := h.(rwRead); ok {
		return r.rw
	}
	return h.(rwWrite).rw
}

// Do runs fn while holding n permits of the semaphore (1 ≤ n ≤ Capacity),
// taken for a new owner as Acquire takes them (waiting, bounded by ctx,
// with the Client's renewed lease), and releases them when fn returns or
// panics. fn's context ends when ctx ends, when the permits are lost
// (context.Cause is ErrLost, and Do's error wraps ErrLost), or when the
// Client is closed (ErrClosed).
//
// Nesting. fn's context carries the permits. A Do or AcquireContext on the
// same semaphore name and Client with a context derived from it, asking
// for at most the permits the scope holds, re-enters the scope's owner: it
// takes no more permits (its fn runs on the ones held, which it shares with
// the outer fn and with the goroutines that inherit the context; the
// permits do not limit them among themselves), confirms them on the quorum
// (ErrLost if they are gone) and lets its share go when it returns; the
// permits come back when every scope on them has ended. Asking for more
// than the scope holds returns an error wrapping ErrInvalidArgument at once
// and takes nothing: the nested call would wait for permits its own caller
// holds. Any other context is a new owner, which waits for free permits.
// Once the Do whose fn received the context has returned, a nested call
// with it returns an error wrapping ErrNotHeld. Bad n returns an error
// wrapping ErrInvalidArgument and sends nothing.
func (s *Semaphore) Do(ctx context.Context, n int, fn func(ctx context.Context) error) error {
	return s.c.doIn(ctx, s.key.Name, func(ctx context.Context) (*holdScope, error) { return s.enter(ctx, n) }, fn)
}

// AcquireContext is Do without the callback: it takes n permits as Do does
// (re-entering the scope ctx carries when it holds at least n) and returns
// a context carrying them and the release function that gives them back
// (once; later calls return an error wrapping ErrNotHeld). held ends when
// ctx ends, when the permits are lost, when the Client is closed, or at
// release.
func (s *Semaphore) AcquireContext(ctx context.Context, n int) (held context.Context, release func() error, err error) {
	return scopeContext(ctx)(s.enter(ctx, n))
}

// enter takes n permits for ctx: a re-entry of the permits ctx carries for
// this semaphore's name, when they are at least n, or a fresh Acquire.
func (s *Semaphore) enter(ctx context.Context, n int) (*holdScope, error) {
	if err := s.checkPermits(n); err != nil {
		return nil, err
	}
	key := holdKey{s.c, semaphoreScope, s.key.Name}
	if sc := scopeIn(ctx, key); sc != nil {
		if held := sc.h.(*permitHold).n; n > held {
			return nil, fmt.Errorf("%w: semaphore %q: %d permits asked inside a scope holding %d: it would wait for its own permits", ErrInvalidArgument, s.key.Name, n, held)
		}
	}
	return s.c.enter(ctx, key, func(holdKey) reentrantHold { return &permitHold{s: s, n: n} })
}

// permitHold is a Permit as a scope's handle. Its first Lock acquires n
// permits of s for a new owner (Semaphore.Acquire); a later Lock re-enters
// them (one more hold of the same owner, its permits confirmed on the
// quorum), and each Unlock lets one hold go, the last one giving the
// permits back. Only the first Lock runs before the scope exists, so p is
// set before any other goroutine sees the handle.
type permitHold struct {
	s *Semaphore
	n int
	p *Permit
}

func (h *permitHold) Lock(ctx context.Context) error {
	if h.p == nil {
		p, err := h.s.Acquire(ctx, h.n)
		h.p = p
		return err
	}
	_, err := h.p.h.lock(ctx, h.s.c.opts.Lease, true, true)
	return err
}

func (h *permitHold) Unlock(ctx context.Context) error { return h.p.Release(ctx) }
func (h *permitHold) Lost() <-chan struct{}            { return h.p.Lost() }
