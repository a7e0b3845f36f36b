package integration_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
)

// Reentrancy through the context for the lock family: DoRead/DoWrite (and
// their LockContext forms), DoFair, Semaphore.Do; against 1 and 3 masters
// (forNestMasters, nest_test.go).

// outsider is a call made with a context unrelated to any scope, in a
// goroutine: it must wait while the holder holds, and get in after.
type outsider struct {
	in  chan time.Time // when its fn ran
	err chan error
}

// startOutsider runs do with a fresh context bounded at 20 s; do calls its
// argument inside its critical section.
func startOutsider(t *testing.T, do func(ctx context.Context, inside func()) error) *outsider {
	o := &outsider{in: make(chan time.Time, 1), err: make(chan error, 1)}
	ctx := ctxFor(t, 20*time.Second)
	go func() { o.err <- do(ctx, func() { o.in <- time.Now() }) }()
	return o
}

// requireWaiting asserts that the outsider has not got in after a while.
func (o *outsider) requireWaiting(t *testing.T) {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	select {
	case at := <-o.in:
		t.Fatalf("an unrelated context got in while the holder held, at %v", at)
	case err := <-o.err:
		t.Fatalf("an unrelated context returned while the holder held: %v", err)
	default:
	}
}

// requireInAfter asserts that the outsider got in after released, woken by
// the release (well before the 30 s lease), and returned no error.
func (o *outsider) requireInAfter(t *testing.T, released time.Time) {
	t.Helper()
	select {
	case err := <-o.err:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("it never returned")
	}
	select {
	case at := <-o.in:
		require.True(t, at.After(released), "it got in before the release")
		require.Less(t, at.Sub(released), 10*time.Second, "woken by the release, not the lease")
	default:
		t.Fatal("it returned without getting in")
	}
}

// readsOn asserts that each of the first n nodes has exactly the read
// holds want (owner → count).
func readsOn(t *testing.T, n int, name string, want map[string]string) {
	t.Helper()
	for i := range n {
		require.Equal(t, want, readersOn(t, i, name), "node %d: read holds", i)
	}
}

// A DoRead nested in a DoWrite's fn is a read hold of the writer (a
// downgrade): it does not wait, the write hold stays, other owners stay
// out; a DoWrite nested there (or directly in the write scope) re-enters
// the write hold. Through WriteLockContext, the read hold outlives the
// write: readers of other owners come in, writers do not.
func TestNestRWReadInWriteDowngrades(t *testing.T) {
	forNestMasters(t, func(t *testing.T, n int) {
		c := newLockClient(t, n, lock.Options{})
		other := newLockClient(t, n, lock.Options{})
		ctx := ctxFor(t, 30*time.Second)
		const name = "nest:rw:down"

		require.NoError(t, c.DoWrite(ctx, name, func(wctx context.Context) error {
			owner := soleHolder(t, n, name, 1)
			require.NoError(t, c.DoWrite(wctx, name, func(context.Context) error {
				require.Equal(t, owner, soleHolder(t, n, name, 2), "a write in a write re-enters")
				return nil
			}))
			start := time.Now()
			require.NoError(t, c.DoRead(wctx, name, func(rctx context.Context) error {
				require.Less(t, time.Since(start), 5*time.Second, "a writer's read does not wait")
				readsOn(t, n, name, map[string]string{owner: "1"})
				require.Equal(t, owner, soleHolder(t, n, name, 1), "the write hold stays")
				ok, err := other.NewRWMutex(name).TryRLock(ctx)
				require.NoError(t, err)
				require.False(t, ok, "another owner reads beside the writer")
				require.NoError(t, c.DoRead(rctx, name, func(context.Context) error {
					readsOn(t, n, name, map[string]string{owner: "2"})
					return nil
				}))
				// A write through the read scope of a writer: the owner
				// writes, so it re-enters.
				require.NoError(t, c.DoWrite(rctx, name, func(context.Context) error {
					require.Equal(t, owner, soleHolder(t, n, name, 2))
					return nil
				}))
				readsOn(t, n, name, map[string]string{owner: "1"})
				return nil
			}))
			requireNoReaders(t, n, name, time.Second)
			require.Equal(t, owner, soleHolder(t, n, name, 1))
			return nil
		}))
		requireFree(t, n, name, time.Second)
		requireNoReaders(t, n, name, time.Second)

		// The LockContext forms: the read hold taken in the write scope
		// outlives the write (its context, derived from the write's, does
		// not).
		wheld, wunlock, err := c.WriteLockContext(ctx, name)
		require.NoError(t, err)
		owner := soleHolder(t, n, name, 1)
		rheld, runlock, err := c.ReadLockContext(wheld, name)
		require.NoError(t, err)
		require.NoError(t, wunlock())
		requireFree(t, n, name, 0)
		readsOn(t, n, name, map[string]string{owner: "1"})
		require.Error(t, rheld.Err(), "the read's context ends with the write's")
		reader := other.NewRWMutex(name)
		ok, err := reader.TryRLock(ctx)
		require.NoError(t, err)
		require.True(t, ok, "a reader of another owner beside the downgraded one")
		require.NoError(t, reader.RUnlock(ctx))
		ok, err = other.NewRWMutex(name).TryLock(ctx)
		require.NoError(t, err)
		require.False(t, ok, "a writer while the downgraded owner reads")
		require.ErrorIs(t, c.DoWrite(rheld, name, func(context.Context) error { return nil }), lock.ErrUpgrade,
			"the downgraded owner only reads now")
		require.NoError(t, runlock())
		requireNoReaders(t, n, name, time.Second)
		require.ErrorIs(t, runlock(), lock.ErrNotHeld)
	})
}

