package integration_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/lua"
	"github.com/relock-go/relock/reentrant"
)

// runsScript reports whether cmd is a call of s: by SHA (EVALSHA), or by
// source (EVAL), as the first call of a script on a node goes.
func runsScript(cmd redis.Cmder, s *lua.Script) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	body := fmt.Sprint(args[1])
	return body == s.SHA() || body == s.Source()
}

// testNodeTimeout is generous: -race on two cores makes loopback round trips
// of tens of milliseconds now and then, and these tests are about outcomes.
const testNodeTimeout = 250 * time.Millisecond

// masters is how many nodes each quorum test runs against.
var masters = []int{1, 3, 5}

// forMasters runs f as a subtest for each cluster size the cluster can offer.
func forMasters(t *testing.T, f func(t *testing.T, n int)) {
	for _, n := range masters {
		if n > len(cluster.Nodes) {
			continue
		}
		t.Run(itoaName(n), func(t *testing.T) { f(t, n) })
	}
}

func itoaName(n int) string { return fmt.Sprintf("%d-masters", n) }

// newLockClient returns a lock.Client over the first n nodes of the cluster,
// through their default links, closed at the end of the test.
func newLockClient(t *testing.T, n int, opts lock.Options) *lock.Client {
	t.Helper()
	return newLockClientOver(t, cluster.Clients()[:n], opts)
}

// adaptiveTimeouts, given as NodeTimeout to newLockClient(Over), keeps the
// library's default: per-node timeouts adapted to the round trips.
const adaptiveTimeouts time.Duration = -1

func newLockClientOver(t *testing.T, nodes []redis.UniversalClient, opts lock.Options) *lock.Client {
	t.Helper()
	opts.Nodes = nodes
	switch opts.NodeTimeout {
	case 0:
		opts.NodeTimeout = testNodeTimeout
	case adaptiveTimeouts:
		opts.NodeTimeout = 0
	}
	c, err := lock.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// linkClients returns the clients of a link set, as lock.Options wants them.
func linkClients(links []*fixture.Link) []redis.UniversalClient {
	out := make([]redis.UniversalClient, len(links))
	for i, l := range links {
		out[i] = l.Client()
	}
	return out
}

// holdersOn reads the lock named name on the first n nodes directly (around
// any fault of the links): one map of owner → count per node.
func holdersOn(t *testing.T, n int, name string) []map[string]int64 {
	t.Helper()
	key, err := reentrant.NewKey("", name)
	require.NoError(t, err)
	out := make([]map[string]int64, n)
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		info, err := reentrant.NewNode(cluster.Nodes[i].Direct(), 0).Inspect(ctx, key)
		cancel()
		require.NoError(t, err, "inspect node %d", i)
		out[i] = info.Holders
	}
	return out
}

// requireFree asserts that no node of the first n holds the lock, waiting up
// to wait for background clean-ups to land.
func requireFree(t *testing.T, n int, name string, wait time.Duration) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		free := true
		for _, h := range holdersOn(t, n, name) {
			free = free && len(h) == 0
		}
		if free {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock %q still held on some node after %v: %v", name, wait, holdersOn(t, n, name))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// requireCounts asserts that every one of the given nodes holds name for
// owner with count.
func requireCounts(t *testing.T, nodes []int, name, owner string, count int64) {
	t.Helper()
	all := holdersOn(t, len(cluster.Nodes), name)
	for _, i := range nodes {
		require.Equal(t, map[string]int64{owner: count}, all[i], "node %d", i)
	}
}

// requireCountsSoon is requireCounts allowing a second for background
// repairs to land.
func requireCountsSoon(t *testing.T, nodes []int, name, owner string, count int64) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		all := holdersOn(t, len(cluster.Nodes), name)
		ok := true
		for _, i := range nodes {
			ok = ok && len(all[i]) == 1 && all[i][owner] == count
		}
		if ok || time.Now().After(deadline) {
			requireCounts(t, nodes, name, owner, count)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// timerLag measures how late this process's timers run while a test waits
// for a timed event: on a loaded machine no code can act sooner than the
// runtime lets it run, so a check that a signal came "no later than its
// deadline" allows the lateness measured beside it, and no more.
type timerLag struct {
	stop, done chan struct{}
	worst      atomic.Int64 // nanoseconds
}

// startTimerLag starts sampling: a 2 ms sleep, again and again, each
// measured against the clock.
func startTimerLag() *timerLag {
	l := &timerLag{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		const nap = 2 * time.Millisecond
		for {
			select {
			case <-l.stop:
				return
			default:
			}
			start := time.Now()
			time.Sleep(nap)
			if late := int64(time.Since(start) - nap); late > l.worst.Load() {
				l.worst.Store(late)
			}
		}
	}()
	return l
}

// Worst stops sampling and returns the worst lateness seen.
func (l *timerLag) Worst() time.Duration {
	close(l.stop)
	<-l.done
	return time.Duration(l.worst.Load())
}
