// Command relock-bench measures relock side by side with go-redsync/redsync,
// bsm/redislock and rueidis' rueidislock on the same Redis masters, started
// in containers by the integration fixture, and prints markdown tables with
// the ratios of the project's performance targets (README, Performance).
//
// Run it from integration/peers (or `make bench` from the repository root):
//
//	TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1 \
//	RELOCK_REDIS_IMAGE=relock/redis:7 go run ./cmd/relock-bench -out bench.md
//
// Flags: -duration per run (default 3s; the whole run takes about 6
// minutes), -quick for a smoke run of about 40 seconds, -scenarios, -libs
// and -masters to run a subset, -out to also write the tables to a file,
// -cpuprofile to profile the run and -memprofile to sample its allocations
// (run one library alone to profile it: -libs is a substring, so -libs
// relock also runs relock's A/B rows; -libs =relock runs relock alone).
// Relative paths are taken from $RELOCK_BENCH_DIR when set (make bench sets
// it to the directory it was called from).
// The environment variables RELOCK_BENCH_ONLY, RELOCK_BENCH_LIBS and
// RELOCK_BENCH_MASTERS set the defaults of -scenarios, -libs and -masters,
// so that `make bench` runs a subset too:
//
//	RELOCK_BENCH_ONLY=contended RELOCK_BENCH_LIBS=relock make bench
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/integration/peers"
)

// runTimeout bounds the whole command.
const runTimeout = 20 * time.Minute

func main() {
	def := peers.DefaultConfig()
	var (
		duration  = flag.Duration("duration", def.Duration, "measured time of each run")
		quick     = flag.Bool("quick", false, "smoke run: tiny durations and lock counts")
		scenarios = flag.String("scenarios", os.Getenv("RELOCK_BENCH_ONLY"),
			"comma-separated scenarios to run (default $RELOCK_BENCH_ONLY, else all): "+strings.Join(peers.Scenarios, ","))
		libs = flag.String("libs", os.Getenv("RELOCK_BENCH_LIBS"),
			"comma-separated substrings of library names to run, or =NAME for that name alone (default $RELOCK_BENCH_LIBS, else all)")
		masters = flag.String("masters", os.Getenv("RELOCK_BENCH_MASTERS"),
			"comma-separated node counts to run at (default $RELOCK_BENCH_MASTERS, else all): "+joinInts(peers.MasterCounts))
		out        = flag.String("out", "", "also write the tables to this file")
		route      = flag.String("route", "bridge", "how clients reach the Redis containers: bridge (the containers' own IPs, as a client on another host would) or published (Docker's published loopback ports, through its userland proxy)")
		cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the whole run (every library's client, this process) to this file, for go tool pprof")
		traceOut   = flag.String("trace", "", "write an execution trace of the whole run to this file, for go tool trace (e.g. -pprof=sched: how long goroutines waited to run)")
		memProfile = flag.String("memprofile", "", "write an allocation profile of the whole run to this file, for go tool pprof -sample_index=alloc_objects (every 4 KiB allocated sampled, not Go's default 512 KiB)")
	)
	flag.Parse()
	for _, path := range []*string{out, cpuProfile, traceOut, memProfile} {
		*path = fromCaller(*path)
	}

	cfg := def
	if *quick {
		cfg = peers.QuickConfig()
	}
	if isSet("duration") {
		cfg.Duration = *duration
	}
	cfg.Scenarios = split(*scenarios)
	for _, s := range cfg.Scenarios {
		if !slices.Contains(peers.Scenarios, s) {
			fatalf("unknown scenario %q (have %s)", s, strings.Join(peers.Scenarios, ","))
		}
	}
	cfg.Libs = split(*libs)
	for _, m := range split(*masters) {
		n, err := strconv.Atoi(m)
		if err != nil || !slices.Contains(peers.MasterCounts, n) {
			fatalf("unknown master count %q (have %s)", m, joinInts(peers.MasterCounts))
		}
		cfg.Masters = append(cfg.Masters, n)
	}
	if *route != peers.RouteBridge && *route != peers.RoutePublished {
		fatalf("unknown route %q (have %s, %s)", *route, peers.RouteBridge, peers.RoutePublished)
	}
	cfg.Route = *route
	cfg.Progress = os.Stderr

	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		fatalf("%v", err)
	}
	stopTrace, err := startTrace(*traceOut)
	if err != nil {
		fatalf("%v", err)
	}
	stopMem, err := startMemProfile(*memProfile)
	if err != nil {
		fatalf("%v", err)
	}
	err = run(cfg, *out)
	stopMem()
	stopTrace()
	stopProfile()
	if err != nil {
		fatalf("%v", err)
	}
}

