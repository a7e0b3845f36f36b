package integration_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/lock"
)

// BenchmarkSequentialCycle is one Lock and one Unlock, one after the other,
// on 1 and 3 masters reached directly (no proxy): the client's cost per
// cycle, for profiling (go test -bench SequentialCycle -cpuprofile). Besides
// ns/op (wall time, the round trips included) it reports cpu-ns/op, this
// process's CPU time per cycle (the client's own cost, since the masters
// run in containers), and sleeps/op (see usage.report).
func BenchmarkSequentialCycle(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(itoaName(n), func(b *testing.B) { sequentialCycles(b, n, nil) })
	}
}

// sequentialCycles runs b.N Lock/Unlock cycles on n masters reached
// directly, with obs as the Client's Observer.
func sequentialCycles(b *testing.B, n int, obs *lock.Observer) {
	if err := cluster.Reset(context.Background()); err != nil {
		b.Fatal(err)
	}
	nodes := make([]redis.UniversalClient, n)
	for i := range nodes {
		rdb := redis.NewClient(fixture.ClientOptions(cluster.Nodes[i].Addr()))
		defer rdb.Close()
		nodes[i] = rdb
	}
	c, err := lock.New(lock.Options{Nodes: nodes, Observer: obs})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	m := c.NewMutex("cycle")
	b.ReportAllocs()
	b.ResetTimer()
	use0 := processUsage()
	for b.Loop() {
		if err := m.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	processUsage().report(b, use0)
}

// usage is what getrusage says of this process so far.
type usage struct {
	cpu    time.Duration // user and system CPU time
	sleeps int64         // voluntary context switches: a thread went to sleep
}

func processUsage() usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return usage{}
	}
	return usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), sleeps: ru.Nvcsw}
}

// report reports the usage since u0 per iteration of b: cpu-ns/op, and
// sleeps/op, the threads that went to sleep (each one a goroutine hand-off
// that woke an idle thread, or a wait on the network), which varies less
// with the machine's load than CPU time does.
func (u usage) report(b *testing.B, u0 usage) {
	b.ReportMetric(float64(u.cpu-u0.cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(u.sleeps-u0.sleeps)/float64(b.N), "sleeps/op")
}
