package peers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
)

// Scenario names, for Config.Scenarios.
const (
	ScenarioCeiling     = "ceiling"
	ScenarioContended   = "contended"
	ScenarioUncontended = "uncontended"
	ScenarioSequential  = "sequential"
	ScenarioWatchdog    = "watchdog"
)

// Scenarios lists every scenario in the order Run runs them.
var Scenarios = []string{ScenarioCeiling, ScenarioContended, ScenarioUncontended, ScenarioSequential, ScenarioWatchdog}

// Config sets the size of every scenario.
type Config struct {
	Duration time.Duration // measured time of each run
	Warmup   time.Duration // unmeasured time before each run, same clients
	Rounds   int           // uncontended and sequential: Duration is split in that many interleaved rounds

	Contenders int           // goroutines on the one contended key
	Work       time.Duration // time holding the lock (time.Sleep)
	Pause      time.Duration // time between Unlock and the next Lock (time.Sleep)

	Uncontended int // goroutines on distinct keys

	WatchdogLocks []int         // lock counts held in the watchdog scenario
	WatchdogLease time.Duration // relock lease there, renewed every third
	WatchdogTicks int           // renewal periods measured

	BenchRequests int // redis-benchmark -n without pipelining

	Scenarios []string // the scenarios to run; all when empty
	Libs      []string // substrings of library names to run; all when empty

	Progress io.Writer // one line per run; nil for none
}

// DefaultConfig returns the full run: 3 s per run, about 3 minutes in all.
func DefaultConfig() Config {
	return Config{
		Duration:      3 * time.Second,
		Warmup:        500 * time.Millisecond,
		Rounds:        6,
		Contenders:    16,
		Work:          time.Millisecond,
		Pause:         200 * time.Microsecond,
		Uncontended:   64,
		WatchdogLocks: []int{1000, 10000},
		WatchdogLease: 3 * time.Second,
		WatchdogTicks: 3,
		BenchRequests: 200000,
	}
}

// QuickConfig returns a smoke-test run: every scenario, tiny.
func QuickConfig() Config {
	c := DefaultConfig()
	c.Duration = 300 * time.Millisecond
	c.Warmup = 100 * time.Millisecond
	c.Rounds = 2
	c.WatchdogLocks = []int{200}
	c.WatchdogLease = 600 * time.Millisecond
	c.WatchdogTicks = 2
	c.BenchRequests = 10000
	return c
}

func (c Config) wants(scenario string) bool {
	return len(c.Scenarios) == 0 || slices.Contains(c.Scenarios, scenario)
}

func (c Config) wantsLib(name string) bool {
	if len(c.Libs) == 0 {
		return true
	}
	for _, s := range c.Libs {
		if strings.Contains(strings.ToLower(name), strings.ToLower(s)) {
			return true
		}
	}
	return false
}

func (c Config) progress(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
}

// Servers are the Redis masters every scenario runs on.
type Servers struct {
	Addrs []string        // direct addresses, node order
	Admin []*redis.Client // a client per node for FLUSHALL and INFO
}

// Report is everything one Run measured.
type Report struct {
	Config Config
	Start  time.Time
	Wall   time.Duration
	Env    Env

	Ceiling     *Ceiling
	Contended   []*Contended
	Uncontended []*Load
	Sequential  []*Load
	// The references measured in the rounds of the uncontended and
	// sequential runs: PING on the first master, then (with 3 masters)
	// PING to 3 masters in parallel.
	UncontendedRefs, SequentialRefs []Dist
	Watchdog                        []*Watchdog
	Failures                        []string // runs that could not complete
}

// Env describes where the run happened.
type Env struct {
	GoVersion string
	CPUs      int
	Redis     string // server version
	Peers     []string
	// LoadStart and LoadEnd are /proc/loadavg at the start and the end of
	// the run (other work on the machine skews the numbers).
	LoadStart, LoadEnd string
}