// fromCaller returns a relative path as relative to the directory make
// bench was called from ($RELOCK_BENCH_DIR, which the Makefile sets: the
// command itself runs in integration/peers), so that BENCH_FLAGS='-out
// FILE' means the FILE the caller sees.
func fromCaller(path string) string {
	if dir := os.Getenv("RELOCK_BENCH_DIR"); path != "" && dir != "" && !filepath.IsAbs(path) {
		return filepath.Join(dir, path)
	}
	return path
}

// startMemProfile samples allocations from now, when path is set, and
// returns what writes the profile of the run's allocations into path.
func startMemProfile(path string) (stop func(), err error) {
	var into io.Writer
	return record(path, "the allocation profile",
		func(w io.Writer) error {
			into = w
			runtime.MemProfileRate = 4096
			return nil
		},
		func() {
			runtime.GC() // the profile counts allocations up to the last GC
			if err := pprof.Lookup("allocs").WriteTo(into, 0); err != nil {
				fmt.Fprintf(os.Stderr, "relock-bench: writing the allocation profile: %v\n", err)
			}
		})
}

// startCPUProfile starts profiling the process's CPU into path, when set,
// and returns what stops it and writes the file.
func startCPUProfile(path string) (stop func(), err error) {
	return record(path, "the CPU profile", pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startTrace starts the execution tracer into path, when set, and returns
// what stops it and closes the file.
func startTrace(path string) (stop func(), err error) {
	return record(path, "the trace", trace.Start, trace.Stop)
}

// record creates path, when set, and starts writing what into it; the
// returned stop ends it and closes the file.
func record(path, what string, start func(io.Writer) error, end func()) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		end()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "relock-bench: writing %s: %v\n", what, err)
		}
	}, nil
}

func run(cfg peers.Config, out string) error {
	if out != "" {
		// Fail now, not after the run, when the file cannot be written.
		f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		f.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()

	nodes := slices.Max(peers.MasterCounts)
	if len(cfg.Masters) > 0 {
		nodes = slices.Max(cfg.Masters)
	}
	fmt.Fprintf(os.Stderr, "starting %d Redis masters (%s)\n", nodes, fixture.Image())
	cluster, err := fixture.Start(ctx, nodes)
	if err != nil {
		return err
	}
	defer func() {
		if err := cluster.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "relock-bench: closing the cluster: %v\n", err)
		}
	}()

	srv := peers.Servers{}
	for _, n := range cluster.Nodes {
		addr := n.Addr()
		if cfg.Route == peers.RouteBridge {
			if addr, err = n.BridgeAddr(ctx); err != nil {
				return err
			}
		}
		srv.Addrs = append(srv.Addrs, addr)
		srv.Admin = append(srv.Admin, n.Direct())
	}
	rep, err := peers.Run(ctx, cfg, srv)
	if rep == nil {
		return err
	}
	var buf bytes.Buffer
	rep.Write(&buf)
	os.Stdout.Write(buf.Bytes())
	if out != "" {
		if werr := os.WriteFile(out, buf.Bytes(), 0o644); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

func isSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "relock-bench: "+format+"\n", args...)
	os.Exit(1)
}
