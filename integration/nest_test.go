package integration_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
)

// Reentrancy through the context: Do (and LockContext) record their hold in
// the context they hand out, and a Do with a context derived from it
// re-enters that owner.

// forNestMasters runs f against 1 and 3 masters.
func forNestMasters(t *testing.T, f func(t *testing.T, n int)) {
	for _, n := range []int{1, 3} {
		t.Run(itoaName(n), func(t *testing.T) { reset(t); f(t, n) })
	}
}

// soleHolder asserts that each of the first n nodes holds name for one
// owner with count, and returns that owner.
func soleHolder(t *testing.T, n int, name string, count int64) string {
	t.Helper()
	var owner string
	for i, h := range holdersOn(t, n, name) {
		require.Len(t, h, 1, "node %d: one owner", i)
		for o, got := range h {
			require.Equal(t, count, got, "node %d: hold count", i)
			if owner == "" {
				owner = o
			}
			require.Equal(t, owner, o, "node %d: the same owner on every node", i)
		}
	}
	return owner
}

// nestObserver counts Do calls and re-entry attempts.
type nestObserver struct {
	doStarts, doRan, doNotRan, reentries atomic.Int64
}

func (o *nestObserver) observer() *lock.Observer {
	return &lock.Observer{
		DoStart: func(ctx context.Context, _ lock.DoStartInfo) context.Context {
			o.doStarts.Add(1)
			return ctx
		},
		DoDone: func(_ context.Context, e lock.DoDoneInfo) {
			if e.Ran {
				o.doRan.Add(1)
			} else {
				o.doNotRan.Add(1)
			}
		},
		Attempt: func(_ context.Context, e lock.AttemptInfo) {
			if e.Reentry {
				o.reentries.Add(1)
			}
		},
	}
}

// A Do three calls deep, each in its own function, runs under the first
// Do's owner: one owner on every node, its count the nesting depth; a
// LockContext's context nests the same way.
func TestNestAcrossFunctions(t *testing.T) {
	forNestMasters(t, func(t *testing.T, n int) {
		obs := &nestObserver{}
		c := newLockClient(t, n, lock.Options{Observer: obs.observer()})
		ctx := ctxFor(t, 20*time.Second)
		const name = "nest:functions"

		var owners []string
		var level func(ctx context.Context, depth int) error
		level = func(ctx context.Context, depth int) error {
			return c.Do(ctx, name, func(ctx context.Context) error {
				owners = append(owners, soleHolder(t, n, name, int64(depth)))
				if depth == 3 {
					return nil
				}
				return level(ctx, depth+1)
			})
		}
		require.NoError(t, level(ctx, 1))
		require.Len(t, owners, 3)
		require.Equal(t, owners[0], owners[1])
		require.Equal(t, owners[0], owners[2])
		requireFree(t, n, name, time.Second)
		require.EqualValues(t, 3, obs.doStarts.Load())
		require.EqualValues(t, 3, obs.doRan.Load())
		require.EqualValues(t, 2, obs.reentries.Load(), "the nested Dos re-entered")

		held, unlock, err := c.LockContext(ctx, name)
		require.NoError(t, err)
		owner := soleHolder(t, n, name, 1)
		require.NoError(t, c.Do(held, name, func(ctx context.Context) error {
			require.Equal(t, owner, soleHolder(t, n, name, 2))
			inner, innerUnlock, err := c.LockContext(ctx, name)
			require.NoError(t, err)
			require.Equal(t, owner, soleHolder(t, n, name, 3))
			require.NoError(t, inner.Err())
			require.NoError(t, innerUnlock())
			require.Error(t, inner.Err(), "the inner context ends at its unlock")
			return nil
		}))
		require.Equal(t, owner, soleHolder(t, n, name, 1))
		require.NoError(t, unlock())
		requireFree(t, n, name, time.Second)
		require.ErrorIs(t, unlock(), lock.ErrNotHeld, "a second unlock sends nothing")
	})
}

