package peers

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Load is the result of a run without contention: Goroutines goroutines,
// each locking and unlocking its own key in a loop, through one shared
// Process (or each through its own: Separate); the sum of the rounds of
// runLoads.
type Load struct {
	Lib        string
	Nodes      int
	Goroutines int
	Separate   bool // a Process per goroutine

	Elapsed            time.Duration
	Cycles             int
	LockLat, UnlockLat Dist
	Cycle              Dist // Lock call to Unlock return
	// CPU and Allocs are this process's CPU time (getrusage) and heap
	// allocations during the measured time, per cycle.
	CPU    time.Duration
	Allocs float64
	// Acquired counts every Lock that succeeded between the INFO snapshots
	// around each round's slice, also those of the last iterations after
	// the measured time (not in Cycles); ServerCmds is the commands the
	// nodes ran in those windows (INFO commandstats, also inside scripts;
	// not the bench's INFO) per such acquisition, summed over the masters,
	// and ServerCmdsPerNode each node's share.
	Acquired          int
	ServerCmds        float64
	ServerCmdsPerNode []float64
	// ServerCmdsBy is ServerCmds by command (lower case, as INFO names
	// them).
	ServerCmdsBy map[string]float64
	// RedisCPU is the user+system CPU time the masters used in those
	// windows (INFO cpu), summed over them, per such acquisition: on a
	// machine where the client and the servers share the cores, what each
	// cycle costs the servers.
	RedisCPU time.Duration
	Errors   int
	FirstErr error
}

// CyclesPerSec returns the lock+unlock rate.
func (r *Load) CyclesPerSec() float64 { return rate(r.Cycles, r.Elapsed) }

// loadRun is one configuration of an interleaved load scenario.
type loadRun struct {
	lib                 Lib
	nodes               int
	admin               []*redis.Client
	procs               []Process
	mutexes             []Mutex
	out                 *Load
	lock, unlock, cycle []time.Duration
	cpu                 time.Duration
	allocs              float64
	commands            []int64          // per node, over the slices
	byCommand           map[string]int64 // per command, over the nodes and the slices
	redisCPU            time.Duration    // the masters', over the slices
}

// Reference is a latency measured in the rounds of runLoads beside the
// libraries: PING round trips that show the machine's state.
type Reference struct {
	Name    string
	Nodes   int // > 1: a PING to that many masters in parallel
	Measure func(ctx context.Context, d time.Duration) (Dist, error)
}

// RefDist is a Reference's samples pooled over the rounds.
type RefDist struct {
	Name  string
	Nodes int
	Dist  Dist
}

// findRef returns the parallel PING to n masters (the PING on one when n
// is 1), if measured.
func findRef(refs []RefDist, n int) *RefDist {
	for i := range refs {
		if refs[i].Nodes == n || (n == 1 && refs[i].Nodes == 0) {
			return &refs[i]
		}
	}
	return nil
}

