// Package kinds tests every kind of go-redis client as a quorum member of
// relock, against real servers in containers: Sentinel failover clients of
// independent replication groups, *redis.ClusterClient of a whole Redis
// Cluster, and plain *redis.Client of single masters beside them.
//
// It has its own TestMain (not the 5-node one of package integration): it
// starts three Sentinel groups (9 containers), one 3-master Redis Cluster
// and two plain masters once, all with host networking on loopback ports.
package kinds

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/relock-go/relock/integration/fixture"
)

var (
	sentinels *fixture.Sentinels    // three independent groups
	rcluster  *fixture.RedisCluster // three masters
	plain     *fixture.Servers      // two independent masters
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

// run starts the servers, runs the tests, stops the servers and checks for
// leaked goroutines. Without Docker it fails in CI and skips elsewhere, as
// fixture.Main does.
func run(m *testing.M) int {
	if err := fixture.CheckClientsEnv(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: kinds: %v\n", err)
		return 1
	}
	if err := fixture.DockerError(); err != nil {
		if fixture.InCI() {
			fmt.Fprintf(os.Stderr, "FAIL: kinds: Docker is required in CI: %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "kinds: no Docker engine (%v): SKIPPING every test of this package\n", err)
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if removed, err := fixture.Sweep(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "kinds: sweep: %v\n", err)
	} else if removed > 0 {
		fmt.Fprintf(os.Stderr, "kinds: removed %d leftover container(s)\n", removed)
	}

	start := time.Now()
	var (
		wg               sync.WaitGroup
		errS, errC, errP error
	)
	timed := func(what string, f func()) {
		began := time.Now()
		f()
		fmt.Fprintf(os.Stderr, "kinds: %s ready in %v\n", what, time.Since(began).Round(time.Millisecond))
	}
	wg.Go(func() { timed("Sentinel groups", func() { sentinels, errS = fixture.StartSentinels(ctx, 3) }) })
	wg.Go(func() { timed("Redis Cluster", func() { rcluster, errC = fixture.StartRedisCluster(ctx, 3) }) })
	wg.Go(func() { timed("plain masters", func() { plain, errP = fixture.StartServers(ctx, 2) }) })
	wg.Wait()
	closeAll := func() error {
		var errs []error
		if sentinels != nil {
			errs = append(errs, sentinels.Close())
		}
		if rcluster != nil {
			errs = append(errs, rcluster.Close())
		}
		if plain != nil {
			errs = append(errs, plain.Close())
		}
		return errors.Join(errs...)
	}
	if err := errors.Join(errS, errC, errP); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: kinds: start: %v\n", err)
		_ = closeAll()
		return 1
	}
	fmt.Fprintf(os.Stderr, "kinds: 3 Sentinel groups, a 3-master Redis Cluster and 2 masters from %s ready in %v\n",
		fixture.Image(), time.Since(start).Round(time.Millisecond))

	code := m.Run()
	if err := closeAll(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: kinds: close: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(fixture.IgnoreLeaks()...); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: goroutines leaked: %v\n", err)
			code = 1
		}
	}
	return code
}
