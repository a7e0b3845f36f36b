package integration_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
)

// TestDoAllTakesEveryLockOrNone: DoAll runs fn with every lock of the list
// held (a name given twice taken once), and a Do inside it re-enters one of
// them; it takes none when one stays held by another owner until ctx ends,
// ends fn's context with ErrLost when one is lost, and refuses bad lists
// before taking anything.
func TestDoAllTakesEveryLockOrNone(t *testing.T) {
	forNestMasters(t, func(t *testing.T, n int) {
		c := shortLeaseClient(t, n)
		other := newLockClient(t, n, lock.Options{})
		ctx := ctxFor(t, 30*time.Second)
		names := []string{"all:b", "all:a", "all:b"}

		ran := false
		require.NoError(t, c.DoAll(ctx, names, func(ctx context.Context) error {
			ran = true
			soleHolder(t, n, "all:a", 1)
			soleHolder(t, n, "all:b", 1)
			return c.Do(ctx, "all:a", func(context.Context) error {
				soleHolder(t, n, "all:a", 2)
				return nil
			})
		}))
		require.True(t, ran)
		requireFree(t, n, "all:a", time.Second)
		requireFree(t, n, "all:b", time.Second)

		// One lock held elsewhere until ctx ends: fn does not run, and the
		// lock DoAll took first is given back.
		m := other.NewMutex("all:b")
		require.NoError(t, m.Lock(ctx))
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		err := c.DoAll(short, names, func(context.Context) error {
			t.Error("fn ran without every lock")
			return nil
		})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		requireFree(t, n, "all:a", time.Second)
		require.NoError(t, m.Unlock(ctx))

		// One lock lost: fn's context ends with ErrLost, and so does DoAll.
		err = c.DoAll(ctx, names, func(fnCtx context.Context) error {
			require.NoError(t, other.ForceUnlock(ctx, "all:a"))
			requireEndsWith(t, fnCtx, lock.ErrLost, 5*shortLease)
			return nil
		})
		require.ErrorIs(t, err, lock.ErrLost)
		requireFree(t, n, "all:a", 2*shortLease)
		requireFree(t, n, "all:b", 2*shortLease)

		for _, bad := range [][]string{nil, {}, {"all:a", ""}} {
			err := c.DoAll(ctx, bad, func(context.Context) error {
				t.Errorf("fn ran for %q", bad)
				return nil
			})
			require.ErrorIs(t, err, lock.ErrInvalidArgument, "%q", bad)
		}
		requireFree(t, n, "all:a", time.Second)
	})
}

// TestDoAllOverlappingSetsNeverWaitInACycle: Clients that take overlapping
// sets of locks, each given in its own order, all finish: DoAll takes every
// set in one order, so no two of them wait for each other in a cycle (taken
// in the order given, "x then y" against "y then x" would, until their ctx
// ended). No lock is ever held by two of them at once.
func TestDoAllOverlappingSetsNeverWaitInACycle(t *testing.T) {
	reset(t)
	const n, rounds = 3, 20
	sets := [][]string{{"cycle:x", "cycle:y"}, {"cycle:y", "cycle:x"}, {"cycle:z", "cycle:y", "cycle:x"}, {"cycle:z", "cycle:x"}}
	var mu sync.Mutex
	inside := map[string]int{}
	enter := func(set []string, delta int) error {
		mu.Lock()
		defer mu.Unlock()
		for _, name := range set {
			inside[name] += delta
			if inside[name] > 1 {
				return fmt.Errorf("%s held by two callers at once", name)
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(sets)*rounds)
	for _, set := range sets {
		c := newLockClient(t, n, lock.Options{})
		wg.Go(func() {
			for range rounds {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				errs <- c.DoAll(ctx, set, func(context.Context) error {
					err := enter(set, 1)
					time.Sleep(time.Millisecond)
					enter(set, -1)
					return err
				})
				cancel()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for _, name := range []string{"cycle:x", "cycle:y", "cycle:z"} {
		requireFree(t, n, name, time.Second)
	}
}
