package lock

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// These tests need no Redis: they cover New's static check and the
// bookkeeping of the first-contact check. The check against real servers
// (run_ids of plain, failover and Cluster clients) is in integration/kinds.

func TestStaticDuplicates(t *testing.T) {
	plain := func(addr string, db int) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: addr, DB: db})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	cluster := func(addrs ...string) *redis.ClusterClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	failover := func(master string) *redis.Client {
		c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: master, SentinelAddrs: []string{"127.0.0.1:1"}})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	a := plain("127.0.0.1:1", 0)
	f := failover("group-a")

	rejected := []struct {
		name  string
		nodes []redis.UniversalClient
		want  []string // in the message
	}{
		{"one server, two databases", []redis.UniversalClient{a, plain("127.0.0.1:2", 0), plain("127.0.0.1:1", 3)},
			[]string{"nodes 0 (127.0.0.1:1) and 2 (127.0.0.1:1)", "same server"}},
		{"a cluster seed given as a plain node", []redis.UniversalClient{cluster("127.0.0.1:5", "127.0.0.1:1"), plain("127.0.0.1:2", 0), a},
			[]string{"nodes 0 (cluster [127.0.0.1:5 127.0.0.1:1]) and 2 (127.0.0.1:1)"}},
		{"two clients of one cluster", []redis.UniversalClient{cluster("127.0.0.1:5", "127.0.0.1:6"), a, cluster("127.0.0.1:6")},
			[]string{"nodes 0", "and 2", "same server"}},
		{"one failover client twice", []redis.UniversalClient{f, a, f},
			[]string{"nodes 0 (sentinel failover client) and 2 (sentinel failover client)"}},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			err := checkNodes(tc.nodes)
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("checkNodes = %v; want ErrInvalidArgument", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}

	// Two failover clients of different groups (even with the same
	// sentinels) are told apart only by the servers: New accepts them.
	ok := []redis.UniversalClient{failover("group-a"), failover("group-b"), failover("group-c")}
	if err := checkNodes(ok); err != nil {
		t.Fatalf("three failover clients: %v", err)
	}
}

// TestEvenNodeCounts pins the decision documented on Options.Nodes: an even
// count is accepted, with a strict majority as its quorum.
func TestEvenNodeCounts(t *testing.T) {
	for _, tc := range []struct{ n, quorum int }{{1, 1}, {2, 2}, {3, 2}, {4, 3}, {5, 3}} {
		nodes := make([]redis.UniversalClient, tc.n)
		for i := range nodes {
			c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + string(rune('1'+i))})
			t.Cleanup(func() { _ = c.Close() })
			nodes[i] = c
		}
		c, err := New(Options{Nodes: nodes})
		if err != nil {
			t.Fatalf("N=%d: %v", tc.n, err)
		}
		if n, q := c.Nodes(); n != tc.n || q != tc.quorum {
			t.Errorf("N=%d: Nodes() = %d, %d; want quorum %d", tc.n, n, q, tc.quorum)
		}
		if 2*tc.quorum <= tc.n {
			t.Errorf("N=%d: quorum %d is not a strict majority", tc.n, tc.quorum)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestIdentifierRecord(t *testing.T) {
	newID := func(n int) *identifier {
		addrs := []string{"a:1", "b:2", "c:3", "d:4"}[:n]
		return newIdentifier(make([]redis.UniversalClient, n), addrs, 10*time.Millisecond, slog.New(slog.DiscardHandler))
	}

	t.Run("distinct servers", func(t *testing.T) {
		d := newID(3)
		d.record(0, []string{"r1"}, true, nil)
		d.record(1, []string{"r2", "r3", "r4"}, true, nil) // a Cluster's masters
		d.record(2, []string{"r5"}, true, nil)
		if d.err != nil || d.missing != 0 {
			t.Fatalf("err %v, missing %d; want nil, 0", d.err, d.missing)
		}
	})

	t.Run("a plain node inside a cluster node", func(t *testing.T) {
		d := newID(3)
		d.record(2, []string{"r3"}, true, nil)
		d.record(0, []string{"r2", "r3", "r4"}, true, nil)
		if !errors.Is(d.err, ErrInvalidArgument) || !strings.Contains(d.err.Error(), "nodes 0 (a:1) and 2 (c:3) are the same server (run_id r3)") {
			t.Fatalf("err = %v", d.err)
		}
	})

	t.Run("an unreachable node is asked again", func(t *testing.T) {
		d := newID(2)
		d.record(0, []string{"r1"}, true, nil)
		d.record(1, nil, false, errors.New("connection refused"))
		if d.err != nil || d.missing != 1 || d.known[1] {
			t.Fatalf("err %v, missing %d, known %v; want node 1 unknown", d.err, d.missing, d.known)
		}
		d.record(1, []string{"r1"}, true, nil) // it answers later: a duplicate
		if !errors.Is(d.err, ErrInvalidArgument) {
			t.Fatalf("err = %v; want the duplicate", d.err)
		}
	})

	t.Run("a node refusing INFO is not a duplicate", func(t *testing.T) {
		d := newID(2)
		d.record(0, nil, true, errors.New("NOPERM"))
		d.record(1, nil, true, errors.New("NOPERM"))
		if d.err != nil || d.missing != 0 {
			t.Fatalf("err %v, missing %d; want nil, 0", d.err, d.missing)
		}
	})
}

// Nodes that refuse connections (no Redis listens on port 1) cannot be
// identified: the first operation is not blocked beyond one NodeTimeout,
// they stay unknown, and after Close the check says so.
func TestIdentifierUnreachableNodes(t *testing.T) {
	nodes := make([]redis.UniversalClient, 3)
	for i := range nodes {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DB: i, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		nodes[i] = c
	}
	// Three clients of one address: the static check would refuse them, so
	// build the identifier directly.
	d := newIdentifier(nodes, []string{"a", "b", "c"}, 50*time.Millisecond, slog.New(slog.DiscardHandler))
	start := time.Now()
	if err := d.check(t.Context()); err != nil {
		t.Fatalf("check = %v; want nil: unreachable nodes are not duplicates", err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Fatalf("the first check waited %v", waited)
	}
	<-d.first
	d.mu.Lock()
	missing := d.missing
	d.mu.Unlock()
	if missing != 3 {
		t.Fatalf("missing = %d; want 3", missing)
	}
	d.close()
	if err := d.check(t.Context()); !errors.Is(err, ErrClosed) {
		t.Fatalf("check after close = %v; want ErrClosed", err)
	}
}
