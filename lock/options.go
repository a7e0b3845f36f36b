package lock

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/reentrant"
)

// Defaults of the Options fields left zero.
const (
	DefaultLease            = 30 * time.Second
	DefaultNodeTimeout      = 50 * time.Millisecond
	DefaultClockDriftFactor = 0.01
	DefaultRetryDelay       = 20 * time.Millisecond

	// minLeaseToTimeout is how many node timeouts a lease must span: a lease
	// barely above the timeout would leave no validity after a slow round.
	minLeaseToTimeout = 10
	// driftFloor is added to every drift allowance (Redlock's 2 ms).
	driftFloor = 2 * time.Millisecond
)

// Options configure a Client. Only Nodes is required.
type Options struct {
	// Nodes are the independent Redis masters the lock lives on: one for
	// single-instance mode, or an odd number (3, 5) for a Redlock quorum of
	// len(Nodes)/2+1. Each must be a different server. The Client does not
	// close them.
	Nodes []redis.UniversalClient

	// KeyPrefix namespaces every key relock writes ("relock" when empty).
	KeyPrefix string

	// Lease is the lease of locks taken without an explicit one; the
	// watchdog renews them every Lease/3 while they are held. Default 30s.
	// It must be at least 10 × NodeTimeout.
	Lease time.Duration

	// NodeTimeout bounds every call to one node, whatever the go-redis
	// client's own timeouts are. Default 50ms.
	NodeTimeout time.Duration

	// ClockDriftFactor is the share of a lease allowed for clock drift
	// between the client and the nodes, in [0, 0.5). Zero means the default,
	// 0.01; the drift allowance is Lease × factor + 2 ms.
	ClockDriftFactor float64

	// RetryDelay is the mean of the random delay between attempts that fail
	// for lack of a quorum (nodes down or slow). Default 20ms.
	RetryDelay time.Duration

	// Logger receives relock's diagnostics (quorum failures, losses,
	// background clean-ups). Default: discard.
	Logger *slog.Logger
}

// withDefaults validates o and fills in the zero fields. The error says which
// option is wrong and why, and wraps ErrInvalidArgument.
func (o Options) withDefaults() (Options, error) {
	if len(o.Nodes) == 0 {
		return o, invalid("Nodes", "no Redis node given")
	}
	seen := make(map[string]int, len(o.Nodes))
	for i, n := range o.Nodes {
		if n == nil {
			return o, invalid("Nodes", fmt.Sprintf("node %d is a nil client", i))
		}
		if _, ring := n.(*redis.Ring); ring {
			// A Ring shards keys over several servers: it is not one node,
			// and its Pub/Sub is pinned to a single shard.
			return o, invalid("Nodes", fmt.Sprintf("node %d is a *redis.Ring; give each master as its own client", i))
		}
		id := nodeIdentity(n)
		if j, dup := seen[id]; dup {
			return o, invalid("Nodes", fmt.Sprintf("nodes %d and %d are the same server (%s): a quorum needs independent nodes", j, i, id))
		}
		seen[id] = i
	}
	var err error
	if o.NodeTimeout, err = durationOrDefault("NodeTimeout", o.NodeTimeout, DefaultNodeTimeout); err != nil {
		return o, err
	}
	if o.Lease, err = durationOrDefault("Lease", o.Lease, DefaultLease); err != nil {
		return o, err
	}
	if err := checkLease("Lease", o.Lease, o.NodeTimeout); err != nil {
		return o, err
	}
	if o.RetryDelay, err = durationOrDefault("RetryDelay", o.RetryDelay, DefaultRetryDelay); err != nil {
		return o, err
	}
	// Written so that NaN, which compares false with everything, fails too.
	if !(o.ClockDriftFactor >= 0 && o.ClockDriftFactor < 0.5) {
		return o, invalid("ClockDriftFactor", fmt.Sprintf("%v is outside [0, 0.5)", o.ClockDriftFactor))
	}
	if o.ClockDriftFactor == 0 {
		o.ClockDriftFactor = DefaultClockDriftFactor
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = reentrant.DefaultPrefix
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// durationOrDefault rejects a negative duration option and replaces zero
// with its default.
func durationOrDefault(what string, d, def time.Duration) (time.Duration, error) {
	switch {
	case d < 0:
		return 0, invalid(what, fmt.Sprintf("%v is negative", d))
	case d == 0:
		return def, nil
	}
	return d, nil
}

// checkLease rejects a lease that is not positive or not well above the
// per-node timeout.
func checkLease(what string, lease, nodeTimeout time.Duration) error {
	if lease <= 0 {
		return invalid(what, fmt.Sprintf("%v is not positive", lease))
	}
	if lease < minLeaseToTimeout*nodeTimeout {
		return invalid(what, fmt.Sprintf("%v is below %d × NodeTimeout (%v)", lease, minLeaseToTimeout, nodeTimeout))
	}
	return nil
}

func invalid(what, why string) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidArgument, what, why)
}

// nodeIdentity names the server a client talks to, to catch the same server
// given twice. Clients of unknown kinds are compared by identity.
func nodeIdentity(n redis.UniversalClient) string {
	switch c := n.(type) {
	case *redis.Client:
		o := c.Options()
		return fmt.Sprintf("%s/%s/db%d", o.Network, o.Addr, o.DB)
	case *redis.ClusterClient:
		return fmt.Sprintf("cluster%v", c.Options().Addrs)
	}
	return fmt.Sprintf("%T@%p", n, n)
}

// nodeAddr is a node's address for error messages.
func nodeAddr(n redis.UniversalClient) string {
	if c, ok := n.(*redis.Client); ok {
		return c.Options().Addr
	}
	return nodeIdentity(n)
}
