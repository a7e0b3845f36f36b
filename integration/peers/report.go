package peers

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"
)

// peerModules are the modules whose versions a report names.
var peerModules = []string{
	"github.com/go-redsync/redsync/v4",
	"github.com/bsm/redislock",
	"github.com/redis/rueidis",
	"github.com/redis/go-redis/v9",
}

func peerVersions() []string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	var out []string
	for _, want := range peerModules {
		for _, d := range bi.Deps {
			if d.Path == want {
				v := d.Version
				if d.Replace != nil {
					v = d.Replace.Version
				}
				out = append(out, want+" "+v)
			}
		}
	}
	return out
}

// table writes a markdown table.
type table struct {
	head []string
	rows [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	line := func(cells []string) {
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	line(t.head)
	sep := make([]string, len(t.head))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
	fmt.Fprintln(w)
}

// Write renders the report as markdown.
func (r *Report) Write(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "# relock side-by-side benchmark\n\n")
	route := "Docker's published loopback ports (-route published: Docker's userland proxy is on every round trip and every Pub/Sub message)"
	if c.Route == RouteBridge {
		route = "the containers' own IPs on Docker's bridge network (-route bridge: no userland proxy)"
	}
	fmt.Fprintf(w, "Run %s, wall time %s. %s, %d CPUs, Redis %s in containers on this host; clients reach the nodes directly (no toxiproxy) at %s.\n\n",
		r.Start.Format(time.RFC3339), r.Wall.Round(time.Second), r.Env.GoVersion, r.Env.CPUs, r.Env.Redis, route)
	fmt.Fprintf(w, "Load average (1/5/15 min) at start %s, at end %s.\n\n", r.Env.LoadStart, r.Env.LoadEnd)
	if len(r.Env.Peers) > 0 {
		fmt.Fprintf(w, "Peers: %s.\n\n", strings.Join(r.Env.Peers, ", "))
	}
	fmt.Fprintf(w, "Each run: %v warm-up (not measured) then %v measured, same clients; FLUSHALL before each library's run (before each scenario for the interleaved ones). "+
		"go-redis clients: RESP2, no retries, pool sized to the goroutines. relock: default options. "+
		"redsync: defaults (8 s expiry, 32 tries 50–250 ms apart) or 2 ms retry delay with tries to spare. "+
		"redislock: 10 s TTL, linear 2 ms backoff. rueidislock: one key (KeyMajority 1), client-side-caching wake-ups, one auto-pipelined connection per Locker.\n\n",
		c.Warmup, c.Duration)

	if r.Ceiling != nil {
		r.writeCeiling(w)
	}
	if len(r.Contended) > 0 {
		r.writeContended(w)
	}
	if len(r.Uncontended) > 0 {
		fmt.Fprintf(w, "## Uncontended throughput: %d goroutines, a key each, one shared client per library\n\n", c.Uncontended)
		fmt.Fprint(w, c.rounds(r.UncontendedRefs)+loadNotes+
			NameRelockPipelines+": relock's Clients made with abtest.PipelinesPerNode at 4, as every Client had before its four pipelines were shared among its nodes (the A/B of that change; the same as relock on 1 master).\n\n")
		writeLoad(w, r.Uncontended, true)
	}
	if len(r.Sequential) > 0 {
		fmt.Fprintf(w, "## Sequential: one goroutine, lock then unlock\n\n")
		fmt.Fprint(w, c.rounds(r.SequentialRefs)+loadNotes)
		writeLoad(w, r.Sequential, false)
	}
	if len(r.Design) > 0 {
		r.writeDesign(w)
	}
	if len(r.Contended) > 0 || len(r.Uncontended) > 0 {
		r.writeByCommand(w)
	}
	if len(r.Watchdog) > 0 {
		r.writeWatchdog(w)
	}
	r.writeSummary(w)
	r.writeErrors(w)
	if len(r.Failures) > 0 {
		fmt.Fprintf(w, "## Runs that failed\n\n")
		for _, f := range r.Failures {
			fmt.Fprintf(w, "- %s\n", f)
		}
		fmt.Fprintln(w)
	}
}

// loadNotes explains the columns of the interleaved scenarios' tables.
const loadNotes = " Client CPU: this process's user+system time (getrusage) per cycle; allocs: heap allocations per cycle. " +
	"Server cmds /acq: every command the masters ran (INFO commandstats deltas around each slice, so also the commands scripts run; " +
	"the bench's own INFO taken off), summed over the masters, per successful Lock; per node: each master's share. " +
	"Redis CPU /acq: the masters' user+system CPU time in the same windows (INFO cpu deltas), summed over the masters, per successful Lock: " +
	"the client and the servers share this machine's cores, so what a cycle costs the servers bounds the rate as much as what it costs the client.\n\n"

// rounds describes the interleaved rounds and the PINGs measured in them.
func (c Config) rounds(refs []RefDist) string {
	rounds := max(c.Rounds, 1)
	s := fmt.Sprintf("Measured in %d rounds: each round gives every row, and sequential go-redis PINGs (to the first master, and to the masters in parallel), "+
		"%v in turn, so that all share the machine's drifting load.", rounds, c.Duration/time.Duration(rounds))
	for _, ref := range refs {
		s += fmt.Sprintf(" %s in those rounds", ref.Name)
		if ref.Nodes > 1 {
			s += ", until the last reply"
		}
		s += fmt.Sprintf(": p50 %s, p99 %s.", fmtDur(ref.Dist.P50()), fmtDur(ref.Dist.P99()))
	}
	return s
}

func (r *Report) writeCeiling(w io.Writer) {
	c := r.Ceiling
	fmt.Fprintf(w, "## Ceiling (node %s, same run)\n\n", c.Addr)
	t := table{head: []string{"measure", "result"}}
	if c.PingErr != nil {
		t.add("go-redis PING round trip, sequential", "error: "+c.PingErr.Error())
	} else {
		t.add("go-redis PING round trip, sequential", fmt.Sprintf("p50 %s, p99 %s (%d pings)", fmtDur(c.Ping.P50()), fmtDur(c.Ping.P99()), c.Ping.N()))
	}
	for _, f := range c.FanOut {
		label := fmt.Sprintf("go-redis PING to %d masters in parallel, until the last reply", f.Nodes)
		if f.Err != nil {
			t.add(label, "error: "+f.Err.Error())
		} else {
			t.add(label, fmt.Sprintf("p50 %s, p99 %s (%d rounds)", fmtDur(f.Dist.P50()), fmtDur(f.Dist.P99()), f.Dist.N()))
		}
	}
	label := fmt.Sprintf("go-redis EVALSHA (one SET PX), %d goroutines, no pipelining", r.Config.Uncontended)
	switch {
	case c.GoRedisErr != nil:
		t.add(label, "error: "+c.GoRedisErr.Error())
	case c.GoRedis != nil:
		t.add(label, fmt.Sprintf("%s/s, p50 %s, p99 %s", fmtRate(c.GoRedis.PerSec()), fmtDur(c.GoRedis.Lat.P50()), fmtDur(c.GoRedis.Lat.P99())))
	}
	for _, b := range c.Bench {
		t.add(fmt.Sprintf("redis-benchmark EVALSHA (one SET PX), -c %d -P %d -n %d", b.Clients, b.Pipeline, b.Requests),
			fmt.Sprintf("%s/s, p50 %s", fmtRate(b.PerSec), fmtDur(b.P50)))
	}
	if c.BenchErr != nil {
		t.add("redis-benchmark EVALSHA", "not measured: "+c.BenchErr.Error())
	}
	for _, s := range c.Scripts {
		t.add("server time per call (INFO commandstats), redis-benchmark -c 16 -P 8 on free keys: "+s.What,
			fmt.Sprintf("%.1f µs per call (%s/s)", float64(s.PerCall)/float64(time.Microsecond), fmtRate(s.PerSec)))
	}
	if c.ScriptsErr != nil {
		t.add("server time per call", "not measured: "+c.ScriptsErr.Error())
	}
	t.write(w)
}

func (r *Report) writeContended(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "## Contended hand-off: %d goroutines on one key, hold %v (time.Sleep), pause %v (time.Sleep)\n\n",
		c.Contenders, c.Work, c.Pause)
	rounds := max(c.ContendedRounds, 1)
	if rounds > 1 {
		fmt.Fprintf(w, "Measured in %d rounds per master count: each round runs every row of that master count in turn, %v each after %v of warm-up, with new clients; "+
			"each row pools its rounds (samples and counts alike; per goroutine min–max adds up each goroutine's acquisitions over the rounds), "+
			"so that the rows set side by side share the machine's drifting load. ", rounds,
			(c.Duration / time.Duration(rounds)).Round(time.Millisecond), (c.Warmup / time.Duration(rounds)).Round(time.Millisecond))
	}
	fmt.Fprintf(w, "Clients: per goroutine = every goroutine its own Client (its own go-redis clients), as separate processes would have; shared = one for all. "+
		"relock (split votes, before): relock's Clients made with abtest.SplitVotes set, contending as relock did before its tie-breaker; relock (no wait queue, before): with abtest.NoWaitQueue set, waiting without the tie-breaker's wait queue, which hands each release to one waiter across processes (the A/B of the contention protocol). "+
		"PING p50 before: sequential go-redis PINGs on the first master just before each of the row's runs (the machine's load drifts), on the libraries' route; on this kind of virtual machine they are bimodal (by hand, one client within one minute: p50 about 10 µs in some windows, 65 to 105 µs in others), so this column is information only; ∥ PING to N: a PING to every master of the run in parallel, until the last reply, just before each run too; after idle: the same (to the one master alone on 1), each after a sleep of the hold, as each round trip of a hand-off starts from a machine idle for the hold (on this virtual machine an idle core is slow to wake). "+
		"Hand-off: from the holder calling Unlock to another goroutine's Lock returning. "+
		"Wake / final try split it at the moment the new holder's client sent its last script before Lock returned "+
		"(go-redis clients only; with a shared client only relock, whose scripts carry the owner id). Re-acquired: share of acquisitions won by the goroutine that had just released. "+
		"Lock wait: every acquisition, from calling Lock to its return (the hand-off columns only see acquisitions by another goroutine: "+
		"a poller that mostly loses to the releaser shows a short hand-off but long waits). "+
		"Round trips /cycle: go-redis commands plus pipelines of every client, per acquisition (rueidis: not hooked). "+
		"PUBLISH /cycle: PUBLISH calls the nodes ran (also inside scripts), per acquisition, summed over the masters. "+
		"Server cmds /acq: every command the nodes ran during the measured time (INFO commandstats deltas: also the commands scripts run, subscriptions, PINGs; the bench's own INFO taken off), per acquisition, summed over the masters. "+
		"Stuck: Lock waits longer than %v. Gave up: Lock calls that ended without the lock (library retry budget, or the %v wait bound) and were called again.\n\n",
		stuckAfter, lockTimeout)
	t := table{head: []string{"library", "masters", "clients", "PING p50 before", "∥ PING to N p50 before", "∥ PING after idle p50", "hand-off p50", "hand-off p99", "wake p50", "final try p50",
		"Unlock p50", "Lock wait p50", "Lock wait p99", "max wait", "cycles/s", "server cmds /acq", "round trips /cycle", "PUBLISH /cycle", "re-acquired", "per goroutine min–max",
		"stuck > 1 s", "gave up", "errors", "overlaps"}}
	for _, x := range r.Contended {
		lo, hi := spread(x.PerGoroutine)
		errs := fmt.Sprint(x.Errors)
		if x.FirstErr != nil {
			errs += " (" + shorten(x.FirstErr.Error()) + ")"
		}
		trips := "–"
		if x.RoundTrips > 0 {
			trips = fmt.Sprintf("%.1f", x.RoundTrips)
		}
		lib := x.Lib
		if x.Rounds < rounds {
			// A round failed (listed under "Runs that failed"): fewer samples.
			lib += fmt.Sprintf(" (%d of %d rounds)", x.Rounds, rounds)
		}
		t.add(lib, fmt.Sprint(x.Nodes), x.Mode, fmtDur(x.Ping.P50()), fmtDur(x.FanPing.P50()), fmtDur(x.IdlePing.P50()), fmtDur(x.Handoff.P50()), fmtDur(x.Handoff.P99()),
			fmtDur(x.Wake.P50()), fmtDur(x.Acquire.P50()), fmtDur(x.Unlock.P50()), fmtDur(x.Wait.P50()), fmtDur(x.Wait.P99()), fmtDur(x.MaxWait),
			fmtRate(x.CyclesPerSec()), fmtCmds(x.ServerCmds), trips, fmt.Sprintf("%.1f", x.Publishes), fmt.Sprintf("%.0f%%", 100*x.SelfShare()), fmt.Sprintf("%d–%d", lo, hi),
			fmt.Sprint(x.Stuck), fmt.Sprint(x.GaveUp), errs, fmt.Sprint(x.Overlaps))
	}
	t.write(w)
}

