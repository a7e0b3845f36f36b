package peers

import (
	"bufio"
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
)

// acquirers bounds the goroutines that take and release the watchdog
// scenario's locks.
const acquirers = 64

// Watchdog is the cost of renewing many held relock locks.
type Watchdog struct {
	Nodes, Locks int
	Lease        time.Duration // renewed every Lease/3

	Acquire time.Duration // time to take every lock with acquirers goroutines
	Window  time.Duration // the measured time while holding
	Ticks   float64       // Window / (Lease/3)

	// Per node, per tick.
	RoundTrips []float64 // go-redis round trips (pipelines count once)
	Scripts    []float64 // EVAL/EVALSHA calls the node ran (INFO commandstats)
	RedisCPU   []time.Duration

	ClientCPU time.Duration // this process's CPU per tick (getrusage)

	GoroutinesIdle    int // the Client made, nothing held
	GoroutinesHolding int // the most seen during Window
	GoroutinesAfter   int // every lock released
	HeapPerLock       float64

	Lost     int // holds whose Lost channel closed during the run
	Errors   int
	FirstErr error
}

// runWatchdog holds locks relock locks on addrs (with cfg.WatchdogLease)
// and measures the renewal cost over cfg.WatchdogTicks renewal periods.
// admin are clients of the same nodes, for INFO.
func runWatchdog(ctx context.Context, cfg Config, addrs []string, admin []*redis.Client, locks int) (*Watchdog, error) {
	lib := Lib{Name: NameRelock, NewProcess: relockProcess(lock.Options{Lease: cfg.WatchdogLease})}
	p, err := lib.NewProcess(addrs, acquirers)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	probe := p.Probe()
	r := &Watchdog{Nodes: len(addrs), Locks: locks, Lease: cfg.WatchdogLease}
	fail := func(err error) {
		r.Errors++
		if r.FirstErr == nil {
			r.FirstErr = err
		}
	}

	// Warm the script caches and open every pool connection the acquirers
	// will use, so that the heap measured below is the locks', not the
	// connections' buffers.
	var warmErr atomic.Pointer[error]
	eachParallel(acquirers, func(i int) {
		m := p.NewMutex(fmt.Sprintf("watchdog-warm-%d", i))
		err := m.Lock(ctx)
		if err == nil {
			err = m.Unlock(ctx)
		}
		if err != nil {
			warmErr.Store(&err)
		}
	})
	if err := warmErr.Load(); err != nil {
		return nil, fmt.Errorf("warm-up: %w", *err)
	}

	heapIdle := heapAfterGC()
	r.GoroutinesIdle = runtime.NumGoroutine()

	prefix := fmt.Sprintf("watchdog-%d-", time.Now().UnixNano())
	mutexes := make([]*lock.Mutex, locks)
	for i := range mutexes {
		mutexes[i] = p.NewMutex(prefix + strconv.Itoa(i)).(*lock.Mutex)
	}
	start := time.Now()
	held := make([]bool, locks)
	var errMu sync.Mutex
	eachParallel(locks, func(i int) {
		lctx, cancel := context.WithTimeout(ctx, lockTimeout)
		defer cancel()
		err := mutexes[i].Lock(lctx)
		if err == nil {
			held[i] = true
			return
		}
		errMu.Lock()
		fail(err)
		errMu.Unlock()
	})
	r.Acquire = time.Since(start)
	r.HeapPerLock = float64(int64(heapAfterGC())-int64(heapIdle)) / float64(locks)

	// Measure the steady state over whole renewal periods, starting one and
	// a half periods after the last acquisition: after every lock's first
	// renewal (the first one on a node also loads the renew script: a
	// NOSCRIPT round trip and the batch sent again), and half-way between
	// rounds, since locks taken together renew together and a window edge
	// on a round would count it or not by chance.
	every := cfg.WatchdogLease / 3
	window := time.Duration(cfg.WatchdogTicks) * every
	select {
	case <-time.After(every + every/2):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	before, err := snapshot(ctx, probe, admin)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	r.GoroutinesHolding = runtime.NumGoroutine()
	sample := time.NewTicker(50 * time.Millisecond)
	end := time.NewTimer(window)
sampling:
	for {
		select {
		case <-sample.C:
			r.GoroutinesHolding = max(r.GoroutinesHolding, runtime.NumGoroutine())
		case <-end.C:
			break sampling
		case <-ctx.Done():
			sample.Stop()
			return nil, ctx.Err()
		}
	}
	sample.Stop()
	after, err := snapshot(ctx, probe, admin)
	if err != nil {
		return nil, err
	}
	r.Window = time.Since(t0)
	r.Ticks = float64(r.Window) / float64(every)
	for i := range addrs {
		r.RoundTrips = append(r.RoundTrips, float64(after.roundTrips[i]-before.roundTrips[i])/r.Ticks)
		r.Scripts = append(r.Scripts, float64(after.scripts[i]-before.scripts[i])/r.Ticks)
		r.RedisCPU = append(r.RedisCPU, time.Duration(float64(after.redisCPU[i]-before.redisCPU[i])/r.Ticks))
	}
	r.ClientCPU = time.Duration(float64(after.cpu-before.cpu) / r.Ticks)

	for i, m := range mutexes {
		if !held[i] {
			continue
		}
		select {
		case <-m.Lost():
			r.Lost++
		default:
		}
	}
	eachParallel(locks, func(i int) {
		if !held[i] {
			return
		}
		uctx, cancel := context.WithTimeout(ctx, lockTimeout)
		defer cancel()
		if err := mutexes[i].Unlock(uctx); err != nil {
			errMu.Lock()
			fail(fmt.Errorf("unlock: %w", err))
			errMu.Unlock()
		}
	})
	r.GoroutinesAfter = runtime.NumGoroutine()
	return r, nil
}

// eachParallel calls f(0..n-1) from at most acquirers goroutines.
func eachParallel(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(acquirers, n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// counts is a snapshot of the counters the watchdog scenario compares.
type counts struct {
	roundTrips []int64         // per node, from the Client's hooks
	scripts    []int64         // per node, from INFO commandstats
	redisCPU   []time.Duration // per node, from INFO cpu
	cpu        time.Duration   // this process, user + system
}

func snapshot(ctx context.Context, probe *Probe, admin []*redis.Client) (counts, error) {
	var c counts
	for i, n := range probe.Nodes {
		c.roundTrips = append(c.roundTrips, n.RoundTrips())
		info, err := admin[i].Info(ctx, "commandstats", "cpu").Result()
		if err != nil {
			return c, fmt.Errorf("INFO on node %d: %w", i, err)
		}
		stats := parseInfo(info)
		c.scripts = append(c.scripts, callsOf(stats["cmdstat_evalsha"])+callsOf(stats["cmdstat_eval"]))
		cpu := secondsOf(stats["used_cpu_user"]) + secondsOf(stats["used_cpu_sys"])
		c.redisCPU = append(c.redisCPU, cpu)
	}
	c.cpu = processCPU()
	return c, nil
}

// parseInfo reads the "name:value" lines of an INFO reply.
func parseInfo(info string) map[string]string {
	out := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// callsOf reads calls=N from a cmdstat_ value; 0 when absent.
func callsOf(v string) int64 { return statOf(v, "calls") }

// statOf reads the integer field name of a commandstats value, e.g. usec in
// "calls=3,usec=40,usec_per_call=13.33" (0 when missing).
func statOf(v, name string) int64 {
	for _, field := range strings.Split(v, ",") {
		if n, ok := strings.CutPrefix(field, name+"="); ok {
			value, _ := strconv.ParseInt(n, 10, 64)
			return value
		}
	}
	return 0
}

// secondsOf reads a used_cpu_ value in seconds.
func secondsOf(v string) time.Duration {
	s, _ := strconv.ParseFloat(v, 64)
	return time.Duration(s * float64(time.Second))
}