// runLoads runs goroutines loops of lock+unlock on distinct keys, per
// library and per node count of counts (the first n masters of srv), in
// cfg.Rounds rounds: each round gives every configuration, and every
// reference, a slice of cfg.Duration in turn (starting with a different one
// each round). The machine's load drifts during a run; interleaving gives
// every configuration the same mix of it, so their ratios hold. With
// separatePool 0 the goroutines of a configuration share one Process;
// otherwise each has its own, with that many connections per node. failed
// is told about configurations that could not run. It returns the pooled
// results and the references' pooled samples, in order.
func runLoads(ctx context.Context, cfg Config, libs []Lib, srv Servers, counts []int, goroutines, separatePool int,
	refs []Reference, failed func(what string, err error)) ([]*Load, []RefDist, error) {
	var runs []*loadRun
	defer func() {
		for _, r := range runs {
			for _, p := range r.procs {
				_ = p.Close()
			}
		}
	}()
	prefix := fmt.Sprintf("load-%d-", time.Now().UnixNano())
	for _, n := range counts {
		a := srv.Addrs[:n]
		for _, lib := range libs {
			if lib.SingleNode && n > 1 {
				continue
			}
			r := &loadRun{lib: lib, nodes: n, admin: srv.Admin[:n], mutexes: make([]Mutex, goroutines),
				commands: make([]int64, n), byCommand: make(map[string]int64),
				out: &Load{Lib: lib.Name, Nodes: n, Goroutines: goroutines, Separate: separatePool > 0}}
			err := r.open(a, prefix+fmt.Sprint(len(runs)), separatePool)
			if err != nil {
				for _, p := range r.procs {
					_ = p.Close()
				}
				failed(fmt.Sprintf("%s, %d master(s)", lib.Name, n), err)
				continue
			}
			runs = append(runs, r)
		}
	}
	if cfg.Warmup > 0 {
		for _, r := range runs {
			if _, err := load(ctx, r.mutexes, cfg.Warmup); err != nil {
				return nil, nil, fmt.Errorf("%s, %d master(s): warm-up: %w", r.lib.Name, r.nodes, err)
			}
		}
	}

	rounds := max(cfg.Rounds, 1)
	slice := cfg.Duration / time.Duration(rounds)
	refSamples := make([][]time.Duration, len(refs))
	slots := len(runs) + len(refs)
	for round := range rounds {
		for k := range slots {
			i := (k + round) % slots
			if i >= len(runs) {
				ref := refs[i-len(runs)]
				d, err := ref.Measure(ctx, slice)
				if err != nil {
					return nil, nil, fmt.Errorf("%s: %w", ref.Name, err)
				}
				refSamples[i-len(runs)] = append(refSamples[i-len(runs)], d...)
				continue
			}
			r := runs[i]
			before, err := readServerStats(ctx, r.admin)
			if err != nil {
				return nil, nil, err
			}
			res, err := load(ctx, r.mutexes, slice)
			if err != nil {
				return nil, nil, err
			}
			after, err := readServerStats(ctx, r.admin)
			if err != nil {
				return nil, nil, err
			}
			for node, c := range after.commandsSince(before) {
				r.commands[node] += c
			}
			addCommands(r.byCommand, after.byCommandSince(before))
			r.redisCPU += after.cpuSince(before)
			r.add(res)
		}
	}
	out := make([]*Load, len(runs))
	for i, r := range runs {
		out[i] = r.finish()
	}
	dists := make([]RefDist, len(refs))
	for i, samples := range refSamples {
		dists[i] = RefDist{Name: refs[i].Name, Nodes: refs[i].Nodes, Dist: NewDist(samples)}
	}
	return out, dists, nil
}

// open makes the Processes and the mutexes of r: one shared Process, or
// one per goroutine with pool connections per node; the goroutines' keys are
// prefix-0, prefix-1, ...
func (r *loadRun) open(addrs []string, prefix string, pool int) error {
	goroutines := len(r.mutexes)
	if pool <= 0 {
		p, err := r.lib.NewProcess(addrs, max(goroutines, 8))
		if err != nil {
			return err
		}
		r.procs = append(r.procs, p)
	}
	for i := range r.mutexes {
		if pool > 0 {
			p, err := r.lib.NewProcess(addrs, pool)
			if err != nil {
				return err
			}
			r.procs = append(r.procs, p)
		}
		r.mutexes[i] = r.procs[len(r.procs)-1].NewMutex(fmt.Sprintf("%s-%d", prefix, i))
	}
	return nil
}

// add merges one round's result.
func (r *loadRun) add(res *Load) {
	o := r.out
	o.Elapsed += res.Elapsed
	o.Cycles += res.Cycles
	o.Acquired += res.Acquired
	o.Errors += res.Errors
	if o.FirstErr == nil {
		o.FirstErr = res.FirstErr
	}
	r.lock = append(r.lock, res.LockLat...)
	r.unlock = append(r.unlock, res.UnlockLat...)
	r.cycle = append(r.cycle, res.Cycle...)
	r.cpu += res.CPU * time.Duration(res.Cycles)
	r.allocs += res.Allocs * float64(res.Cycles)
}

