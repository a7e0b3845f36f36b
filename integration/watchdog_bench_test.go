package integration_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/lock"
)

// BenchmarkWatchdogTenThousandLocks holds 10,000 locks on 3 masters through
// two renewal ticks and reports what renewing them costs: the peak of
// goroutines above the count before locking (it must not grow with the
// locks), the round trips per node per tick (pipelined batches, not one per
// lock), how fast the locks were taken, and how many were lost (a loss is a
// renewal that did not get through in time: CPU starvation, not a bound).
// Run it with -benchtime=1x.
func BenchmarkWatchdogTenThousandLocks(b *testing.B) {
	const (
		locks = 10_000
		nodes = 3
		lease = 9 * time.Second // renewed every 3s
		hold  = 2*lease/3 + 500*time.Millisecond
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	require.NoError(b, cluster.Reset(ctx))
	cancel()
	var roundTrips atomic.Int64
	clients := make([]redis.UniversalClient, nodes)
	for i := range clients {
		rdb := redis.NewClient(fixture.ClientOptions(cluster.Nodes[i].Addr()))
		rdb.AddHook(countingHook{&roundTrips})
		b.Cleanup(func() { _ = rdb.Close() })
		clients[i] = rdb
	}
	for b.Loop() {
		c, err := lock.New(lock.Options{Nodes: clients, Lease: lease, NodeTimeout: 250 * time.Millisecond})
		require.NoError(b, err)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		base := fixture.NumGoroutine()

		start := time.Now()
		mutexes := lockMany(b, ctx, c, "tenk", locks)
		took := time.Since(start)

		renewals, trips := c.Stats().Renewals, roundTrips.Load()
		peak := peakGoroutines(hold)
		renewals, trips = c.Stats().Renewals-renewals, roundTrips.Load()-trips
		ticks := float64(hold / (lease / 3))
		lost := 0
		for _, m := range mutexes {
			select {
			case <-m.Lost():
				lost++
			default:
			}
		}

		b.ReportMetric(float64(peak-base), "peak-goroutines")
		b.ReportMetric(float64(trips)/nodes/ticks, "round-trips/node/tick")
		b.ReportMetric(float64(renewals)/ticks, "renewals/tick")
		b.ReportMetric(float64(locks)/took.Seconds(), "locks-taken/s")
		b.ReportMetric(float64(lost), "lost")
		b.Logf("%d locks taken in %v; goroutines %d before, peak %d while renewing; %d round trips, %d renewals and %d losses in %v",
			locks, took.Round(time.Millisecond), base, peak, trips, renewals, lost, hold)

		require.NoError(b, c.Close()) // releases all 10,000 in the same way
		cancel()
	}
}

// countingHook counts the round trips of a go-redis client: one per command
// sent alone, one per pipeline.
type countingHook struct{ n *atomic.Int64 }

func (h countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}