// Goroutines that inherit fn's context re-enter concurrently, each
// re-entry balanced by its own release; another Client stays out.
func TestNestGoroutinesInheritContext(t *testing.T) {
	forNestMasters(t, func(t *testing.T, n int) {
		c := newLockClient(t, n, lock.Options{})
		other := newLockClient(t, n, lock.Options{})
		ctx := ctxFor(t, 30*time.Second)
		const (
			name       = "nest:goroutines"
			goroutines = 6
			rounds     = 4
		)
		var inside, most, entries atomic.Int64
		err := c.Do(ctx, name, func(ctx context.Context) error {
			owner := soleHolder(t, n, name, 1)
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			for range goroutines {
				wg.Go(func() {
					for range rounds {
						err := c.Do(ctx, name, func(context.Context) error {
							entries.Add(1)
							now := inside.Add(1)
							for {
								m := most.Load()
								if now <= m || most.CompareAndSwap(m, now) {
									break
								}
							}
							time.Sleep(5 * time.Millisecond)
							inside.Add(-1)
							return nil
						})
						if err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				return err
			}
			ok, err := other.NewMutex(name).TryLock(ctx)
			require.NoError(t, err)
			require.False(t, ok, "another Client got the lock while it was held")
			require.Equal(t, owner, soleHolder(t, n, name, 1), "every re-entry released")
			return nil
		})
		require.NoError(t, err)
		require.EqualValues(t, goroutines*rounds, entries.Load())
		t.Logf("%d re-entries, at most %d at once", entries.Load(), most.Load())
		requireFree(t, n, name, time.Second)
	})
}

// An unrelated context gets a new owner, which waits until the holder's Do
// ends (woken by its release, well before the 30 s lease); so does the same
// name through another Client, even with fn's context's values. Another name with
// fn's context is another lock: a new owner, at once.
func TestNestUnrelatedContextWaits(t *testing.T) {
	forNestMasters(t, func(t *testing.T, n int) {
		c := newLockClient(t, n, lock.Options{})
		other := newLockClient(t, n, lock.Options{})
		ctx := ctxFor(t, 30*time.Second)
		const name = "nest:unrelated"
		const hold = 400 * time.Millisecond

		var released atomic.Int64 // UnixNano when the holder's fn returned
		type entry struct {
			who string
			at  time.Time
			err error
		}
		entries := make(chan entry, 2)
		var wg sync.WaitGroup
		err := c.Do(ctx, name, func(fnCtx context.Context) error {
			owner := soleHolder(t, n, name, 1)
			wg.Go(func() {
				err := c.Do(ctxFor(t, 20*time.Second), name, func(context.Context) error { return nil })
				entries <- entry{"unrelated context", time.Now(), err}
			})
			wg.Go(func() {
				// fn's values (its hold included) without its cancellation,
				// which would end this wait when the holder's fn returns.
				err := other.Do(context.WithoutCancel(fnCtx), name, func(context.Context) error { return nil })
				entries <- entry{"other Client", time.Now(), err}
			})
			// Another name, with fn's context: not this lock, no wait.
			start := time.Now()
			require.NoError(t, c.Do(fnCtx, name+":other", func(context.Context) error {
				soleHolder(t, n, name+":other", 1)
				return nil
			}))
			require.Less(t, time.Since(start), 5*time.Second)
			time.Sleep(hold)
			select {
			case e := <-entries:
				return fmt.Errorf("%s got in while the holder held the lock: %v", e.who, e.err)
			default:
			}
			require.Equal(t, owner, soleHolder(t, n, name, 1), "the waiters left nothing")
			released.Store(time.Now().UnixNano())
			return nil
		})
		require.NoError(t, err)
		wg.Wait()
		close(entries)
		for e := range entries {
			require.NoError(t, e.err, e.who)
			after := e.at.Sub(time.Unix(0, released.Load()))
			require.Positive(t, after, "%s ran before the holder's fn returned", e.who)
			require.Less(t, after, 10*time.Second, "%s woken by the release, not the lease", e.who)
		}
		requireFree(t, n, name, time.Second)
	})
}

// Once the Do that handed out a context has returned, a Do with that
// context fails with ErrNotHeld and takes nothing, even with the
// context's cancellation removed; the same after a LockContext's unlock.
func TestNestAfterOuterReturned(t *testing.T) {
	forNestMasters(t, func(t *testing.T, n int) {
		c := newLockClient(t, n, lock.Options{})
		ctx := ctxFor(t, 20*time.Second)
		const name = "nest:leaked"

		var leaked context.Context
		require.NoError(t, c.Do(ctx, name, func(fnCtx context.Context) error {
			leaked = fnCtx
			return nil
		}))
		requireFree(t, n, name, time.Second)
		ran := false
		for _, lc := range []context.Context{leaked, context.WithoutCancel(leaked)} {
			err := c.Do(lc, name, func(context.Context) error { ran = true; return nil })
			require.ErrorIs(t, err, lock.ErrNotHeld)
			_, _, err = c.LockContext(lc, name)
			require.ErrorIs(t, err, lock.ErrNotHeld)
		}
		require.False(t, ran, "fn ran for an ended hold")
		requireFree(t, n, name, 0)

		held, unlock, err := c.LockContext(ctx, name)
		require.NoError(t, err)
		require.NoError(t, unlock())
		err = c.Do(context.WithoutCancel(held), name, func(context.Context) error { ran = true; return nil })
		require.ErrorIs(t, err, lock.ErrNotHeld)
		require.False(t, ran)
		requireFree(t, n, name, 0)

		// A goroutine still re-entering when the outer fn returns: it either
		// got in before (and its own Do releases), or gives up; the lock is
		// free once both are done, never taken again by a fresh acquisition.
		for range 5 {
			done := make(chan error, 1)
			require.NoError(t, c.Do(ctx, name, func(fnCtx context.Context) error {
				go func() {
					done <- c.Do(context.WithoutCancel(fnCtx), name, func(context.Context) error {
						time.Sleep(20 * time.Millisecond)
						return nil
					})
				}()
				return nil
			}))
			if err := <-done; err != nil {
				require.ErrorIs(t, err, lock.ErrNotHeld)
			}
			requireFree(t, n, name, time.Second)
		}
	})
}

// A lost hold: fn's context ends with ErrLost, a nested Do gets ErrLost
// without running fn, and the outer Do's error wraps ErrLost.
func TestNestLostHold(t *testing.T) {
	forNestMasters(t, func(t *testing.T, n int) {
		c := shortLeaseClient(t, n)
		ctx := ctxFor(t, 20*time.Second)
		const name = "nest:lost"
		ran := false
		err := c.Do(ctx, name, func(fnCtx context.Context) error {
			require.NoError(t, c.ForceUnlock(ctx, name))
			select {
			case <-fnCtx.Done():
			case <-time.After(5 * shortLease):
				return errors.New("fn's context did not end on loss")
			}
			require.ErrorIs(t, context.Cause(fnCtx), lock.ErrLost)
			for _, nc := range []context.Context{fnCtx, context.WithoutCancel(fnCtx)} {
				err := c.Do(nc, name, func(context.Context) error { ran = true; return nil })
				require.ErrorIs(t, err, lock.ErrLost)
			}
			return nil
		})
		require.ErrorIs(t, err, lock.ErrLost)
		require.False(t, ran, "a nested Do ran on a lost hold")
		requireFree(t, n, name, 2*shortLease)
	})
}

// Close releases every hold, a Do's too: fn's context ends then, with
// ErrClosed as its cause, and a nested Do finds the Client closed.
func TestDoContextEndsAtClose(t *testing.T) {
	reset(t)
	c := newLockClient(t, 3, lock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	const name = "nest:close"
	err := c.Do(ctx, name, func(fnCtx context.Context) error {
		go func() { _ = c.Close() }()
		select {
		case <-fnCtx.Done():
		case <-time.After(10 * time.Second):
			return errors.New("fn's context did not end at Close")
		}
		require.ErrorIs(t, context.Cause(fnCtx), lock.ErrClosed)
		require.ErrorIs(t, c.Do(fnCtx, name, func(context.Context) error { return nil }), lock.ErrClosed)
		return nil
	})
	require.ErrorIs(t, err, lock.ErrClosed)
	requireFree(t, 3, name, 2*time.Second)
}