// A DoWrite (or WriteLockContext) in a DoRead's fn returns ErrUpgrade at
// once, without running fn, and changes nothing on any node; so does one
// in a goroutine that inherited the context. A DoRead there re-enters.
func TestNestRWWriteInReadIsUpgrade(t *testing.T) {
	forNestMasters(t, func(t *testing.T, n int) {
		c := newLockClient(t, n, lock.Options{})
		ctx := ctxFor(t, 20*time.Second)
		const name = "nest:rw:up"
		ran := false
		require.NoError(t, c.DoRead(ctx, name, func(rctx context.Context) error {
			owners := readersOn(t, 0, name)
			require.Len(t, owners, 1)
			start := time.Now()
			require.ErrorIs(t, c.DoWrite(rctx, name, func(context.Context) error { ran = true; return nil }), lock.ErrUpgrade)
			_, _, err := c.WriteLockContext(rctx, name)
			require.ErrorIs(t, err, lock.ErrUpgrade)
			errc := make(chan error, 1)
			go func() { errc <- c.DoWrite(rctx, name, func(context.Context) error { ran = true; return nil }) }()
			require.ErrorIs(t, <-errc, lock.ErrUpgrade)
			require.Less(t, time.Since(start), 2*time.Second, "refused at once")
			requireFree(t, n, name, 0) // no write hold anywhere
			readsOn(t, n, name, owners)
			return c.DoRead(rctx, name, func(context.Context) error {
				for o := range owners {
					readsOn(t, n, name, map[string]string{o: "2"})
				}
				return nil
			})
		}))
		require.False(t, ran, "fn ran for a refused upgrade")
		requireNoReaders(t, n, name, time.Second)
		requireFree(t, n, name, 0)
	})
}

// Unrelated contexts get new owners: a reader shares with a reader at
// once; a writer waits for the readers, and a reader and a writer wait for
// a writer, each woken by the release.
func TestNestRWUnrelatedContextWaits(t *testing.T) {
	forNestMasters(t, func(t *testing.T, n int) {
		c := newLockClient(t, n, lock.Options{})
		ctx := ctxFor(t, 60*time.Second)
		const name = "nest:rw:unrelated"
		writeOutsider := func(t *testing.T) *outsider {
			return startOutsider(t, func(ctx context.Context, inside func()) error {
				return c.DoWrite(ctx, name, func(context.Context) error { inside(); return nil })
			})
		}
		readOutsider := func(t *testing.T) *outsider {
			return startOutsider(t, func(ctx context.Context, inside func()) error {
				return c.DoRead(ctx, name, func(context.Context) error { inside(); return nil })
			})
		}

		var released time.Time
		var w *outsider
		require.NoError(t, c.DoRead(ctx, name, func(rctx context.Context) error {
			r := readOutsider(t)
			select {
			case <-r.in:
			case <-time.After(10 * time.Second):
				t.Fatal("a reader of another context did not share the read")
			}
			require.NoError(t, <-r.err)
			w = writeOutsider(t)
			w.requireWaiting(t)
			released = time.Now()
			return nil
		}))
		w.requireInAfter(t, released)

		var r, w2 *outsider
		require.NoError(t, c.DoWrite(ctx, name, func(context.Context) error {
			r, w2 = readOutsider(t), writeOutsider(t)
			r.requireWaiting(t)
			w2.requireWaiting(t)
			released = time.Now()
			return nil
		}))
		// One of them gets in first, the other after it.
		r.requireInAfter(t, released)
		w2.requireInAfter(t, released)
		requireFree(t, n, name, time.Second)
		requireNoReaders(t, n, name, time.Second)
	})
}

