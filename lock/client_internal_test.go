package lock

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// A Client's four pipelines are shared among its nodes, one at least each.
func TestPipelinesPerNode(t *testing.T) {
	for nodes, want := range map[int]int{1: 4, 2: 2, 3: 1, 4: 1, 5: 1, 7: 1} {
		if got := pipelinesPerNode(nodes); got != want {
			t.Errorf("pipelinesPerNode(%d) = %d; want %d", nodes, got, want)
		}
	}
}

// Nodes whose clients show no address of their own (Sentinel failover
// clients) get their index beside the description they share, for the
// observers: a metric's node label tells them apart. New contacts no node.
func TestNodesWithoutAnAddressOfTheirOwnAreToldApart(t *testing.T) {
	var nodes []redis.UniversalClient
	for _, master := range []string{"a", "b", "c"} {
		n := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: master, SentinelAddrs: []string{"127.0.0.1:1"}})
		t.Cleanup(func() { _ = n.Close() })
		nodes = append(nodes, n)
	}
	plain := redis.NewClient(&redis.Options{Addr: "127.0.0.1:2"})
	t.Cleanup(func() { _ = plain.Close() })
	c, err := New(Options{Nodes: append(nodes, plain)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	want := []string{"sentinel failover client, node 0", "sentinel failover client, node 1", "sentinel failover client, node 2", "127.0.0.1:2"}
	for i, a := range c.labels {
		if a != want[i] {
			t.Errorf("node %d: address %q; want %q", i, a, want[i])
		}
	}
}
