package integration_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/relock-go/relock/integration/fixture"
)

// cluster is the package's 5-node cluster, started once by TestMain.
var cluster *fixture.Cluster

func TestMain(m *testing.M) { os.Exit(fixture.Main(m, 5, &cluster)) }

// reset gives the test a fresh cluster: every link healed, every node up and
// unpaused, every node empty.
func reset(t *testing.T) *fixture.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cluster.Reset(ctx); err != nil {
		t.Fatalf("reset: %v", err)
	}
	return cluster
}