func writeLoad(w io.Writer, runs []*Load, throughput bool) {
	var t table
	if throughput {
		t.head = []string{"library", "masters", "cycles/s", "Lock p50", "Lock p99", "Unlock p50", "Unlock p99", "client CPU /cycle", "allocs /cycle",
			"server cmds /acq", "per node", "Redis CPU /acq", "errors"}
	} else {
		t.head = []string{"library", "masters", "Lock p50", "Lock p99", "Unlock p50", "Unlock p99", "lock+unlock p50", "lock+unlock p99", "client CPU /cycle", "allocs /cycle",
			"server cmds /acq", "per node", "Redis CPU /acq", "errors"}
	}
	for _, x := range runs {
		errs := fmt.Sprint(x.Errors)
		if x.FirstErr != nil {
			errs += " (" + shorten(x.FirstErr.Error()) + ")"
		}
		if throughput {
			t.add(x.Lib, fmt.Sprint(x.Nodes), fmtRate(x.CyclesPerSec()), fmtDur(x.LockLat.P50()), fmtDur(x.LockLat.P99()),
				fmtDur(x.UnlockLat.P50()), fmtDur(x.UnlockLat.P99()), fmtDur(x.CPU), fmt.Sprintf("%.0f", x.Allocs),
				fmtCmds(x.ServerCmds), joinFloats(x.ServerCmdsPerNode), fmtDur(x.RedisCPU), errs)
		} else {
			t.add(x.Lib, fmt.Sprint(x.Nodes), fmtDur(x.LockLat.P50()), fmtDur(x.LockLat.P99()),
				fmtDur(x.UnlockLat.P50()), fmtDur(x.UnlockLat.P99()), fmtDur(x.Cycle.P50()), fmtDur(x.Cycle.P99()),
				fmtDur(x.CPU), fmt.Sprintf("%.0f", x.Allocs), fmtCmds(x.ServerCmds), joinFloats(x.ServerCmdsPerNode), fmtDur(x.RedisCPU), errs)
		}
	}
	t.write(w)
}

