package lock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
)

// These tests need no Redis: New validates options before any I/O.
func TestNewRejectsBadOptions(t *testing.T) {
	a := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	b := redis.NewClient(&redis.Options{Addr: "127.0.0.1:2"})
	sameAsA := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:3"}})
	quick := redis.NewClient(&redis.Options{Addr: "127.0.0.1:4", ReadTimeout: 400 * time.Millisecond})
	t.Cleanup(func() {
		_ = a.Close()
		_ = b.Close()
		_ = sameAsA.Close()
		_ = ring.Close()
		_ = cluster.Close()
		_ = quick.Close()
	})

	cases := []struct {
		name   string
		opts   lock.Options
		option string // the option the error must name
	}{
		{"no nodes", lock.Options{}, "Nodes"},
		{"nil client", lock.Options{Nodes: []redis.UniversalClient{a, nil}}, "Nodes"},
		{"duplicate node", lock.Options{Nodes: []redis.UniversalClient{a, b, sameAsA}}, "same server"},
		{"ring", lock.Options{Nodes: []redis.UniversalClient{ring}}, "Ring"},
		{"same client twice", lock.Options{Nodes: []redis.UniversalClient{a, a}}, "same server"},
		{"negative lease", lock.Options{Nodes: []redis.UniversalClient{a}, Lease: -time.Second}, "Lease"},
		{"lease not above node timeout", lock.Options{Nodes: []redis.UniversalClient{a}, Lease: 100 * time.Millisecond, NodeTimeout: 50 * time.Millisecond}, "Lease"},
		{"negative node timeout", lock.Options{Nodes: []redis.UniversalClient{a}, NodeTimeout: -time.Millisecond}, "NodeTimeout"},
		{"lease too short for any node timeout", lock.Options{Nodes: []redis.UniversalClient{a}, Lease: 5 * time.Nanosecond}, "Lease"},
		{"negative drift", lock.Options{Nodes: []redis.UniversalClient{a}, ClockDriftFactor: -0.1}, "ClockDriftFactor"},
		{"drift too large", lock.Options{Nodes: []redis.UniversalClient{a}, ClockDriftFactor: 0.5}, "ClockDriftFactor"},
		{"negative retry delay", lock.Options{Nodes: []redis.UniversalClient{a}, RetryDelay: -time.Millisecond}, "RetryDelay"},
		{"negative replicas", lock.Options{Nodes: []redis.UniversalClient{a}, Replicas: -1}, "Replicas"},
		{"replica timeout without replicas", lock.Options{Nodes: []redis.UniversalClient{a}, ReplicaTimeout: time.Millisecond}, "ReplicaTimeout"},
		{"negative replica timeout", lock.Options{Nodes: []redis.UniversalClient{a}, Replicas: 1, ReplicaTimeout: -time.Millisecond}, "ReplicaTimeout"},
		{"replica timeout below WAIT's millisecond", lock.Options{Nodes: []redis.UniversalClient{a}, Replicas: 1, ReplicaTimeout: time.Microsecond}, "ReplicaTimeout"},
		{"replica timeout not below node timeout", lock.Options{Nodes: []redis.UniversalClient{a}, Replicas: 1, NodeTimeout: 50 * time.Millisecond, ReplicaTimeout: 50 * time.Millisecond}, "ReplicaTimeout"},
		{"replica timeout not below the adaptive floor", lock.Options{Nodes: []redis.UniversalClient{a}, Replicas: 1, ReplicaTimeout: lock.NodeTimeoutFloor}, "ReplicaTimeout"},
		{"replica timeout not below the read timeout", lock.Options{Nodes: []redis.UniversalClient{quick}, Replicas: 1, NodeTimeout: time.Second, ReplicaTimeout: 500 * time.Millisecond}, "ReadTimeout"},
		{"replicas through a cluster client", lock.Options{Nodes: []redis.UniversalClient{a, cluster, b}, Replicas: 1}, "ClusterClient"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := lock.New(tc.opts)
			if c != nil {
				t.Fatalf("New returned a client for bad options")
			}
			if !errors.Is(err, lock.ErrInvalidArgument) {
				t.Fatalf("error %v does not wrap ErrInvalidArgument", err)
			}
			if !strings.Contains(err.Error(), tc.option) {
				t.Fatalf("error %q does not name %q", err, tc.option)
			}
		})
	}
}

func TestNewAcceptsGoodOptions(t *testing.T) {
	a := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	b := redis.NewClient(&redis.Options{Addr: "127.0.0.1:2"})
	c3 := redis.NewClient(&redis.Options{Addr: "127.0.0.1:3"})
	t.Cleanup(func() { _ = a.Close(); _ = b.Close(); _ = c3.Close() })
	c, err := lock.New(lock.Options{Nodes: []redis.UniversalClient{a, b, c3}, ClockDriftFactor: 0.49})
	if err != nil {
		t.Fatal(err)
	}
	if n, q := c.Nodes(); n != 3 || q != 2 {
		t.Fatalf("Nodes() = %d, %d; want 3, 2", n, q)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.NewMutex("x").Lock(t.Context()); !errors.Is(err, lock.ErrClosed) {
		t.Fatalf("Lock after Close = %v; want ErrClosed", err)
	}
}

// An adaptive NodeTimeout (left zero) accepts any lease that leaves a node
// time to answer: its floor shrinks to a tenth of a short lease. A fixed one
// keeps the rule lease ≥ 10 × NodeTimeout.
func TestNodeTimeoutModes(t *testing.T) {
	a := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = a.Close() })
	for _, tc := range []struct {
		lease, nodeTimeout time.Duration
		ok                 bool
	}{
		{0, 0, true},
		{500 * time.Millisecond, 0, true},
		{20 * time.Millisecond, 0, true},
		{time.Second, 100 * time.Millisecond, true},
		{time.Second, 101 * time.Millisecond, false},
	} {
		c, err := lock.New(lock.Options{Nodes: []redis.UniversalClient{a}, Lease: tc.lease, NodeTimeout: tc.nodeTimeout})
		if tc.ok != (err == nil) {
			t.Fatalf("lease %v, NodeTimeout %v: err = %v; want ok = %v", tc.lease, tc.nodeTimeout, err, tc.ok)
		}
		if c != nil {
			_ = c.Close()
		}
	}
}

// The replicated mode's options: ReplicaTimeout defaults to half the node
// timeout (fixed, or the adaptive floor), and a Sentinel failover client is
// a plain *redis.Client to it.
func TestReplicatedModeOptions(t *testing.T) {
	a := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	failover := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:2"}})
	t.Cleanup(func() { _ = a.Close(); _ = failover.Close() })
	for _, tc := range []struct {
		name string
		opts lock.Options
	}{
		{"adaptive node timeout", lock.Options{Nodes: []redis.UniversalClient{a}, Replicas: 1}},
		{"fixed node timeout", lock.Options{Nodes: []redis.UniversalClient{a}, Replicas: 2, NodeTimeout: 80 * time.Millisecond}},
		{"explicit replica timeout", lock.Options{Nodes: []redis.UniversalClient{failover}, Replicas: 1, ReplicaTimeout: 99 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := lock.New(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
