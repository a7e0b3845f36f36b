package integration_test

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/integration/fixture"
)

// fxFaultTimeout bounds one command expected to time out.
const fxFaultTimeout = 300 * time.Millisecond

func fxCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// isTimeout reports whether err is a deadline: the context's or the socket's.
func fxIsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// requireTimeout runs cmd with a fxFaultTimeout deadline and requires that it
// times out.
func fxRequireTimeout(t *testing.T, what string, cmd func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fxFaultTimeout)
	defer cancel()
	start := time.Now()
	err := cmd(ctx)
	require.Errorf(t, err, "%s: want a timeout, got an answer", what)
	require.Truef(t, fxIsTimeout(err), "%s: want a timeout, got %v", what, err)
	require.GreaterOrEqualf(t, time.Since(start), fxFaultTimeout/2, "%s: failed too early: %v", what, err)
}

// fxRequireRefused requires that a PING to addr is refused. It asks through
// a client of its own with the fixture's settings (FixtureOptions), whatever
// RELOCK_TEST_CLIENTS says: go-redis's default retries would turn the
// refusal into the ctx's deadline, and this checks what the fault looks like
// on the wire, not how a client reports it.
func fxRequireRefused(t *testing.T, addr string) {
	t.Helper()
	c := redis.NewClient(fixture.FixtureOptions(addr))
	defer c.Close()
	err := c.Ping(fxCtx(t, time.Second)).Err()
	require.Error(t, err)
	require.Truef(t, errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "connection refused"),
		"want connection refused, got %v", err)
}

func fxRequirePing(t *testing.T, c interface {
	Ping(context.Context) *redis.StatusCmd
}) {
	t.Helper()
	require.NoError(t, c.Ping(fxCtx(t, time.Second)).Err())
}

func TestFixtureStopRefusesAndStartAnswersAtSameAddr(t *testing.T) {
	c := reset(t)
	n := c.Nodes[0]
	addr := n.Addr()
	require.NoError(t, c.Warm(fxCtx(t, 30*time.Second)))

	require.NoError(t, n.Stop(fxCtx(t, 10*time.Second)))
	fxRequireRefused(t, n.Addr())
	// Through the link the proxy accepts, cannot reach the node and hangs up:
	// an error at once, not a timeout (asked without retries, as in
	// fxRequireRefused).
	viaLink := redis.NewClient(fixture.FixtureOptions(n.Link().Addr()))
	defer viaLink.Close()
	start := time.Now()
	err := viaLink.Ping(fxCtx(t, time.Second)).Err()
	require.Error(t, err)
	require.False(t, fxIsTimeout(err), "want a fast failure through the link, got %v", err)
	require.Less(t, time.Since(start), 500*time.Millisecond)
	fxRequirePing(t, c.Nodes[1].Direct())

	require.NoError(t, n.Start(fxCtx(t, 10*time.Second)))
	require.Equal(t, addr, n.Addr())
	fxRequirePing(t, n.Direct())
	fxRequirePing(t, n.Link().Client())
	fxRequirePing(t, redis.NewClient(fixture.ClientOptions(addr)))
}

func TestFixtureCrashLosesData(t *testing.T) {
	c := reset(t)
	n := c.Nodes[1]
	ctx := fxCtx(t, 10*time.Second)
	require.NoError(t, n.Direct().Set(ctx, "k", "v", 0).Err())

	require.NoError(t, n.Crash(ctx))
	fxRequireRefused(t, n.Addr())
	require.NoError(t, n.Start(ctx))

	_, err := n.Direct().Get(ctx, "k").Result()
	require.ErrorIs(t, err, redis.Nil)
	require.NoError(t, n.Link().Client().Set(ctx, "k", "v2", 0).Err())
}

