package kinds

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
)

// testNodeTimeout is the NodeTimeout of tests that set none: -race on two
// busy cores makes loopback round trips of tens of milliseconds, and a first
// call through a failover client dials a sentinel, then the master.
const testNodeTimeout = 250 * time.Millisecond

// newLockClient returns a lock.Client over opts.Nodes, closed at the end of
// the test (its error checked).
func newLockClient(t *testing.T, opts lock.Options) *lock.Client {
	t.Helper()
	if opts.NodeTimeout == 0 {
		opts.NodeTimeout = testNodeTimeout
	}
	c, err := lock.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// closeLater closes go-redis clients at the end of the test, after the
// lock.Clients using them (cleanups run last-in first-out: call it first).
func closeLater[C interface{ Close() error }](t *testing.T, clients ...C) {
	t.Helper()
	t.Cleanup(func() {
		for _, c := range clients {
			_ = c.Close()
		}
	})
}

// universal converts concrete clients to Options.Nodes.
func universal[C redis.UniversalClient](clients ...C) []redis.UniversalClient {
	out := make([]redis.UniversalClient, len(clients))
	for i, c := range clients {
		out[i] = c
	}
	return out
}

// lockKey is the key of the lock name under the default prefix, for names
// without '}' or '%' (which relock escapes).
func lockKey(name string) string { return "relock:{" + name + "}" }

// exclusion counts holders inside a critical section: more than one at a
// time is a double holder.
type exclusion struct {
	inside, most, entries atomic.Int64
}

func (e *exclusion) enter() {
	n := e.inside.Add(1)
	e.entries.Add(1)
	for {
		m := e.most.Load()
		if n <= m || e.most.CompareAndSwap(m, n) {
			return
		}
	}
}

func (e *exclusion) leave() { e.inside.Add(-1) }

// holdCount reads owner's hold count of the lock name on one server
// (0 when absent).
func holdCount(ctx context.Context, t *testing.T, c redis.Cmdable, name, owner string) int64 {
	t.Helper()
	v, err := c.HGet(ctx, lockKey(name), owner).Int64()
	if err == redis.Nil {
		return 0
	}
	require.NoError(t, err)
	return v
}

// testCtx bounds a test's Redis calls.
func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// warm makes c contact every node (the identity check, then a read), so
// that connections, slot maps and script caches exist before the test
// proper, and fails if a node cannot be read within a few seconds. A first
// contact may take longer than one NodeTimeout on a busy machine: it is
// retried.
func warm(ctx context.Context, t *testing.T, c *lock.Client) {
	t.Helper()
	var last error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if last = readAll(ctx, c); last == nil {
			return
		}
	}
	t.Fatalf("nodes not answering: %v", last)
}

// readAll reads a lock on every node and returns the first failure.
func readAll(ctx context.Context, c *lock.Client) error {
	states, err := c.Inspect(ctx, "kinds-warm")
	if err != nil {
		return err
	}
	for _, st := range states {
		if st.Err != nil {
			return fmt.Errorf("node %d (%s): %w", st.Node, st.Addr, st.Err)
		}
	}
	return nil
}