func (r *loadRun) finish() *Load {
	o := r.out
	o.LockLat, o.UnlockLat, o.Cycle = NewDist(r.lock), NewDist(r.unlock), NewDist(r.cycle)
	if o.Cycles > 0 {
		o.CPU = r.cpu / time.Duration(o.Cycles)
		o.Allocs = r.allocs / float64(o.Cycles)
	}
	o.ServerCmds, o.ServerCmdsPerNode = perAcquisition(r.commands, o.Acquired)
	o.ServerCmdsBy = commandsPer(r.byCommand, o.Acquired)
	if o.Acquired > 0 {
		o.RedisCPU = r.redisCPU / time.Duration(o.Acquired)
	}
	return o
}

type loadSamples struct {
	lock, unlock, cycle []time.Duration
	acquired            int // successful Locks, also after the measured time
	errors              int
	firstErr            error
}

// load has one goroutine per mutex lock and unlock it for d (each loop at
// most maxSamples cycles and maxErrors errors).
func load(ctx context.Context, mutexes []Mutex, d time.Duration) (*Load, error) {
	var stop atomic.Bool
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	samples := make([]loadSamples, len(mutexes))
	var wg sync.WaitGroup
	cpu0, mallocs0 := processCPU(), mallocs()
	start := time.Now()
	for g, m := range mutexes {
		wg.Go(func() {
			s := &samples[g]
			for len(s.cycle) < maxSamples && s.errors < maxErrors && !stop.Load() && runCtx.Err() == nil {
				lctx, lcancel := context.WithTimeout(runCtx, lockTimeout)
				t0 := time.Now()
				err := m.Lock(lctx)
				t1 := time.Now()
				if err != nil {
					lcancel()
					s.errors++
					if s.firstErr == nil {
						s.firstErr = err
					}
					continue
				}
				s.acquired++
				uctx, ucancel := context.WithTimeout(context.WithoutCancel(runCtx), lockTimeout)
				err = m.Unlock(uctx)
				t2 := time.Now()
				ucancel()
				lcancel()
				if err != nil {
					s.errors++
					if s.firstErr == nil {
						s.firstErr = fmt.Errorf("unlock: %w", err)
					}
					continue
				}
				if stop.Load() {
					break // ended after the measured time
				}
				s.lock = append(s.lock, t1.Sub(t0))
				s.unlock = append(s.unlock, t2.Sub(t1))
				s.cycle = append(s.cycle, t2.Sub(t0))
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	end := time.NewTimer(d)
	defer end.Stop()
	select {
	case <-end.C:
	case <-done:
	case <-ctx.Done():
	}
	elapsed := time.Since(start)
	stop.Store(true)
	cpu, allocs := processCPU()-cpu0, mallocs()-mallocs0
	grace := time.NewTimer(drainGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		cancel()
		<-done
	case <-ctx.Done():
		cancel()
		<-done
		return nil, ctx.Err()
	}

	r := &Load{Elapsed: elapsed}
	var lockLat, unlockLat, cycle []time.Duration
	for _, s := range samples {
		r.Cycles += len(s.cycle)
		r.Acquired += s.acquired
		r.Errors += s.errors
		if r.FirstErr == nil {
			r.FirstErr = s.firstErr
		}
		lockLat = append(lockLat, s.lock...)
		unlockLat = append(unlockLat, s.unlock...)
		cycle = append(cycle, s.cycle...)
	}
	r.LockLat, r.UnlockLat, r.Cycle = NewDist(lockLat), NewDist(unlockLat), NewDist(cycle)
	if r.Cycles > 0 {
		r.CPU = cpu / time.Duration(r.Cycles)
		r.Allocs = float64(allocs) / float64(r.Cycles)
	}
	return r, nil
}

// processCPU returns this process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// mallocs returns the heap allocations made so far.
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}
