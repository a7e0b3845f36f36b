package lock

import (
	"context"
	"errors"
)

// Do runs fn while holding the lock named name, with a fresh owner and the
// Client's renewed lease, and releases the lock when fn returns or panics.
//
// Do waits for the lock as Lock does, bounded by ctx. fn's context ends when
// ctx ends or when the lock is lost, whichever comes first; after a loss
// context.Cause(fnCtx) is ErrLost, and Do's error wraps ErrLost. Otherwise
// Do returns fn's error, joined with Unlock's if that failed. If fn panics,
// the lock is released and the panic goes on up to Do's caller.
func (c *Client) Do(ctx context.Context, name string, fn func(ctx context.Context) error) (err error) {
	ctx, start := c.doStarted(ctx, name)
	ran := false
	defer func() { c.doEnded(ctx, name, start, ran, err) }()
	m := c.NewMutex(name)
	if err := m.Lock(ctx); err != nil {
		return err
	}
	ran = true
	fnCtx, cancel := context.WithCancelCause(ctx)
	watchDone := make(chan struct{})
	// Deferred, so that a panic in fn (recovered further up, as net/http
	// does) does not leave the lock held and renewed until Close.
	defer func() {
		cancel(nil)
		<-watchDone
		unlockErr := m.Unlock(context.WithoutCancel(ctx))
		if errors.Is(context.Cause(fnCtx), ErrLost) && !errors.Is(unlockErr, ErrLost) {
			unlockErr = errors.Join(unlockErr, ErrLost)
		}
		err = errors.Join(err, unlockErr)
	}()
	lost := m.Lost()
	go func() {
		defer close(watchDone)
		select {
		case <-lost:
			cancel(ErrLost)
		case <-fnCtx.Done():
		}
	}()
	return fn(fnCtx)
}
