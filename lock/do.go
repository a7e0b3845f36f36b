package lock

import (
	"context"
	"errors"
)

// Do runs fn while holding the lock named name, with the Client's renewed
// lease, and releases the lock when fn returns or panics.
//
// Do waits for the lock as Lock does, bounded by ctx. fn's context ends when
// ctx ends, when the lock is lost, or when the Client is closed (which
// releases the lock), whichever comes first; after a loss
// context.Cause(fnCtx) is ErrLost, and Do's error wraps ErrLost; after
// Close it is ErrClosed. Otherwise Do returns fn's error, joined with
// Unlock's if that failed. If fn panics, the lock is released and the panic
// goes on up to Do's caller.
//
// Owners. fn's context carries the hold: a Do (or LockContext) on the same
// name and Client with a context derived from it, in fn, in the functions
// fn calls, or in goroutines fn starts, re-enters the same owner at once,
// as a second Lock of one Mutex does, instead of waiting for the lock to be
// freed. Concurrent re-entries are allowed; each is released when its own
// Do returns, and the lock is free when every one has. Any other context
// gets a fresh owner, which waits while this one holds the lock. So does a
// different name or Client.
//
// A re-entry never waits for another owner. It fails with ErrLost, and fn
// does not run, when the hold was lost. Once the Do whose fn received the
// context has returned, its hold in the context has ended: a Do with that
// context (a goroutine fn left running, or one given a context with its
// cancellation removed) returns an error wrapping ErrNotHeld and takes
// nothing, rather than locking again for an owner no one is left to
// unlock; a re-entry still under way when the outer fn returns gives up the
// same way.
func (c *Client) Do(ctx context.Context, name string, fn func(ctx context.Context) error) error {
	return c.doIn(ctx, name, func(ctx context.Context) (*holdScope, error) {
		return c.enter(ctx, holdKey{c, mutexScope, name}, newMutexHold)
	}, fn)
}

// doIn is the body of every Do-like entry point (Do, DoFair, DoRead,
// DoWrite, Semaphore.Do): it takes the hold through enter (a re-entry of
// the hold ctx carries, or a fresh owner), runs fn in the scope's context,
// and ends the scope when fn returns or panics, reporting the call to the
// observer as a Do on name.
func (c *Client) doIn(ctx context.Context, name string, enter func(context.Context) (*holdScope, error), fn func(ctx context.Context) error) (err error) {
	ctx, start := c.doStarted(ctx, name)
	ran := false
	defer func() { c.doEnded(ctx, name, start, ran, err) }()
	s, err := enter(ctx)
	if err != nil {
		return err
	}
	ran = true
	// Deferred, so that a panic in fn (recovered further up, as net/http
	// does) does not leave the lock held and renewed until Close.
	defer func() {
		err = errors.Join(err, s.exit(context.WithoutCancel(ctx)))
	}()
	return fn(s.open(ctx))
}

// LockContext is Do without the callback, for code that cannot wrap its
// critical section in a function: it waits for the lock named name as Do
// does (ctx bounds the wait), with the Client's renewed lease, and returns
// a context that carries the hold and an unlock function that releases it.
//
// held is derived from ctx and ends when ctx ends, when the lock is lost
// (context.Cause(held) is ErrLost), when the Client is closed, or when
// unlock is called. As with Do's fn context, a Do or LockContext on the same
// name and Client with a context derived from held re-enters this owner;
// after unlock it returns an error wrapping ErrNotHeld.
//
// unlock must be called once, from any goroutine, when the work is done;
// it releases this hold (the lock is free when every re-entry has been
// released too) and returns Unlock's error, wrapping ErrLost if the lock
// was lost meanwhile. Later calls send nothing and return an error wrapping
// ErrNotHeld. On error, LockContext holds nothing and returns a nil held
// and unlock.
func (c *Client) LockContext(ctx context.Context, name string) (held context.Context, unlock func() error, err error) {
	return scopeContext(ctx)(c.enter(ctx, holdKey{c, mutexScope, name}, newMutexHold))
}

// scopeContext returns what every LockContext-like entry point returns for
// the scope it took with ctx (or its error): the scope's context and the
// function that ends it, which sends its release even after ctx ended.
func scopeContext(ctx context.Context) func(*holdScope, error) (context.Context, func() error, error) {
	return func(s *holdScope, err error) (context.Context, func() error, error) {
		if err != nil {
			return nil, nil, err
		}
		unlockCtx := context.WithoutCancel(ctx)
		return s.open(ctx), func() error { return s.exit(unlockCtx) }, nil
	}
}

// newMutexHold returns a fresh owner of key's lock, for enter.
func newMutexHold(key holdKey) reentrantHold { return key.c.NewMutex(key.name) }
