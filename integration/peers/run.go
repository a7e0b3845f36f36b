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
	ScenarioDesign      = "design"
	ScenarioWatchdog    = "watchdog"
)

// Scenarios lists every scenario in the order Run runs them.
var Scenarios = []string{ScenarioCeiling, ScenarioContended, ScenarioUncontended, ScenarioSequential, ScenarioDesign, ScenarioWatchdog}

// MasterCounts are the node counts the scenarios run at, as far as the
// servers go. The contended scenario runs its shared-client rows up to
// sharedUpTo masters and the watchdog up to watchdogUpTo (both bound the
// run's length).
var MasterCounts = []int{1, 3, 5}

const (
	sharedUpTo   = 3
	watchdogUpTo = 3
)

// Config sets the size of every scenario.
type Config struct {
	Duration time.Duration // measured time of each run
	Warmup   time.Duration // unmeasured time before each run, same clients
	Rounds   int           // uncontended and sequential: Duration is split in that many interleaved rounds
	// ContendedRounds: the contended scenario's Duration and Warmup are
	// split in that many interleaved rounds, per master count.
	ContendedRounds int

	Contenders int           // goroutines on the one contended key
	Work       time.Duration // time holding the lock (time.Sleep)
	Pause      time.Duration // time between Unlock and the next Lock (time.Sleep)

	Uncontended int // goroutines on distinct keys

	// The design document's table: DesignClients goroutines, each with its
	// own Process whose go-redis clients have DesignPool connections per
	// node, each on its own key.
	DesignClients int
	DesignPool    int

	WatchdogLocks []int         // lock counts held in the watchdog scenario
	WatchdogLease time.Duration // relock lease there, renewed every third
	WatchdogTicks int           // renewal periods measured

	BenchRequests int // redis-benchmark -n without pipelining

	Scenarios []string // the scenarios to run; all when empty
	Libs      []string // substrings of library names to run (=NAME: that name alone); all when empty
	Masters   []int    // node counts of MasterCounts to run at; all the servers allow when empty

	// Route says how the clients reach the nodes, RouteBridge or
	// RoutePublished; it is only reported (Servers.Addrs are the addresses).
	Route string

	Progress io.Writer // one line per run; nil for none
}

// The routes from the clients to Redis containers on this host.
const (
	// RouteBridge: the containers' own IPs on Docker's bridge network, one
	// kernel hop as between hosts.
	RouteBridge = "bridge"
	// RoutePublished: Docker's published loopback ports, through its
	// userland proxy: two more socket copies in another process on every
	// round trip and every Pub/Sub message.
	RoutePublished = "published"
)

// DefaultConfig returns the full run: 3 s per run, about 6 minutes in all.
func DefaultConfig() Config {
	return Config{
		Duration:        3 * time.Second,
		Warmup:          500 * time.Millisecond,
		Rounds:          6,
		ContendedRounds: 3,
		Contenders:      16,
		Work:            time.Millisecond,
		Pause:           200 * time.Microsecond,
		Uncontended:     64,
		DesignClients:   100,
		DesignPool:      2,
		WatchdogLocks:   []int{1000, 10000},
		WatchdogLease:   3 * time.Second,
		WatchdogTicks:   3,
		BenchRequests:   200000,
	}
}

// QuickConfig returns a smoke-test run: every scenario, tiny.
func QuickConfig() Config {
	c := DefaultConfig()
	c.Duration = 300 * time.Millisecond
	c.Warmup = 100 * time.Millisecond
	c.Rounds = 2
	c.ContendedRounds = 1
	c.WatchdogLocks = []int{200}
	c.WatchdogLease = 600 * time.Millisecond
	c.WatchdogTicks = 2
	c.BenchRequests = 10000
	c.DesignClients = 10
	return c
}

func (c Config) wants(scenario string) bool {
	return len(c.Scenarios) == 0 || slices.Contains(c.Scenarios, scenario)
}

// nodeCounts returns the node counts to run at with servers masters.
func (c Config) nodeCounts(servers int) []int {
	var out []int
	for _, n := range MasterCounts {
		if n <= servers && (len(c.Masters) == 0 || slices.Contains(c.Masters, n)) {
			out = append(out, n)
		}
	}
	return out
}

