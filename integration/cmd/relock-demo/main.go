// Command relock-demo starts three Redis masters in containers and walks
// through what relock does: contended, nested and blocking locks, a Lock
// that times out, and a node failure being tolerated, then a majority
// failure being reported. It prints what happened at each step.
//
// While it runs it serves relock's Prometheus metrics on a loopback port
// (the URL is printed first; -metrics sets the address, -linger keeps it up
// after the run), and at the end prints a summary read back from that
// registry. -samples writes the registry's readings over the run as CSV, for
// cmd/relock-plot (`make plot`).
//
// It needs a Docker engine and the Redis image named by RELOCK_REDIS_IMAGE
// (default relock/redis:7; `make image` builds it). Run it with `make demo`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/lock"
)

var (
	metricsAddr = flag.String("metrics", "127.0.0.1:0", "address to serve /metrics on while the demo runs (a loopback port)")
	samplesPath = flag.String("samples", "", "write the metrics sampled over the run to this CSV file (for cmd/relock-plot)")
	linger      = flag.Duration("linger", 0, "keep serving /metrics this long after the run")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	if err := fixture.DockerError(); err != nil {
		return fmt.Errorf("a Docker engine is required: %w", err)
	}
	mx, err := startMetrics(*metricsAddr)
	if err != nil {
		return err
	}
	step("relock's metrics while the demo runs: %s", mx.url)
	mx.setStep("start")
	step("Starting 3 independent Redis masters in containers (image %s)", fixture.Image())
	cluster, err := fixture.Start(ctx, 3)
	if err != nil {
		return err
	}
	defer func() {
		step("Stopping the containers")
		_ = cluster.Close()
	}()
	for _, n := range cluster.Nodes {
		say("%s at %s (the demo reaches it through an in-process proxy at %s)", n.Name(), n.Addr(), n.Link().Addr())
	}

	// Two Clients stand for two processes of one service; one Collector
	// counts for both.
	opts := lock.Options{Nodes: cluster.Clients(), Observer: mx.collector.Observer()} // default, adaptive per-node timeouts
	a, err := lock.New(opts)
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := lock.New(opts)
	if err != nil {
		return err
	}
	defer b.Close()

	for _, demo := range []struct {
		name string
		run  func(context.Context, *fixture.Cluster, *lock.Client, *lock.Client) error
	}{
		{"contention", contended}, {"nesting", nested}, {"blocking", blocking}, {"timeout", timeout}, {"node failure", nodeFailure},
	} {
		mx.setStep(demo.name)
		if err := demo.run(ctx, cluster, a, b); err != nil {
			return err
		}
	}
	step("Done: every step behaved as expected")
	mx.stopSampling()
	if err := mx.summary(); err != nil {
		return err
	}
	if *samplesPath != "" {
		if err := mx.writeSamples(*samplesPath); err != nil {
			return err
		}
		say("samples of the run written to %s", *samplesPath)
	}
	return mx.close(*linger)
}

