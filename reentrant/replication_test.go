package reentrant_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/reentrant"
)

// NewReplicatedNode rejects, before any I/O, a mode WAIT cannot carry out
// and a node whose pipelines would send WAIT to another server than the
// writes; a zero mode, or a plain client, is accepted.
func TestNewReplicatedNodeChecksTheMode(t *testing.T) {
	plain := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:2"}})
	t.Cleanup(func() { _ = plain.Close(); _ = cluster.Close() })
	for _, tc := range []struct {
		name string
		rdb  redis.UniversalClient
		rep  reentrant.Replication
		ok   bool
	}{
		{"off", cluster, reentrant.Replication{}, true},
		{"plain client", plain, reentrant.Replication{Replicas: 2, Timeout: time.Millisecond}, true},
		{"negative replicas", plain, reentrant.Replication{Replicas: -1}, false},
		{"timeout below a millisecond", plain, reentrant.Replication{Replicas: 1, Timeout: time.Millisecond - 1}, false},
		{"cluster client", cluster, reentrant.Replication{Replicas: 1, Timeout: time.Millisecond}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := reentrant.NewReplicatedNode(tc.rdb, 0, tc.rep)
			if tc.ok != (err == nil) || tc.ok != (n != nil) {
				t.Fatalf("NewReplicatedNode = %v, %v; want ok %v", n, err, tc.ok)
			}
			if !tc.ok && !errors.Is(err, reentrant.ErrInvalidArgument) {
				t.Fatalf("error %v does not wrap ErrInvalidArgument", err)
			}
		})
	}
}