func TestFixtureRestartWithDelay(t *testing.T) {
	c := reset(t)
	n := c.Nodes[2]
	addr := n.Addr()
	// Long enough that the container stop Restart waits for (slow on a
	// loaded machine) still ends well before the delay does.
	const delay = 3 * time.Second
	start := time.Now()
	require.NoError(t, n.Restart(fxCtx(t, 5*time.Second), delay))
	require.Less(t, time.Since(start), delay/2, "Restart with a delay must return at once")

	fxRequireRefused(t, n.Addr())
	time.Sleep(delay / 2)
	fxRequireRefused(t, n.Addr())

	require.NoError(t, n.Wait(fxCtx(t, 20*time.Second)))
	require.GreaterOrEqual(t, time.Since(start), delay)
	require.Equal(t, addr, n.Addr())
	fxRequirePing(t, n.Direct())
	fxRequirePing(t, n.Link().Client())
	require.NoError(t, n.Wait(fxCtx(t, time.Second)), "a second Wait returns nil")
}

func TestFixturePauseTimesOutOldAndNewConnections(t *testing.T) {
	c := reset(t)
	n := c.Nodes[0]
	require.NoError(t, c.Warm(fxCtx(t, 30*time.Second)))

	require.NoError(t, n.Pause(fxCtx(t, 5*time.Second)))
	fxRequireTimeout(t, "link client (warm connections)", func(ctx context.Context) error {
		return n.Link().Client().Ping(ctx).Err()
	})
	fxRequireTimeout(t, "direct client", func(ctx context.Context) error {
		return n.Direct().Ping(ctx).Err()
	})
	fresh := n.Link().NewClient()
	fxRequireTimeout(t, "new connection through the link", func(ctx context.Context) error {
		return fresh.Ping(ctx).Err()
	})
	freshDirect := redis.NewClient(fixture.ClientOptions(n.Addr()))
	defer freshDirect.Close()
	fxRequireTimeout(t, "new direct connection", func(ctx context.Context) error {
		return freshDirect.Ping(ctx).Err()
	})
	fxRequirePing(t, c.Nodes[1].Link().Client())

	require.NoError(t, n.Unpause(fxCtx(t, 5*time.Second)))
	fxRequirePing(t, n.Link().Client())
	fxRequirePing(t, n.Direct())
	fxRequirePing(t, fresh)
	fxRequirePing(t, freshDirect)
}

func TestFixturePartitionTimesOutAndHealAnswers(t *testing.T) {
	c := reset(t)
	n := c.Nodes[1]
	require.NoError(t, c.Warm(fxCtx(t, 30*time.Second)))
	// A connection held open across the fault: toxics apply to it too.
	held := n.Link().Client().Conn()
	defer held.Close()
	fxRequirePing(t, held)

	require.NoError(t, n.Partition())
	fxRequireTimeout(t, "held connection", func(ctx context.Context) error { return held.Ping(ctx).Err() })
	fxRequireTimeout(t, "pooled connection", func(ctx context.Context) error {
		return n.Link().Client().Ping(ctx).Err()
	})
	fresh := n.Link().NewClient()
	fxRequireTimeout(t, "new connection", func(ctx context.Context) error { return fresh.Ping(ctx).Err() })
	// The node itself still serves everyone else.
	fxRequirePing(t, n.Direct())
	fxRequirePing(t, c.Nodes[0].Link().Client())

	require.NoError(t, n.Heal())
	fxRequirePing(t, n.Link().Client())
	fxRequirePing(t, fresh)
	// Every pooled connection of the link was closed by the heal; none of them
	// may reach a command.
	require.NoError(t, n.Link().Warm(fxCtx(t, 30*time.Second), fixture.WarmConns))
}

func TestFixtureDropRepliesRunsTheCommand(t *testing.T) {
	c := reset(t)
	n := c.Nodes[2]
	require.NoError(t, c.Warm(fxCtx(t, 30*time.Second)))

	require.NoError(t, n.DropReplies())
	fxRequireTimeout(t, "SET through the link", func(ctx context.Context) error {
		return n.Link().Client().Set(ctx, "k", "v", 0).Err()
	})
	v, err := n.Direct().Get(fxCtx(t, time.Second), "k").Result()
	require.NoError(t, err)
	require.Equal(t, "v", v, "the command ran on the node")

	require.NoError(t, n.Heal())
	require.NoError(t, n.Link().Warm(fxCtx(t, 30*time.Second), fixture.WarmConns))
	v, err = n.Link().Client().Get(fxCtx(t, time.Second), "k").Result()
	require.NoError(t, err)
	require.Equal(t, "v", v)
}