// writeByCommand breaks down the server commands per acquisition of the
// contended and uncontended runs by command, so that what contention adds
// to a library's cycle shows command by command.
func (r *Report) writeByCommand(w io.Writer) {
	fmt.Fprintf(w, "## Server commands per acquisition, by command\n\n")
	fmt.Fprintf(w, "The server cmds /acq of the contended and uncontended tables above, by command (INFO commandstats deltas, summed over the masters; "+
		"EVALSHA counts the script call, and each command the script runs counts under its own name; commands under %.2f per acquisition are summed as others).\n\n", minShownCommand)
	t := table{head: []string{"scenario", "library", "masters", "clients", "server cmds /acq", "by command"}}
	for _, x := range r.Contended {
		t.add("contended", x.Lib, fmt.Sprint(x.Nodes), x.Mode, fmtCmds(x.ServerCmds), fmtByCommand(x.ServerCmdsBy))
	}
	for _, x := range r.Uncontended {
		t.add("uncontended", x.Lib, fmt.Sprint(x.Nodes), "shared", fmtCmds(x.ServerCmds), fmtByCommand(x.ServerCmdsBy))
	}
	t.write(w)
}

func (r *Report) writeDesign(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "## The design document's table: %d separate clients, a key each\n\n", c.DesignClients)
	fmt.Fprintf(w, "%d goroutines per library, each with its own client (relock: its own lock.Client; redsync: its own redsync instance; "+
		"each with its own go-redis client per master, pool %d), each locking and unlocking its own key (one of %d) in a loop: "+
		"concurrent but uncontended, which is what the document's \"acquire latency\" and \"throughput\" measure. "+
		"Acquire: the Lock call; acquisitions/s: Locks completed (each followed by its Unlock) per second. relock and redsync with their defaults. "+
		"Reference: the document's own figures (p50 and throughput; no p99 given). ",
		c.DesignClients, max(c.DesignPool, 1), c.DesignClients)
	for _, g := range r.Design {
		fmt.Fprintf(w, "%d master(s): %s ", g.Nodes, c.rounds(g.Refs))
	}
	fmt.Fprint(w, loadNotes)
	t := table{head: []string{"masters", "library", "acquire p50", "acquire p99", "acquisitions/s", "server cmds /acq", "per node", "Redis CPU /acq", "client CPU /acq", "allocs /acq", "errors"}}
	for _, g := range r.Design {
		if f := designFigure(g.Nodes); f != nil {
			t.add(fmt.Sprint(g.Nodes), "design document (reference)", fmtDur(f.P50), "–", fmtRate(f.PerSecond), "–", "–", "–", "–", "–", "–")
		}
		for _, x := range g.Runs {
			errs := fmt.Sprint(x.Errors)
			if x.FirstErr != nil {
				errs += " (" + shorten(x.FirstErr.Error()) + ")"
			}
			t.add(fmt.Sprint(g.Nodes), x.Lib, fmtDur(x.LockLat.P50()), fmtDur(x.LockLat.P99()), fmtRate(x.CyclesPerSec()),
				fmtCmds(x.ServerCmds), joinFloats(x.ServerCmdsPerNode), fmtDur(x.RedisCPU), fmtDur(x.CPU), fmt.Sprintf("%.0f", x.Allocs), errs)
		}
	}
	t.write(w)
}

