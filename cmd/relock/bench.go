package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relock-go/relock/lock"
)

var benchCommand = &command{
	name:         "bench",
	args:         "",
	summary:      "measure lock latency and throughput on the nodes",
	minArgs:      0,
	maxArgs:      0,
	verbatimFrom: -1,
	setup:        setupBench,
	help: `
Measures Lock+Unlock cycles against the nodes, in rounds: one round per
count in --clients, each lasting --duration or --ops cycles, whichever comes
first. Each client is a Client of its own with its own connections, as a
separate process would be, and locks a name of its own (no contention), or,
with --contended, all of them one name (each Lock waits for the previous
holder's Unlock). A progress line is written to stderr while a round runs
(rewritten in place on a terminal), and a table to stdout: per round the
cycles done, errors, cycles per second, and the latency of Lock (p50, p99,
max). The locks are named relock-bench/RUN/... and each is released after
each cycle. Exit status 4 when a round completed no cycle.`,
	examples: `
  relock bench
  relock bench --clients 1,16,64 --duration 10s
  relock bench --contended --clients 16`,
}

// Bounds of bench's flags: a mistyped flag must not run for hours or open
// thousands of connections.
const (
	maxBenchClients  = 1000
	maxBenchDuration = 10 * time.Minute
	maxBenchOps      = 10_000_000
)

// benchFlags are bench's own flags.
type benchFlags struct {
	clients   string
	duration  time.Duration
	ops       int
	contended bool
}

func setupBench(fs *flag.FlagSet) action {
	f := new(benchFlags)
	fs.StringVar(&f.clients, "clients", "1,16", "the number of clients of each round, comma-separated (`LIST`)")
	fs.DurationVar(&f.duration, "duration", 5*time.Second, "how long each round lasts (`DURATION`, at most 10m)")
	fs.IntVar(&f.ops, "ops", 100_000, "end a round after `N` cycles")
	fs.BoolVar(&f.contended, "contended", false, "every client locks the same name")
	return func(ctx context.Context, e *env, g *globals, _ []string) error {
		counts, err := f.check()
		if err != nil {
			return err
		}
		return f.run(ctx, e, g, counts)
	}
}

// check validates the flags and returns the client counts.
func (f *benchFlags) check() ([]int, error) {
	counts, err := parseCounts(f.clients)
	switch {
	case err != nil:
		return nil, usagef("--clients: %v", err)
	case f.duration <= 0 || f.duration > maxBenchDuration:
		return nil, usagef("--duration %v is not in (0, %v]", f.duration, maxBenchDuration)
	case f.ops <= 0 || f.ops > maxBenchOps:
		return nil, usagef("--ops %d is not in [1, %d]", f.ops, maxBenchOps)
	}
	return counts, nil
}

// parseCounts parses a comma-separated list of client counts, each in
// [1, maxBenchClients].
func parseCounts(s string) ([]int, error) {
	var counts []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 || n > maxBenchClients {
			return nil, fmt.Errorf("%q is not a number of clients in [1, %d]", part, maxBenchClients)
		}
		counts = append(counts, n)
	}
	return counts, nil
}

