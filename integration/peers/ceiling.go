package peers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/integration/fixture"
)

// benchScript is the lock-sized script redis-benchmark and go-redis run by
// SHA for the throughput ceiling: one SET with a lease.
const benchScript = `return redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])`

// Ceiling is what the servers and the client library can do at best, on
// the first node, measured in the same run as the locks.
type Ceiling struct {
	Addr string
	// Ping is go-redis PING round trips, one at a time from one goroutine.
	Ping    Dist
	PingErr error
	// FanOut is a PING sent to n masters at once from one goroutine per
	// master, timed until the last reply, for each n > 1 of the node counts
	// the run covers: the floor of a parallel quorum round on this machine.
	FanOut []FanOut
	// GoRedis is go-redis EVALSHA of benchScript from Goroutines
	// goroutines, one command at a time each (no pipelining).
	GoRedis    *Throughput
	GoRedisErr error
	// Bench are redis-benchmark runs of EVALSHA benchScript.
	Bench    []BenchRun
	BenchErr error // redis-benchmark missing or failing
	// Scripts is the server's time per call of relock's acquire and of
	// SET NX PX (see ScriptCost).
	Scripts    []ScriptCost
	ScriptsErr error
}

// FanOut is the parallel PING to the first Nodes masters.
type FanOut struct {
	Nodes int
	Dist  Dist
	Err   error
}

// fanOut returns the parallel PING to n masters, if measured.
func (c *Ceiling) fanOut(n int) *FanOut {
	for i := range c.FanOut {
		if c.FanOut[i].Nodes == n {
			return &c.FanOut[i]
		}
	}
	return nil
}

// Throughput is a rate of commands with their latency.
type Throughput struct {
	Goroutines int
	Ops        int
	Elapsed    time.Duration
	Lat        Dist
}

// PerSec returns the command rate.
func (t *Throughput) PerSec() float64 { return rate(t.Ops, t.Elapsed) }

// BenchRun is one redis-benchmark run.
type BenchRun struct {
	Clients, Pipeline, Requests int
	PerSec                      float64
	P50                         time.Duration // 0 when not printed
}

// measureCeiling measures the ceiling on addrs[0] (and the fan-out on
// addrs[:n] for each n > 1 of counts).
func measureCeiling(ctx context.Context, cfg Config, addrs []string, counts []int) *Ceiling {
	addr := addrs[0]
	c := &Ceiling{Addr: addr}
	client := redis.NewClient(fixture.ClientOptions(addr))
	defer client.Close()
	c.Ping, c.PingErr = measurePing(ctx, client, cfg.Duration)
	for _, n := range counts {
		if n > 1 {
			f := newFanOut(addrs[:n])
			d, err := f.measure(ctx, cfg.Duration)
			f.close()
			c.FanOut = append(c.FanOut, FanOut{Nodes: n, Dist: d, Err: err})
		}
	}

	sha, err := client.ScriptLoad(ctx, benchScript).Result()
	if err != nil {
		c.GoRedisErr = fmt.Errorf("SCRIPT LOAD: %w", err)
		c.BenchErr = c.GoRedisErr
		return c
	}
	c.GoRedis, c.GoRedisErr = measureEvalSHA(ctx, client, sha, cfg.Uncontended, cfg)
	c.Bench, c.BenchErr = runRedisBenchmark(ctx, addr, sha, cfg)
	c.Scripts, c.ScriptsErr = measureScriptCosts(ctx, client, addr, cfg)
	return c
}

// measurePing times sequential PINGs for d (at most maxSamples), after a
// short warm-up.
func measurePing(ctx context.Context, c *redis.Client, d time.Duration) (Dist, error) {
	return timeRounds(d, func() error { return c.Ping(ctx).Err() })
}

// fanOut sends one PING to each of its clients in parallel.
type fanOut struct {
	clients []*redis.Client
	errs    []error
}

func newFanOut(addrs []string) *fanOut {
	f := &fanOut{clients: make([]*redis.Client, len(addrs)), errs: make([]error, len(addrs))}
	for i, a := range addrs {
		f.clients[i] = redis.NewClient(fixture.ClientOptions(a))
	}
	return f
}

func (f *fanOut) close() {
	for _, c := range f.clients {
		_ = c.Close()
	}
}

// measure times rounds of one PING to every node in parallel, until the
// last reply, for d (at most maxSamples rounds), after a short warm-up.
func (f *fanOut) measure(ctx context.Context, d time.Duration) (Dist, error) {
	return f.measureAfter(ctx, d, 0)
}

// measureAfter is measure with the caller idle for idle before each round
// (see timeRoundsAfter).
func (f *fanOut) measureAfter(ctx context.Context, d, idle time.Duration) (Dist, error) {
	return timeRoundsAfter(d, idle, func() error {
		var wg sync.WaitGroup
		for i, c := range f.clients {
			wg.Go(func() { f.errs[i] = c.Ping(ctx).Err() })
		}
		wg.Wait()
		return errors.Join(f.errs...)
	})
}

// timeRounds calls round 200 times unmeasured, then times it for d (at
// most maxSamples calls).
func timeRounds(d time.Duration, round func() error) (Dist, error) {
	return timeRoundsAfter(d, 0, round)
}