// fmtCmds prints a command count per acquisition; "–" for none measured.
func fmtCmds(v float64) string {
	if v <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", v)
}

func (r *Report) writeWatchdog(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "## Watchdog renewal cost (relock): lease %v, renewed every %v, measured over %d renewal periods\n\n",
		c.WatchdogLease, c.WatchdogLease/3, c.WatchdogTicks)
	fmt.Fprintf(w, "Steady state: the window starts 1.5 renewal periods after the last lock was taken (after every lock's first renewal, "+
		"which on a node that never ran the renew script also costs a NOSCRIPT round trip and the first batch sent again). "+
		"Per tick = per renewal period. Round trips: go-redis commands sent alone plus pipelines, counted by a hook on the Client's go-redis clients. "+
		"Scripts: EVAL/EVALSHA calls the node ran (INFO commandstats). CPU: this process (getrusage) and each Redis (INFO cpu). "+
		"Heap per lock: HeapAlloc after GC while holding minus before the handles were made, divided by the locks (handles included). "+
		"Locks taken by %d goroutines.\n\n", acquirers)
	t := table{head: []string{"masters", "held locks", "take all", "round trips /tick/node", "scripts /tick/node", "renewals /lock/tick",
		"client CPU /tick", "Redis CPU /tick/node", "goroutines idle → holding → after", "heap /lock", "lost", "errors"}}
	for _, x := range r.Watchdog {
		errs := fmt.Sprint(x.Errors)
		if x.FirstErr != nil {
			errs += " (" + shorten(x.FirstErr.Error()) + ")"
		}
		t.add(fmt.Sprint(x.Nodes), fmt.Sprint(x.Locks), fmtDur(x.Acquire),
			joinFloats(x.RoundTrips), joinFloats(x.Scripts), fmt.Sprintf("%.2f", maxOf(x.Scripts)/float64(x.Locks)), fmtDur(x.ClientCPU), joinDurs(x.RedisCPU),
			fmt.Sprintf("%d → %d → %d", x.GoroutinesIdle, x.GoroutinesHolding, x.GoroutinesAfter),
			fmtBytes(x.HeapPerLock), fmt.Sprint(x.Lost), errs)
	}
	t.write(w)
}