func TestFixtureSlowDelaysReplies(t *testing.T) {
	c := reset(t)
	n := c.Nodes[0]
	require.NoError(t, c.Warm(fxCtx(t, 30*time.Second)))
	const latency = 100 * time.Millisecond

	require.NoError(t, n.Slow(latency))
	for range 3 {
		start := time.Now()
		fxRequirePing(t, n.Link().Client())
		require.GreaterOrEqual(t, time.Since(start), latency)
	}
	// Slow again replaces the latency.
	require.NoError(t, n.Slow(2*latency))
	start := time.Now()
	fxRequirePing(t, n.Link().Client())
	require.GreaterOrEqual(t, time.Since(start), 2*latency)

	require.NoError(t, n.Heal())
	start = time.Now()
	fxRequirePing(t, n.Link().Client())
	require.Less(t, time.Since(start), latency, "Heal removes the latency")
}

func TestFixtureNewLinksArePartitionedIndependently(t *testing.T) {
	c := reset(t)
	b, err := c.NewLinks()
	require.NoError(t, err)
	require.Len(t, b, len(c.Nodes))
	for i, l := range b {
		require.Same(t, c.Nodes[i], l.Node())
		require.NotEqual(t, c.Nodes[i].Link().Addr(), l.Addr())
	}
	require.NoError(t, c.Warm(fxCtx(t, 30*time.Second)))

	for _, l := range b {
		require.NoError(t, l.Partition())
	}
	for i, l := range b {
		fxRequireTimeout(t, "link set B", func(ctx context.Context) error { return l.Client().Ping(ctx).Err() })
		fxRequirePing(t, c.Clients()[i])
	}

	// Reset heals every set, and skips clients a test closed itself.
	require.NoError(t, b[0].NewClient().Close())
	reset(t)
	for _, l := range b {
		fxRequirePing(t, l.Client())
	}
}

func TestFixtureResetRestoresEverything(t *testing.T) {
	c := reset(t)
	ctx := fxCtx(t, 20*time.Second)
	for _, d := range c.Direct() {
		require.NoError(t, d.Set(ctx, "k", "v", 0).Err())
	}
	require.NoError(t, c.Nodes[0].Partition())
	require.NoError(t, c.Nodes[1].Pause(ctx))
	const delay = 5 * time.Second
	require.NoError(t, c.Nodes[2].Restart(ctx, delay))

	start := time.Now()
	c = reset(t)
	t.Logf("reset after faults took %v", time.Since(start))
	require.Less(t, time.Since(start), delay, "Reset cuts a pending restart delay short")
	for i, cl := range c.Clients() {
		n, err := cl.DBSize(ctx).Result()
		require.NoErrorf(t, err, "node%d", i)
		require.Zerof(t, n, "node%d is not empty", i)
	}
	for _, d := range c.Direct() {
		fxRequirePing(t, d)
	}
}

func TestFixtureNumGoroutineLeavesOutProxies(t *testing.T) {
	c := reset(t)
	links, err := c.NewLinks()
	require.NoError(t, err)
	before, beforeAll := fixture.NumGoroutine(), runtime.NumGoroutine()
	for _, l := range links {
		require.NoError(t, l.Warm(fxCtx(t, 30*time.Second), fixture.WarmConns))
	}
	after, afterAll := fixture.NumGoroutine(), runtime.NumGoroutine()
	t.Logf("goroutines: all %d -> %d, without proxies %d -> %d", beforeAll, afterAll, before, after)
	require.GreaterOrEqual(t, afterAll-beforeAll, len(links)*fixture.WarmConns*4, "proxied connections cost goroutines")
	require.Less(t, after-before, 5, "NumGoroutine leaves the proxies' goroutines out")
}