// Run runs the configured scenarios on srv, flushing the nodes before each
// library's run. It returns an error only when ctx ends or the nodes cannot
// be flushed; a run that fails is listed in Report.Failures.
func Run(ctx context.Context, cfg Config, srv Servers) (*Report, error) {
	rep := &Report{Config: cfg, Start: time.Now(), Env: env(ctx, srv)}
	defer func() {
		rep.Wall = time.Since(rep.Start)
		rep.Env.LoadEnd = loadAvg()
	}()
	if len(srv.Addrs) == 0 {
		return rep, errors.New("peers: no Redis node")
	}
	flush := func() error {
		for i, c := range srv.Admin {
			if err := c.FlushAll(ctx).Err(); err != nil {
				return fmt.Errorf("FLUSHALL on node %d: %w", i, err)
			}
		}
		return nil
	}
	failed := func(what string, err error) {
		rep.Failures = append(rep.Failures, fmt.Sprintf("%s: %v", what, err))
		cfg.progress("  FAILED %s: %v", what, err)
	}
	libs := Libs(lock.Options{})
	nodeCounts := []int{1}
	if len(srv.Addrs) >= 3 {
		nodeCounts = append(nodeCounts, 3)
	}

	if cfg.wants(ScenarioCeiling) {
		if err := flush(); err != nil {
			return rep, err
		}
		cfg.progress("ceiling on %s", srv.Addrs[0])
		rep.Ceiling = measureCeiling(ctx, cfg, srv.Addrs)
	}

	if cfg.wants(ScenarioContended) {
		for _, n := range nodeCounts {
			for _, lib := range libs {
				if (lib.SingleNode && n > 1) || !cfg.wantsLib(lib.Name) {
					continue
				}
				for _, mode := range []string{ModePerGoroutine, ModeShared} {
					if err := flush(); err != nil {
						return rep, err
					}
					what := fmt.Sprintf("contended %s, %d master(s), %s", lib.Name, n, mode)
					cfg.progress("%s", what)
					ping, perr := adjacentPing(ctx, cfg, srv)
					r, err := runContended(ctx, cfg, lib, srv.Addrs[:n], srv.Admin[:n], mode)
					if err == nil {
						err = perr
					}
					if err != nil {
						if ctx.Err() != nil {
							return rep, ctx.Err()
						}
						failed(what, err)
						continue
					}
					r.Ping = ping
					rep.Contended = append(rep.Contended, r)
				}
			}
		}
	}

	// Without contention the retry delay never applies: one redsync row.
	var loadLibs []Lib
	for _, l := range libs {
		if l.Name != NameRedsyncFast && cfg.wantsLib(l.Name) {
			loadLibs = append(loadLibs, l)
		}
	}
	addrSets := make([][]string, len(nodeCounts))
	for i, n := range nodeCounts {
		addrSets[i] = srv.Addrs[:n]
	}
	refs := []Reference{{Name: "PING", Measure: func(ctx context.Context, d time.Duration) (Dist, error) {
		return measurePing(ctx, srv.Admin[0], d)
	}}}
	if len(srv.Addrs) >= 3 {
		f := newFanOut(srv.Addrs[:3])
		defer f.close()
		refs = append(refs, Reference{Name: "PING to 3 masters in parallel", Measure: f.measure})
	}
	for _, sc := range []struct {
		name       string
		goroutines int
		out        *[]*Load
		refs       *[]Dist
	}{
		{ScenarioUncontended, cfg.Uncontended, &rep.Uncontended, &rep.UncontendedRefs},
		{ScenarioSequential, 1, &rep.Sequential, &rep.SequentialRefs},
	} {
		if !cfg.wants(sc.name) || len(loadLibs) == 0 {
			continue
		}
		if err := flush(); err != nil {
			return rep, err
		}
		cfg.progress("%s: %d rounds of every library (%d goroutines)", sc.name, cfg.Rounds, sc.goroutines)
		runs, dists, err := runLoads(ctx, cfg, loadLibs, addrSets, sc.goroutines, refs,
			func(what string, err error) { failed(sc.name+" "+what, err) })
		if err != nil {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			failed(sc.name, err)
			continue
		}
		*sc.out, *sc.refs = runs, dists
	}

	if cfg.wants(ScenarioWatchdog) && cfg.wantsLib(NameRelock) {
		for _, n := range nodeCounts {
			for _, locks := range cfg.WatchdogLocks {
				if err := flush(); err != nil {
					return rep, err
				}
				what := fmt.Sprintf("watchdog %d locks, %d master(s)", locks, n)
				cfg.progress("%s", what)
				r, err := runWatchdog(ctx, cfg, srv.Addrs[:n], srv.Admin[:n], locks)
				if err != nil {
					if ctx.Err() != nil {
						return rep, ctx.Err()
					}
					failed(what, err)
					continue
				}
				rep.Watchdog = append(rep.Watchdog, r)
			}
		}
	}
	return rep, flush()
}

// adjacentPing measures the PING round trip on the first node right before
// a run: the machine's load drifts during a long run (and other work may
// share it), so each run is compared with the round trip of its moment.
func adjacentPing(ctx context.Context, cfg Config, srv Servers) (Dist, error) {
	return measurePing(ctx, srv.Admin[0], min(cfg.Duration/6, 500*time.Millisecond))
}

func env(ctx context.Context, srv Servers) Env {
	e := Env{GoVersion: runtime.Version(), CPUs: runtime.NumCPU(), Peers: peerVersions(), LoadStart: loadAvg()}
	if len(srv.Admin) > 0 {
		if info, err := srv.Admin[0].Info(ctx, "server").Result(); err == nil {
			e.Redis = parseInfo(info)["redis_version"]
		}
	}
	return e
}

// loadAvg returns the 1, 5 and 15 minute load averages, or "?".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}