// run runs one round per client count and writes the table.
func (f *benchFlags) run(ctx context.Context, e *env, g *globals, counts []int) error {
	names := "one lock name per client"
	if f.contended {
		names = "one lock name for all clients"
	}
	run := "relock-bench/" + rand.Text()[:8] + "/"
	var rows []benchRow
	for _, n := range counts {
		if ctx.Err() != nil {
			break
		}
		row, err := f.round(ctx, e, g, n, run)
		if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	if len(rows) > 0 {
		fmt.Fprintf(e.stdout, "relock bench: %d node(s), quorum %d, rounds of %v or %d cycles, %s\n\n",
			rows[0].nodes, rows[0].quorum, f.duration, f.ops, names)
	}
	if err := writeBenchTable(e.stdout, rows); err != nil {
		return err
	}
	for _, r := range rows {
		if r.firstErr != nil {
			fmt.Fprintf(e.stderr, "relock bench: %d clients: first error: %v\n", r.clients, r.firstErr)
		}
	}
	for _, r := range rows {
		if r.cycles == 0 {
			return exitWith(exitNodes, "the round of %d clients completed no cycle", r.clients)
		}
	}
	return nil
}

// benchRow is one round's outcome.
type benchRow struct {
	nodes    int
	quorum   int
	clients  int
	elapsed  time.Duration
	cycles   int
	errors   int
	lockLat  []time.Duration // each Lock's latency
	firstErr error
}

// round runs n clients for one round and returns its row.
func (f *benchFlags) round(ctx context.Context, e *env, g *globals, n int, run string) (benchRow, error) {
	clients := make([]*lock.Client, n)
	for i := range clients {
		c, closeAll, err := g.connect(lock.Options{})
		if err != nil {
			return benchRow{}, err
		}
		defer closeAll()
		clients[i] = c
	}
	ctx, cancel := context.WithTimeout(ctx, f.duration)
	defer cancel()
	var (
		budget         atomic.Int64 // cycles left to start
		cycles, failed atomic.Int64
		firstErr       atomic.Pointer[error]
		mu             sync.Mutex
		lats           []time.Duration
		wg             sync.WaitGroup
	)
	budget.Store(int64(f.ops))
	fail := func(err error) {
		failed.Add(1)
		firstErr.CompareAndSwap(nil, &err)
	}
	start := time.Now()
	stop := startProgress(e, n, f.duration, start, &cycles, &failed)
	for i, c := range clients {
		name := run + strconv.Itoa(i)
		if f.contended {
			name = run + "contended"
		}
		wg.Go(func() {
			m := c.NewMutex(name)
			var mine []time.Duration
			for budget.Add(-1) >= 0 {
				t := time.Now()
				if err := m.Lock(ctx); err != nil {
					if ctx.Err() == nil || errors.Is(err, lock.ErrNoQuorum) {
						fail(err)
					}
					break
				}
				mine = append(mine, time.Since(t))
				if err := m.Unlock(context.WithoutCancel(ctx)); err != nil {
					fail(err)
					break
				}
				cycles.Add(1)
			}
			mu.Lock()
			lats = append(lats, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	row := benchRow{clients: n, elapsed: time.Since(start), cycles: int(cycles.Load()), errors: int(failed.Load()), lockLat: lats}
	stop()
	row.nodes, row.quorum = clients[0].Nodes()
	if p := firstErr.Load(); p != nil {
		row.firstErr = *p
	}
	return row, nil
}

// progressEvery is how often the progress line is written: in place on a
// terminal, as a new line elsewhere (a log).
const (
	progressEveryTerminal = 250 * time.Millisecond
	progressEveryLog      = 2 * time.Second
)

// startProgress writes a progress line of the round on stderr until the
// returned function is called.
func startProgress(e *env, clients int, duration time.Duration, start time.Time, cycles, failed *atomic.Int64) func() {
	inPlace := e.stderr == os.Stderr && isTerminal(os.Stderr)
	every, end := progressEveryLog, "\n"
	if inPlace {
		every, end = progressEveryTerminal, ""
	}
	line := func() string {
		elapsed := time.Since(start)
		return fmt.Sprintf("relock bench: %d clients: %.1fs of %v, %d cycles, %.0f/s, %d errors",
			clients, elapsed.Seconds(), duration, cycles.Load(), float64(cycles.Load())/elapsed.Seconds(), failed.Load())
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				if inPlace {
					fmt.Fprint(e.stderr, "\r\x1b[K")
				}
				return
			case <-tick.C:
				if inPlace {
					fmt.Fprint(e.stderr, "\r\x1b[K")
				}
				fmt.Fprint(e.stderr, line()+end)
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