// DoFair re-enters as Do does, and shares the Mutex's scope (the same lock
// data): a Do in a DoFair's fn, and a DoFair in a Do's, re-enter the same
// owner. An unrelated context waits its turn and is woken by the release.
func TestNestFairReenters(t *testing.T) {
	forNestMasters(t, func(t *testing.T, n int) {
		c := newLockClient(t, n, lock.Options{})
		ctx := ctxFor(t, 30*time.Second)
		const name = "nest:fair"
		var o *outsider
		var released time.Time
		require.NoError(t, c.DoFair(ctx, name, func(fctx context.Context) error {
			owner := soleHolder(t, n, name, 1)
			o = startOutsider(t, func(ctx context.Context, inside func()) error {
				return c.DoFair(ctx, name, func(context.Context) error { inside(); return nil })
			})
			require.NoError(t, c.DoFair(fctx, name, func(ictx context.Context) error {
				require.Equal(t, owner, soleHolder(t, n, name, 2))
				return c.Do(ictx, name, func(context.Context) error {
					require.Equal(t, owner, soleHolder(t, n, name, 3))
					return nil
				})
			}))
			held, unlock, err := c.FairLockContext(fctx, name)
			require.NoError(t, err)
			require.Equal(t, owner, soleHolder(t, n, name, 2))
			require.NoError(t, held.Err())
			require.NoError(t, unlock())
			o.requireWaiting(t)
			require.Equal(t, owner, soleHolder(t, n, name, 1))
			released = time.Now()
			return nil
		}))
		o.requireInAfter(t, released)
		requireFree(t, n, name, time.Second)

		require.NoError(t, c.Do(ctx, name, func(mctx context.Context) error {
			owner := soleHolder(t, n, name, 1)
			return c.DoFair(mctx, name, func(context.Context) error {
				require.Equal(t, owner, soleHolder(t, n, name, 2), "a DoFair in a Do re-enters")
				return nil
			})
		}))
		requireFree(t, n, name, time.Second)
	})
}

// Semaphore.Do: a nested Do asking for at most the permits the scope
// holds re-enters its owner (no more permits taken on any node); asking
// for more is refused at once with ErrInvalidArgument; an unrelated
// context is a new owner that waits for free permits, woken by the
// release.
func TestNestSemaphoreRule(t *testing.T) {
	forNestMasters(t, func(t *testing.T, n int) {
		c := newLockClient(t, n, lock.Options{})
		other := newLockClient(t, n, lock.Options{})
		ctx := ctxFor(t, 30*time.Second)
		const name = "nest:sem"
		s := newSemaphore(t, c, name, 3)
		var o *outsider
		var released time.Time
		require.NoError(t, s.Do(ctx, 2, func(sctx context.Context) error {
			held := permitsOn(t, n, name)
			require.Len(t, held[0], 1)
			var owner string
			for o := range held[0] {
				owner = o
			}
			for i, h := range held {
				require.Equal(t, map[string]int64{owner: 2}, h, "node %d", i)
			}
			theirs := newSemaphore(t, other, name, 3)
			o = startOutsider(t, func(ctx context.Context, inside func()) error {
				return theirs.Do(ctx, 2, func(context.Context) error { inside(); return nil })
			})
			for _, k := range []int{1, 2} {
				require.NoError(t, s.Do(sctx, k, func(ictx context.Context) error {
					require.Equal(t, held, permitsOn(t, n, name), "a nested Do of %d takes nothing more", k)
					// And through another handle of the name, a level deeper.
					return newSemaphore(t, c, name, 3).Do(ictx, 1, func(context.Context) error {
						require.Equal(t, held, permitsOn(t, n, name))
						return nil
					})
				}))
			}
			start := time.Now()
			err := s.Do(sctx, 3, func(context.Context) error { return nil })
			require.ErrorIs(t, err, lock.ErrInvalidArgument)
			require.Contains(t, err.Error(), "inside a scope holding 2")
			require.Less(t, time.Since(start), 2*time.Second, "refused at once")
			inner, release, err := s.AcquireContext(sctx, 1)
			require.NoError(t, err)
			require.NoError(t, inner.Err())
			require.NoError(t, release())
			require.ErrorIs(t, release(), lock.ErrNotHeld)
			require.Equal(t, held, permitsOn(t, n, name), "the permits stay until the outer Do returns")
			o.requireWaiting(t)
			released = time.Now()
			return nil
		}))
		o.requireInAfter(t, released)
		requireNoPermitsSoon(t, n, name, time.Second)

		var leaked context.Context
		require.NoError(t, s.Do(ctx, 1, func(sctx context.Context) error { leaked = sctx; return nil }))
		require.ErrorIs(t, s.Do(context.WithoutCancel(leaked), 1, func(context.Context) error { return nil }), lock.ErrNotHeld)
		requireNoPermitsSoon(t, n, name, 0)
	})
}

