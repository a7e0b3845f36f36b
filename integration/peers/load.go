package peers

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Load is the result of a run without contention: Goroutines goroutines,
// each locking and unlocking its own key in a loop, through one shared
// Process; the sum of the rounds of runLoads.
type Load struct {
	Lib        string
	Nodes      int
	Goroutines int

	Elapsed            time.Duration
	Cycles             int
	LockLat, UnlockLat Dist
	Cycle              Dist // Lock call to Unlock return
	// CPU and Allocs are this process's CPU time (getrusage) and heap
	// allocations during the measured time, per cycle.
	CPU      time.Duration
	Allocs   float64
	Errors   int
	FirstErr error
}

// CyclesPerSec returns the lock+unlock rate.
func (r *Load) CyclesPerSec() float64 { return rate(r.Cycles, r.Elapsed) }

// loadRun is one configuration of an interleaved load scenario.
type loadRun struct {
	lib                 Lib
	nodes               int
	proc                Process
	mutexes             []Mutex
	out                 *Load
	lock, unlock, cycle []time.Duration
	cpu                 time.Duration
	allocs              float64
}

// Reference is a latency measured in the rounds of runLoads beside the
// libraries: PING round trips that show the machine's state.
type Reference struct {
	Name    string
	Measure func(ctx context.Context, d time.Duration) (Dist, error)
}

// runLoads runs goroutines loops of lock+unlock on distinct keys, one
// shared Process per library and node count, in cfg.Rounds rounds: each
// round gives every configuration, and every reference, a slice of
// cfg.Duration in turn (starting with a different one each round). The
// machine's load drifts during a run; interleaving gives every
// configuration the same mix of it, so their ratios hold. failed is told
// about configurations that could not run. It returns the pooled results
// and the references' pooled samples, in order.
func runLoads(ctx context.Context, cfg Config, libs []Lib, addrs [][]string, goroutines int,
	refs []Reference, failed func(what string, err error)) ([]*Load, []Dist, error) {
	var runs []*loadRun
	defer func() {
		for _, r := range runs {
			_ = r.proc.Close()
		}
	}()
	prefix := fmt.Sprintf("load-%d-", time.Now().UnixNano())
	for _, a := range addrs {
		for _, lib := range libs {
			if lib.SingleNode && len(a) > 1 {
				continue
			}
			p, err := lib.NewProcess(a, max(goroutines, 8))
			if err != nil {
				failed(fmt.Sprintf("%s, %d master(s)", lib.Name, len(a)), err)
				continue
			}
			r := &loadRun{lib: lib, nodes: len(a), proc: p, mutexes: make([]Mutex, goroutines),
				out: &Load{Lib: lib.Name, Nodes: len(a), Goroutines: goroutines}}
			for i := range r.mutexes {
				r.mutexes[i] = p.NewMutex(fmt.Sprintf("%s%d-%d", prefix, len(runs), i))
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
			res, err := load(ctx, r.mutexes, slice)
			if err != nil {
				return nil, nil, err
			}
			r.add(res)
		}
	}
	out := make([]*Load, len(runs))
	for i, r := range runs {
		out[i] = r.finish()
	}
	dists := make([]Dist, len(refs))
	for i, samples := range refSamples {
		dists[i] = NewDist(samples)
	}
	return out, dists, nil
}

// add merges one round's result.
func (r *loadRun) add(res *Load) {
	o := r.out
	o.Elapsed += res.Elapsed
	o.Cycles += res.Cycles
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
	return o
}

type loadSamples struct {
	lock, unlock, cycle []time.Duration
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