func (c Config) wantsLib(name string) bool {
	if len(c.Libs) == 0 {
		return true
	}
	for _, s := range c.Libs {
		if exact, ok := strings.CutPrefix(s, "="); ok {
			if strings.EqualFold(name, exact) {
				return true
			}
			continue
		}
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
	// sequential runs: PING on the first master, then PING to 3 and to 5
	// masters in parallel (as far as the run goes).
	UncontendedRefs, SequentialRefs []RefDist
	// Design is the design document's table, a group per node count.
	Design   []*DesignGroup
	Watchdog []*Watchdog
	Failures []string // runs that could not complete
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
	// attempt flushes the nodes and runs one run, whose failure it files;
	// it returns an error only when the whole Run must end.
	attempt := func(what string, run func() error) error {
		if err := flush(); err != nil {
			return err
		}
		cfg.progress("%s", what)
		if err := run(); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			failed(what, err)
		}
		return nil
	}
	libs := Libs(lock.Options{})
	nodeCounts := cfg.nodeCounts(len(srv.Addrs))
	if len(nodeCounts) == 0 {
		return rep, fmt.Errorf("peers: no node count of %v fits %d server(s)", cfg.Masters, len(srv.Addrs))
	}

	if cfg.wants(ScenarioCeiling) {
		if err := flush(); err != nil {
			return rep, err
		}
		cfg.progress("ceiling on %s", srv.Addrs[0])
		rep.Ceiling = measureCeiling(ctx, cfg, srv.Addrs, nodeCounts)
	}

	if cfg.wants(ScenarioContended) {
		// The cells of one master count run in interleaved rounds, each
		// cell a share of the measured time in every round, so that the
		// rows compared with each other (relock and its peers, the A/B
		// rows) share the machine's drifting load.
		rounds := max(cfg.ContendedRounds, 1)
		round := cfg
		round.Duration = cfg.Duration / time.Duration(rounds)
		round.Warmup = cfg.Warmup / time.Duration(rounds)
		for _, n := range nodeCounts {
			cells := contendedCells(cfg, libs, n)
			pooled := make([]*Contended, len(cells))
			for i := range rounds {
				for j, cell := range cells {
					what := fmt.Sprintf("contended %s, %d master(s), %s, round %d of %d", cell.lib.Name, n, cell.mode, i+1, rounds)
					err := attempt(what, func() error {
						ping, fan, idle, perr := adjacentPing(ctx, round, srv, n)
						r, err := runContended(ctx, round, cell.lib, srv.Addrs[:n], srv.Admin[:n], cell.mode)
						if err == nil {
							err = perr
						}
						if err != nil {
							return err
						}
						r.Ping, r.FanPing, r.IdlePing = ping, fan, idle
						pooled[j] = pooled[j].pool(r)
						return nil
					})
					if err != nil {
						return rep, err
					}
				}
			}
			for _, r := range pooled {
				if r != nil {
					rep.Contended = append(rep.Contended, r)
				}
			}
		}
	}

	// Without contention the retry delay never applies: one redsync row,
	// and the contention A/B rows stay out.
	var loadLibs []Lib
	for _, l := range libs {
		if l.Name != NameRedsyncFast && !l.ContendedOnly && cfg.wantsLib(l.Name) {
			loadLibs = append(loadLibs, l)
		}
	}
	refs, closeRefs := references(srv, nodeCounts)
	defer closeRefs()
	for _, sc := range []struct {
		name       string
		goroutines int
		out        *[]*Load
		refs       *[]RefDist
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
		scLibs := loadLibs
		if sc.goroutines == 1 {
			// One goroutine never has two calls out on a node.
			scLibs = slices.DeleteFunc(slices.Clone(loadLibs), func(l Lib) bool { return l.UncontendedOnly })
		}
		runs, dists, err := runLoads(ctx, cfg, scLibs, srv, nodeCounts, sc.goroutines, 0, refs,
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

	if cfg.wants(ScenarioDesign) {
		var designLibs []Lib
		for _, l := range libs {
			if (l.Name == NameRelock || l.Name == NameRedsyncDefaults) && cfg.wantsLib(l.Name) {
				designLibs = append(designLibs, l)
			}
		}
		for _, n := range nodeCounts {
			if len(designLibs) == 0 {
				break
			}
			what := fmt.Sprintf("design table, %d master(s), %d separate clients per library", n, cfg.DesignClients)
			err := attempt(what, func() error {
				g, err := runDesign(ctx, cfg, designLibs, srv, n, func(w string, err error) { failed(what+" "+w, err) })
				if err == nil {
					rep.Design = append(rep.Design, g)
				}
				return err
			})
			if err != nil {
				return rep, err
			}
		}
	}

	if cfg.wants(ScenarioWatchdog) && cfg.wantsLib(NameRelock) {
		for _, n := range nodeCounts {
			if n > watchdogUpTo {
				continue
			}
			for _, locks := range cfg.WatchdogLocks {
				err := attempt(fmt.Sprintf("watchdog %d locks, %d master(s)", locks, n), func() error {
					r, err := runWatchdog(ctx, cfg, srv.Addrs[:n], srv.Admin[:n], locks)
					if err == nil {
						rep.Watchdog = append(rep.Watchdog, r)
					}
					return err
				})
				if err != nil {
					return rep, err
				}
			}
		}
	}
	return rep, flush()
}

// contendedCell is one row of the contended table: a library and a client
// mode.
type contendedCell struct {
	lib  Lib
	mode string
}

// contendedCells returns the contended scenario's rows on n masters, in
// table order.
func contendedCells(cfg Config, libs []Lib, n int) []contendedCell {
	var cells []contendedCell
	for _, lib := range libs {
		if (lib.SingleNode && n > 1) || lib.UncontendedOnly || !cfg.wantsLib(lib.Name) {
			continue
		}
		for _, mode := range []string{ModePerGoroutine, ModeShared} {
			if mode == ModeShared && n > sharedUpTo {
				continue
			}
			cells = append(cells, contendedCell{lib, mode})
		}
	}
	return cells
}

// adjacentPing measures the PING round trip on the first node right before
// a run, and with n > 1 masters the PING to the first n in parallel: the
// machine's load drifts during a long run (and other work may share it), so
// each run is compared with the round trips of its moment. idle is the PING
// to the n masters in parallel (to the one alone when n is 1), each round
// after a sleep of the run's hold (cfg.Work): a round trip that starts from
// a machine left idle, as each of a hand-off's does.
func adjacentPing(ctx context.Context, cfg Config, srv Servers, n int) (ping, fan, idle Dist, err error) {
	d := min(cfg.Duration/12, 250*time.Millisecond)
	f := newFanOut(srv.Addrs[:n])
	defer f.close()
	if idle, err = f.measureAfter(ctx, d, cfg.Work); err != nil {
		return nil, nil, nil, err
	}
	// The sequential PING goes the libraries' route (the fan-out's client
	// on the first master), not through Servers.Admin: with RouteBridge,
	// Admin reaches the nodes through Docker's published ports, whose
	// userland proxy adds a hop the libraries never pay.
	if ping, err = measurePing(ctx, f.clients[0], d); err != nil || n == 1 {
		return ping, nil, idle, err
	}
	fan, err = f.measure(ctx, d)
	return ping, fan, idle, err
}

// references returns the PINGs measured beside the libraries in the
// interleaved scenarios: on the first master, then to the first n masters
// in parallel for each n > 1 of counts; close closes their clients.
func references(srv Servers, counts []int) (refs []Reference, close func()) {
	// On the libraries' route, as adjacentPing's PING.
	first := newFanOut(srv.Addrs[:1])
	refs = []Reference{{Name: "PING", Measure: func(ctx context.Context, d time.Duration) (Dist, error) {
		return measurePing(ctx, first.clients[0], d)
	}}}
	fans := []*fanOut{first}
	for _, n := range counts {
		if n > 1 {
			f := newFanOut(srv.Addrs[:n])
			fans = append(fans, f)
			refs = append(refs, Reference{Name: fmt.Sprintf("PING to %d masters in parallel", n), Nodes: n, Measure: f.measure})
		}
	}
	return refs, func() {
		for _, f := range fans {
			f.close()
		}
	}
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