func maxOf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func joinFloats(v []float64) string {
	s := make([]string, len(v))
	for i, f := range v {
		s[i] = fmt.Sprintf("%.1f", f)
	}
	return strings.Join(s, " / ")
}

func joinDurs(v []time.Duration) string {
	s := make([]string, len(v))
	for i, d := range v {
		s[i] = fmtDur(d)
	}
	return strings.Join(s, " / ")
}

func spread(v []int) (lo, hi int) {
	for i, x := range v {
		if i == 0 || x < lo {
			lo = x
		}
		if i == 0 || x > hi {
			hi = x
		}
	}
	return lo, hi
}

func shorten(s string) string {
	const keep = 80
	s = strings.ReplaceAll(s, "|", "/")
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > keep {
		s = s[:keep] + "…"
	}
	return s
}

// writeErrors lists the first error of every run that had some, in full.
func (r *Report) writeErrors(w io.Writer) {
	var lines []string
	note := func(what string, n int, err error) {
		if n > 0 && err != nil {
			lines = append(lines, fmt.Sprintf("- %s: %d error(s), first: %s", what, n, strings.ReplaceAll(err.Error(), "\n", " ")))
		}
	}
	for _, x := range r.Contended {
		note(fmt.Sprintf("contended %s, %d master(s), %s clients", x.Lib, x.Nodes, x.Mode), x.Errors, x.FirstErr)
	}
	for _, x := range r.Uncontended {
		note(fmt.Sprintf("uncontended %s, %d master(s)", x.Lib, x.Nodes), x.Errors, x.FirstErr)
	}
	for _, x := range r.Sequential {
		note(fmt.Sprintf("sequential %s, %d master(s)", x.Lib, x.Nodes), x.Errors, x.FirstErr)
	}
	for _, g := range r.Design {
		for _, x := range g.Runs {
			note(fmt.Sprintf("design table %s, %d master(s)", x.Lib, x.Nodes), x.Errors, x.FirstErr)
		}
	}
	for _, x := range r.Watchdog {
		note(fmt.Sprintf("watchdog %d locks, %d master(s)", x.Locks, x.Nodes), x.Errors, x.FirstErr)
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "## Errors\n\n%s\n\n", strings.Join(lines, "\n"))
}