// timeRoundsAfter is timeRounds with a time.Sleep of idle before each
// round, which is timed from the sleep's end: a round trip started as a
// contended hand-off starts its own, after the holder slept through its
// hold, with the client, the servers and the cores left idle meanwhile
// (on a virtual machine an idle core can take a long time to wake). With
// a pause it warms up for 20 rounds, not 200.
func timeRoundsAfter(d, idle time.Duration, round func() error) (Dist, error) {
	warmup := 200
	if idle > 0 {
		warmup = 20
	}
	for range warmup {
		if err := round(); err != nil {
			return nil, err
		}
	}
	var lat []time.Duration
	end := time.Now().Add(d)
	for len(lat) < maxSamples && time.Now().Before(end) {
		if idle > 0 {
			time.Sleep(idle)
		}
		t0 := time.Now()
		if err := round(); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	return NewDist(lat), nil
}

// measureEvalSHA runs EVALSHA sha from goroutines goroutines for the
// configured duration, after a warm-up.
func measureEvalSHA(ctx context.Context, c *redis.Client, sha string, goroutines int, cfg Config) (*Throughput, error) {
	run := func(d time.Duration) (*Throughput, error) {
		var stop atomic.Bool
		lat := make([][]time.Duration, goroutines)
		errs := make([]error, goroutines)
		var wg sync.WaitGroup
		start := time.Now()
		for g := range goroutines {
			wg.Go(func() {
				key := fmt.Sprintf("ceiling:%d", g)
				for len(lat[g]) < maxSamples && !stop.Load() {
					t0 := time.Now()
					if err := c.EvalSha(ctx, sha, []string{key}, 30000).Err(); err != nil {
						errs[g] = err
						return
					}
					lat[g] = append(lat[g], time.Since(t0))
				}
			})
		}
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
		stop.Store(true)
		elapsed := time.Since(start)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		var all []time.Duration
		for _, l := range lat {
			all = append(all, l...)
		}
		return &Throughput{Goroutines: goroutines, Ops: len(all), Elapsed: elapsed, Lat: NewDist(all)}, ctx.Err()
	}
	if cfg.Warmup > 0 {
		if _, err := run(cfg.Warmup); err != nil {
			return nil, err
		}
	}
	return run(cfg.Duration)
}

// benchLine matches redis-benchmark -q's result line, e.g.
// "EVALSHA ...: 86956.52 requests per second, p50=0.559 msec".
var benchLine = regexp.MustCompile(`([0-9.]+) requests per second(?:, p50=([0-9.]+) msec)?`)

// runRedisBenchmark runs redis-benchmark EVALSHA sha on addr with 64
// clients, without and with pipelining.
func runRedisBenchmark(ctx context.Context, addr, sha string, cfg Config) ([]BenchRun, error) {
	bin, host, port, err := redisBenchmark(addr)
	if err != nil {
		return nil, err
	}
	var runs []BenchRun
	for _, pipeline := range []int{1, 16} {
		r := BenchRun{Clients: 64, Pipeline: pipeline, Requests: cfg.BenchRequests}
		if pipeline > 1 {
			r.Requests *= 4 // pipelined runs go about 4× faster or more
		}
		bctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		out, err := exec.CommandContext(bctx, bin,
			"-h", host, "-p", port,
			"-c", strconv.Itoa(r.Clients), "-n", strconv.Itoa(r.Requests), "-P", strconv.Itoa(pipeline),
			"-r", "100000", "-q",
			"EVALSHA", sha, "1", "ceiling:__rand_int__", "30000").CombinedOutput()
		cancel()
		if err != nil {
			return runs, fmt.Errorf("redis-benchmark: %w: %s", err, lastLine(out))
		}
		var ok bool
		if r.PerSec, r.P50, ok = parseBenchmark(out); !ok {
			return runs, fmt.Errorf("redis-benchmark: no result in %q", lastLine(out))
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// parseBenchmark reads the last result line of redis-benchmark -q's
// output: the rate and the p50 (0 when not printed); ok is false when there
// is none.
func parseBenchmark(out []byte) (perSec float64, p50 time.Duration, ok bool) {
	m := benchLine.FindAllSubmatch(out, -1)
	if len(m) == 0 {
		return 0, 0, false
	}
	last := m[len(m)-1]
	perSec, _ = strconv.ParseFloat(string(last[1]), 64)
	if len(last[2]) > 0 {
		ms, _ := strconv.ParseFloat(string(last[2]), 64)
		p50 = time.Duration(ms * float64(time.Millisecond))
	}
	return perSec, p50, true
}

// redisBenchmark returns the redis-benchmark binary and addr's host and
// port, as its -h and -p take them.
func redisBenchmark(addr string) (bin, host, port string, err error) {
	if bin, err = exec.LookPath("redis-benchmark"); err != nil {
		return "", "", "", fmt.Errorf("redis-benchmark not found (Debian package redis-tools): %w", err)
	}
	host, port, err = net.SplitHostPort(addr)
	return bin, host, port, err
}

func lastLine(out []byte) string {
	const keep = 200
	if len(out) > keep {
		out = out[len(out)-keep:]
	}
	return string(out)
}
