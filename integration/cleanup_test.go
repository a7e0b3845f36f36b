package integration_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
)

// TestReleaseThroughALinkSlowerThanTheTimeoutLands: a node whose link delays
// every request longer than the Client waits for a release (fixed
// NodeTimeout 100 ms: a release waits 400 ms), and which lost its scripts
// (as after a restart), misses the Unlock, which a quorum confirms at once:
// the release's EVALSHA meets NOSCRIPT after the wait, and the call that
// would send the script is never written. The background clean-up retries,
// each time on a new connection (a timeout costs the connection), which
// pays the delay for HELLO before it writes anything; it doubles its
// round's timeout after each one that ran out, so its release lands there
// long before the lease would have freed the node. With the release timeout
// kept, the lock stayed on the node for its whole 30 s lease. The go-redis
// clients honour ctx deadlines and otherwise wait 3 s for a reply, as
// go-redis does by default.
func TestReleaseThroughALinkSlowerThanTheTimeoutLands(t *testing.T) {
	c := reset(t)
	ctx := ctxFor(t, 60*time.Second)
	const name = "cleanup-slow-link"
	links, err := c.NewLinks()
	require.NoError(t, err)
	nodes := make([]redis.UniversalClient, 3)
	for i, l := range links[:3] {
		nodes[i] = l.NewClient(func(o *redis.Options) { o.ReadTimeout, o.WriteTimeout = 3*time.Second, 3*time.Second })
	}
	client := newLockClientOver(t, nodes, lock.Options{NodeTimeout: 100 * time.Millisecond})
	m := client.NewMutex(name)
	require.NoError(t, m.Lock(ctx)) // 30 s lease
	const slow, delay = 2, 500 * time.Millisecond
	require.NoError(t, c.Nodes[slow].Direct().ScriptFlush(ctx).Err(), "as after a restart")
	require.NoError(t, links[slow].DelayRequests(delay))
	defer func() { require.NoError(t, links[slow].Heal()) }()

	released := time.Now()
	require.NoError(t, m.Unlock(ctx), "a quorum of the nodes released")
	require.NotEmpty(t, holdersOn(t, 3, name)[slow], "the Unlock's own release did not reach the slow node")
	requireFree(t, 3, name, 15*time.Second)
	t.Logf("the release reached the node behind a %v link %v after Unlock", delay, time.Since(released).Round(time.Millisecond))
}