// contended: eight workers over two Clients increment a counter in Redis by
// read-modify-write, under the lock.
func contended(ctx context.Context, cluster *fixture.Cluster, a, b *lock.Client) error {
	step("Contention: 8 workers in 2 processes each increment a shared counter 25 times under lock %q", "demo:counter")
	const workers, rounds = 8, 25
	counter := cluster.Nodes[0].Direct()
	var holders, maxHolders atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	start := time.Now()
	for w := range workers {
		client := a
		if w%2 == 1 {
			client = b
		}
		wg.Go(func() {
			m := client.NewMutex("demo:counter")
			for range rounds {
				if err := m.Lock(ctx); err != nil {
					errs <- err
					return
				}
				h := holders.Add(1)
				for old := maxHolders.Load(); h > old && !maxHolders.CompareAndSwap(old, h); old = maxHolders.Load() {
				}
				v, _ := counter.Get(ctx, "demo:count").Int()
				counter.Set(ctx, "demo:count", v+1, 0)
				holders.Add(-1)
				if err := m.Unlock(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	total, _ := counter.Get(ctx, "demo:count").Int()
	say("counter = %d (expected %d), most holders at once = %d, %d lock/unlock cycles in %v",
		total, workers*rounds, maxHolders.Load(), workers*rounds, time.Since(start).Round(time.Millisecond))
	if total != workers*rounds || maxHolders.Load() != 1 {
		return errors.New("mutual exclusion violated")
	}
	return nil
}

// nested: one owner locks three times without blocking; the count is on
// every node; another owner is refused until the last unlock.
func nested(ctx context.Context, _ *fixture.Cluster, a, b *lock.Client) error {
	step("Nesting: one owner locks %q three times", "demo:nested")
	m := a.NewMutex("demo:nested")
	for range 3 {
		if err := m.Lock(ctx); err != nil {
			return err
		}
	}
	states, err := a.Inspect(ctx, "demo:nested")
	if err != nil {
		return err
	}
	for _, s := range states {
		say("node %d (%s): hold count %d, lease left %v", s.Node, s.Addr, s.Info.Holders[m.Owner()], s.Info.TTL.Round(time.Second))
	}
	other := b.NewMutex("demo:nested")
	for i := 3; i > 0; i-- {
		ok, err := other.TryLock(ctx)
		if err != nil {
			return err
		}
		say("holds %d: another owner's TryLock -> %v", m.HoldCount(), ok)
		if ok {
			return errors.New("another owner got a held lock")
		}
		if err := m.Unlock(ctx); err != nil {
			return err
		}
	}
	ok, err := other.TryLock(ctx)
	if err != nil {
		return err
	}
	say("holds 0: another owner's TryLock -> %v", ok)
	if !ok {
		return errors.New("the lock stayed held after the last unlock")
	}
	return other.Unlock(ctx)
}

// blocking: a waiter's Lock returns soon after the holder's Unlock; while
// it waits, an Inspect shows it in the lock's wait queue.
func blocking(ctx context.Context, _ *fixture.Cluster, a, b *lock.Client) error {
	step("Blocking: process B waits on %q while process A holds it for 300ms", "demo:blocking")
	holder := a.NewMutex("demo:blocking")
	if err := holder.Lock(ctx); err != nil {
		return err
	}
	waiter := b.NewMutex("demo:blocking")
	unlocked := make(chan time.Time, 1)
	seen := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		seen <- showWaiters(ctx, a, "demo:blocking", waiter.Owner())
		unlocked <- time.Now() // the moment A calls Unlock
		_ = holder.Unlock(ctx)
	}()
	start := time.Now()
	if err := waiter.Lock(ctx); err != nil {
		return err
	}
	got := time.Now()
	unlockedAt := <-unlocked
	say("B waited %v and got the lock %v after A's Unlock (A's lease had 30s left)",
		got.Sub(start).Round(time.Millisecond), got.Sub(unlockedAt).Round(100*time.Microsecond))
	if err := <-seen; err != nil {
		return err
	}
	return waiter.Unlock(ctx)
}

// showWaiters reads who waits for name, as relock inspect does, and says
// so; it fails unless that is want alone.
func showWaiters(ctx context.Context, c *lock.Client, name, want string) error {
	states, err := c.Inspect(ctx, name)
	if err != nil {
		return err
	}
	_, quorum := c.Nodes()
	waiters := lock.Waiters(states, quorum)
	tie := slices.IndexFunc(states, func(s lock.NodeState) bool { return s.TieBreaker })
	if len(waiters) != 1 || waiters[0].Owner != want {
		return fmt.Errorf("inspect shows waiters %+v; want B's owner %s alone", waiters, want)
	}
	say("while B waits, inspect shows it in the wait queue on the tie-breaker (node %d), waiting since %s",
		tie, waiters[0].Since.Format("15:04:05.000"))
	return nil
}

// timeout: a Lock bounded by a ctx deadline gives up and leaves nothing.
func timeout(ctx context.Context, _ *fixture.Cluster, a, b *lock.Client) error {
	step("Timeout: B's Lock with a 200ms deadline while A holds %q", "demo:timeout")
	holder := a.NewMutex("demo:timeout")
	if err := holder.Lock(ctx); err != nil {
		return err
	}
	defer holder.Unlock(ctx)
	wait, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err := b.NewMutex("demo:timeout").Lock(wait)
	say("B's Lock: %v (errors.Is DeadlineExceeded: %v)", err, errors.Is(err, context.DeadlineExceeded))
	if !errors.Is(err, context.DeadlineExceeded) {
		return errors.New("expected a deadline error")
	}
	states, err := a.Inspect(ctx, "demo:timeout")
	if err != nil {
		return err
	}
	for _, s := range states {
		say("node %d holders: %d (only A)", s.Node, len(s.Info.Holders))
	}
	return nil
}

// nodeFailure: one node of three stops and locking goes on; a second stops
// and locking fails with a quorum error naming the nodes; both return.
func nodeFailure(ctx context.Context, cluster *fixture.Cluster, a, b *lock.Client) error {
	step("Node failure: stopping node2; a quorum of 2 out of 3 remains")
	if err := cluster.Nodes[2].Stop(ctx); err != nil {
		return err
	}
	m := a.NewMutex("demo:failover")
	for i := range 3 {
		if err := m.Lock(ctx); err != nil {
			return fmt.Errorf("lock with one node down: %w", err)
		}
		if err := m.Unlock(ctx); err != nil {
			return fmt.Errorf("unlock with one node down: %w", err)
		}
		say("lock/unlock %d with node2 down: ok", i+1)
	}
	step("Stopping node1 too: no majority is left")
	if err := cluster.Nodes[1].Stop(ctx); err != nil {
		return err
	}
	ok, err := b.NewMutex("demo:failover").TryLock(ctx)
	say("TryLock -> %v, %v", ok, err)
	var qe *lock.QuorumError
	if !errors.As(err, &qe) {
		return errors.New("expected a quorum error")
	}
	step("Starting node1 and node2 again")
	for _, i := range []int{1, 2} {
		if err := cluster.Nodes[i].Start(ctx); err != nil {
			return err
		}
	}
	if err := m.Lock(ctx); err != nil {
		return err
	}
	say("lock after recovery: ok (holds %d)", m.HoldCount())
	return m.Unlock(ctx)
}

func step(format string, args ...any) { fmt.Printf("\n== "+format+"\n", args...) }
func say(format string, args ...any)  { fmt.Printf("   "+format+"\n", args...) }