// Goroutines that inherit a write scope's context re-enter it, and their
// reads are read holds of the writer, each balanced by its own release.
func TestNestRWGoroutinesInheritContext(t *testing.T) {
	forNestMasters(t, func(t *testing.T, n int) {
		c := newLockClient(t, n, lock.Options{})
		ctx := ctxFor(t, 30*time.Second)
		const name = "nest:rw:goroutines"
		require.NoError(t, c.DoWrite(ctx, name, func(wctx context.Context) error {
			owner := soleHolder(t, n, name, 1)
			errc := make(chan error, 8)
			for i := range cap(errc) {
				go func() {
					do := c.DoRead
					if i%2 == 0 {
						do = c.DoWrite
					}
					errc <- do(wctx, name, func(context.Context) error {
						time.Sleep(5 * time.Millisecond)
						return nil
					})
				}()
			}
			for range cap(errc) {
				require.NoError(t, <-errc)
			}
			require.Equal(t, owner, soleHolder(t, n, name, 1), "every write re-entry released")
			requireNoReaders(t, n, name, time.Second)
			return nil
		}))
		requireFree(t, n, name, time.Second)
	})
}

// requireEndsWith asserts that a scope's context ends within d, with cause.
func requireEndsWith(t *testing.T, held context.Context, cause error, d time.Duration) {
	t.Helper()
	requireClosedWithin(t, held.Done(), fmt.Sprintf("the scope's context (want cause %v)", cause), d)
	require.ErrorIs(t, context.Cause(held), cause)
}

// A write scope whose hold is lost (force-unlocked): fn's context ends with
// ErrLost, a nested DoWrite or DoRead returns ErrLost without running, and
// DoWrite's error wraps ErrLost. Close ends a read scope's and a semaphore
// scope's contexts with ErrClosed, releasing their holds.
func TestNestFamilyLostAndClosed(t *testing.T) {
	forNestMasters(t, func(t *testing.T, n int) {
		c := shortLeaseClient(t, n)
		ctx := ctxFor(t, 20*time.Second)
		const name = "nest:rw:lost"
		ran := false
		err := c.DoWrite(ctx, name, func(wctx context.Context) error {
			require.NoError(t, c.ForceUnlock(ctx, name))
			requireEndsWith(t, wctx, lock.ErrLost, 5*shortLease)
			for _, do := range []func(context.Context, string, func(context.Context) error) error{c.DoWrite, c.DoRead} {
				err := do(context.WithoutCancel(wctx), name, func(context.Context) error { ran = true; return nil })
				require.ErrorIs(t, err, lock.ErrLost)
			}
			return nil
		})
		require.ErrorIs(t, err, lock.ErrLost)
		require.False(t, ran, "a nested call ran on a lost hold")
		requireFree(t, n, name, 2*shortLease)
		requireNoReaders(t, n, name, 2*shortLease)

		closing := newLockClient(t, n, lock.Options{})
		s := newSemaphore(t, closing, name+":sem", 2)
		err = closing.DoRead(ctx, name, func(rctx context.Context) error {
			return s.Do(rctx, 1, func(sctx context.Context) error {
				go func() { _ = closing.Close() }()
				requireEndsWith(t, sctx, lock.ErrClosed, 10*time.Second)
				requireEndsWith(t, rctx, lock.ErrClosed, 10*time.Second)
				return nil
			})
		})
		require.ErrorIs(t, err, lock.ErrClosed)
		requireNoReaders(t, n, name, 2*time.Second)
		requireNoPermitsSoon(t, n, name+":sem", 2*time.Second)
	})
}
