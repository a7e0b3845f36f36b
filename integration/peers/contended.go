package peers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client modes of the contended scenario.
const (
	ModePerGoroutine = "per goroutine" // each goroutine its own Process
	ModeShared       = "shared"        // one Process for every goroutine
)

// Bounds of the scenarios' loops.
const (
	// lockTimeout bounds one Lock call; a Lock that runs out is counted as a
	// give-up and the goroutine waits on with a new call.
	lockTimeout = 5 * time.Second
	// stuckAfter is how long a waiter may wait before it counts as stuck.
	stuckAfter = time.Second
	// drainGrace bounds how long goroutines may take to finish their
	// iteration once a run ends; after it their Locks are cancelled.
	drainGrace = 10 * time.Second
	// maxSamples bounds the samples one goroutine keeps.
	maxSamples = 1 << 20
	// maxErrors ends a goroutine's run after that many errors, maxGiveUps
	// after that many Lock calls that gave up.
	maxErrors  = 100
	maxGiveUps = 1000
)

// Contended is the result of one contended hand-off run: Contenders
// goroutines taking turns on one lock.
type Contended struct {
	Lib   string
	Nodes int
	Mode  string

	// Ping is the PING round trip on the first node just before the run;
	// FanPing, with several masters, a PING to all of them in parallel
	// until the last reply, just before the run too.
	Ping, FanPing Dist
	// IdlePing is the PING to the run's masters in parallel (to the one
	// master alone) with a sleep of the hold before each, just before the
	// run: a round trip from the idle machine a hand-off starts from.
	IdlePing Dist

	Elapsed time.Duration
	Cycles  int // acquisitions before the run ended
	// Handoff: from the releaser calling Unlock to the next holder's Lock
	// returning, for acquisitions by another goroutine than the releaser.
	Handoff Dist
	// Wake and Acquire split Handoff at the moment the new holder's client
	// sent its last script before Lock returned: Wake is the time to notice
	// the release (and decide to try), Acquire the final attempt. Only for
	// go-redis based libraries, and with a shared Process only for relock
	// (whose scripts carry the owner id).
	Wake, Acquire Dist
	// Wait is every acquisition's wait, from calling Lock (the first call,
	// when one gave up) to the Lock that succeeded returning.
	Wait Dist
	// RoundTrips is the go-redis round trips (commands alone plus
	// pipelines) of every goroutine's client during the measured time, per
	// acquisition; 0 for a library without go-redis.
	RoundTrips float64
	// Publishes is the PUBLISH calls the nodes ran (INFO commandstats, so
	// also those inside scripts) during the measured time, per acquisition.
	Publishes float64
	// ServerCmds is every command the nodes ran during the measured time
	// (INFO commandstats, so also those inside scripts; not the bench's own
	// INFO), summed over the masters, per acquisition; ServerCmdsPerNode
	// each node's share.
	ServerCmds        float64
	ServerCmdsPerNode []float64
	// ServerCmdsBy is ServerCmds by command (lower case, as INFO names
	// them).
	ServerCmdsBy map[string]float64
	// Unlock is how long Unlock calls took.
	Unlock       Dist
	Self         int   // acquisitions by the goroutine that released last
	PerGoroutine []int // acquisitions per goroutine
	Stuck        int   // Lock waits that lasted more than stuckAfter
	MaxWait      time.Duration
	GaveUp       int // Lock calls that returned a give-up (retry budget, lockTimeout)
	Errors       int
	FirstErr     error
	Overlaps     int // acquisitions while another goroutine held the lock
	// Rounds is how many interleaved rounds the figures pool (see
	// Config.ContendedRounds).
	Rounds int

	// The counts the per-acquisition figures come from, kept so that
	// rounds can be pooled (see pool): round trips (tripCycles the
	// acquisitions they were counted over, 0 when not counted), and the
	// commands the nodes ran, in all and by command (cmdCycles likewise).
	trips      int64
	tripCycles int
	cmds       []int64
	byCmd      map[string]int64
	cmdCycles  int
}

// CyclesPerSec returns the acquisition rate.
func (r *Contended) CyclesPerSec() float64 { return rate(r.Cycles, r.Elapsed) }

// SelfShare returns the share of acquisitions won by the goroutine that had
// just released.
func (r *Contended) SelfShare() float64 {
	n := r.Self + r.Handoff.N()
	if n == 0 {
		return 0
	}
	return float64(r.Self) / float64(n)
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// contendedState is what the goroutines of one run share.
type contendedState struct {
	holders      atomic.Int32 // goroutines between Lock returning and calling Unlock
	overlaps     atomic.Int64
	lastReleaser atomic.Int32 // goroutine that called Unlock last, -1 at first
	unlockAt     atomic.Int64 // mono() when it called Unlock
	stop         atomic.Bool  // the measured time is over
	waitingSince []atomic.Int64
}

// goroutineResult is one goroutine's share of a run.
type goroutineResult struct {
	cycles                 int
	handoff, wake, acquire []time.Duration
	wait, unlock           []time.Duration
	self, gaveUp, errors   int
	firstErr               error
	maxWait                time.Duration
}

// runContended runs one contended run of lib on addrs and returns its result.
// admin are clients of the same nodes, for INFO.
func runContended(ctx context.Context, cfg Config, lib Lib, addrs []string, admin []*redis.Client, mode string) (*Contended, error) {
	n := cfg.Contenders
	procs := make([]Process, 0, n)
	defer func() {
		for _, p := range procs {
			_ = p.Close()
		}
	}()
	mutexes := make([]Mutex, n)
	// sent[g] reads when goroutine g's client last sent a script for it,
	// to split hand-offs; nil when unknown.
	sent := make([]func() int64, n)
	name := fmt.Sprintf("contended-%d", time.Now().UnixNano())
	if mode == ModeShared {
		p, err := lib.NewProcess(addrs, max(n, 8))
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
		for i := range mutexes {
			mutexes[i] = p.NewMutex(name)
		}
		// One client for all: attribute scripts by the owner id they
		// carry, for libraries whose handles have a fixed one (relock).
		if probe := p.Probe(); probe != nil {
			owners := make([]string, n)
			for i, m := range mutexes {
				if o, ok := m.(interface{ Owner() string }); ok {
					owners[i] = o.Owner()
				}
			}
			if !slices.Contains(owners, "") {
				for i, clock := range probe.Watch(owners) {
					sent[i] = clock.Load
				}
			}
		}
	} else {
		for i := range mutexes {
			p, err := lib.NewProcess(addrs, 4)
			if err != nil {
				return nil, err
			}
			procs = append(procs, p)
			mutexes[i] = p.NewMutex(name)
			if probe := p.Probe(); probe != nil {
				sent[i] = probe.LastScript
			}
		}
	}

	if cfg.Warmup > 0 {
		if _, err := contend(ctx, cfg, lib, mutexes, sent, procs, admin, cfg.Warmup); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	r, err := contend(ctx, cfg, lib, mutexes, sent, procs, admin, cfg.Duration)
	if err != nil {
		return nil, err
	}
	r.Lib, r.Nodes, r.Mode = lib.Name, len(addrs), mode
	return r, nil
}

// roundTrips sums the round trips of procs' go-redis clients; ok is false
// when a Process has no go-redis client.
func roundTrips(procs []Process) (n int64, ok bool) {
	for _, p := range procs {
		probe := p.Probe()
		if probe == nil {
			return 0, false
		}
		for _, c := range probe.Nodes {
			n += c.RoundTrips()
		}
	}
	return n, true
}

// contend has one goroutine per mutex take turns on the lock for d.
func contend(ctx context.Context, cfg Config, lib Lib, mutexes []Mutex, sent []func() int64, procs []Process, admin []*redis.Client, d time.Duration) (*Contended, error) {
	n := len(mutexes)
	st := &contendedState{waitingSince: make([]atomic.Int64, n)}
	st.lastReleaser.Store(-1)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	results := make([]goroutineResult, n)
	var wg sync.WaitGroup
	tripsBefore, counted := roundTrips(procs)
	statsBefore, statsErr := readServerStats(ctx, admin)
	start := time.Now()
	for g := range mutexes {
		wg.Go(func() {
			results[g] = contender(runCtx, cfg, lib, st, g, mutexes[g], sent[g])
		})
	}

	// Watch for stuck waiters while the run lasts and while it drains.
	stuck := 0
	stuckSince := make([]int64, n) // the wait start already counted as stuck
	check := func() {
		now := mono()
		for g := range st.waitingSince {
			since := st.waitingSince[g].Load()
			if since != 0 && time.Duration(now-since) > stuckAfter && stuckSince[g] != since {
				stuckSince[g] = since
				stuck++
			}
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	end := time.NewTimer(d)
	defer end.Stop()
	var elapsed time.Duration
	var trips int64
	var statsAfter serverStats
	var grace <-chan time.Time
run:
	for {
		select {
		case <-tick.C:
			check()
		case <-end.C:
			elapsed = time.Since(start)
			st.stop.Store(true)
			trips, _ = roundTrips(procs)
			if statsErr == nil {
				statsAfter, statsErr = readServerStats(ctx, admin)
			}
			g := time.NewTimer(drainGrace)
			defer g.Stop()
			grace = g.C
		case <-grace:
			cancel() // blocked Locks return; goroutines end
			grace = nil
		case <-done:
			break run
		case <-ctx.Done():
			cancel()
			<-done
			return nil, ctx.Err()
		}
	}
	check()
	if elapsed == 0 { // every goroutine gave up before the end
		elapsed = time.Since(start)
		trips, _ = roundTrips(procs)
		if statsErr == nil {
			statsAfter, statsErr = readServerStats(ctx, admin)
		}
	}

	r := &Contended{Elapsed: elapsed, Stuck: stuck, Overlaps: int(st.overlaps.Load()), PerGoroutine: make([]int, n)}
	var handoff, wake, acquire, wait, unlock []time.Duration
	for g, gr := range results {
		r.Cycles += gr.cycles
		r.PerGoroutine[g] = gr.cycles
		r.Self += gr.self
		r.GaveUp += gr.gaveUp
		r.Errors += gr.errors
		if r.FirstErr == nil {
			r.FirstErr = gr.firstErr
		}
		r.MaxWait = max(r.MaxWait, gr.maxWait)
		handoff = append(handoff, gr.handoff...)
		wake = append(wake, gr.wake...)
		acquire = append(acquire, gr.acquire...)
		wait = append(wait, gr.wait...)
		unlock = append(unlock, gr.unlock...)
	}
	r.Handoff, r.Wake, r.Acquire, r.Wait = NewDist(handoff), NewDist(wake), NewDist(acquire), NewDist(wait)
	r.Unlock = NewDist(unlock)
	if counted {
		r.trips, r.tripCycles = trips-tripsBefore, r.Cycles
	}
	if statsErr == nil {
		r.cmds, r.byCmd, r.cmdCycles = statsAfter.commandsSince(statsBefore), statsAfter.byCommandSince(statsBefore), r.Cycles
	}
	r.Rounds = 1
	r.perAcquisition()
	return r, nil
}

// perAcquisition sets the per-acquisition figures from the counts.
func (r *Contended) perAcquisition() {
	r.RoundTrips, r.ServerCmds, r.ServerCmdsPerNode, r.ServerCmdsBy, r.Publishes = 0, 0, nil, nil, 0
	if r.tripCycles > 0 {
		r.RoundTrips = float64(r.trips) / float64(r.tripCycles)
	}
	if r.cmdCycles > 0 {
		r.ServerCmds, r.ServerCmdsPerNode = perAcquisition(r.cmds, r.cmdCycles)
		r.ServerCmdsBy = commandsPer(r.byCmd, r.cmdCycles)
		r.Publishes = r.ServerCmdsBy["publish"]
	}
}

// pool returns r with the round o of the same library, masters and clients
// added (o itself when r is nil): the samples and counts of both, as if
// measured in one run of their summed time. PerGoroutine adds up by
// goroutine number (each round's goroutine g is another Client).
func (r *Contended) pool(o *Contended) *Contended {
	if r == nil {
		return o
	}
	join := func(a, b Dist) Dist { return NewDist(append(slices.Clone(a), b...)) }
	r.Ping, r.FanPing, r.IdlePing = join(r.Ping, o.Ping), join(r.FanPing, o.FanPing), join(r.IdlePing, o.IdlePing)
	r.Handoff, r.Wake, r.Acquire = join(r.Handoff, o.Handoff), join(r.Wake, o.Wake), join(r.Acquire, o.Acquire)
	r.Wait, r.Unlock = join(r.Wait, o.Wait), join(r.Unlock, o.Unlock)
	r.Elapsed += o.Elapsed
	r.Cycles += o.Cycles
	r.Self += o.Self
	for g, n := range o.PerGoroutine {
		if g < len(r.PerGoroutine) {
			r.PerGoroutine[g] += n
		}
	}
	r.Stuck += o.Stuck
	r.MaxWait = max(r.MaxWait, o.MaxWait)
	r.GaveUp += o.GaveUp
	r.Errors += o.Errors
	if r.FirstErr == nil {
		r.FirstErr = o.FirstErr
	}
	r.Overlaps += o.Overlaps
	r.Rounds += o.Rounds
	if o.tripCycles > 0 {
		r.trips += o.trips
		r.tripCycles += o.tripCycles
	}
	if o.cmdCycles > 0 {
		if len(r.cmds) < len(o.cmds) {
			r.cmds = append(r.cmds, make([]int64, len(o.cmds)-len(r.cmds))...)
		}
		for i, n := range o.cmds {
			r.cmds[i] += n
		}
		if r.byCmd == nil {
			r.byCmd = map[string]int64{}
		}
		addCommands(r.byCmd, o.byCmd)
		r.cmdCycles += o.cmdCycles
	}
	r.perAcquisition()
	return r
}

// contender is one goroutine of a contended run: Lock, work, Unlock, pause,
// until the run stops (at most maxSamples cycles).
func contender(ctx context.Context, cfg Config, lib Lib, st *contendedState, g int, m Mutex, lastSent func() int64) goroutineResult {
	var r goroutineResult
	fail := func(err error) {
		r.errors++
		if r.firstErr == nil {
			r.firstErr = err
		}
	}
	for r.cycles < maxSamples && !st.stop.Load() && r.errors < maxErrors {
		waitStart := mono()
		st.waitingSince[g].Store(waitStart)
		var release context.CancelFunc
		for release == nil && r.errors < maxErrors && r.gaveUp < maxGiveUps {
			lctx, cancel := context.WithTimeout(ctx, lockTimeout)
			err := m.Lock(lctx)
			switch {
			case err == nil:
				release = cancel // the hold keeps lctx (rueidislock's lock is a context)
				continue
			case ctx.Err() != nil:
				cancel()
				st.waitingSince[g].Store(0)
				return r
			case errors.Is(err, context.DeadlineExceeded) || (lib.GaveUp != nil && lib.GaveUp(err)):
				// The wait bound or the library's retry budget ran out:
				// the goroutine still wants the lock and waits on.
				r.gaveUp++
			default:
				fail(err)
				time.Sleep(10 * time.Millisecond) // no tight loop on a failing node
			}
			cancel()
		}
		if release == nil {
			st.waitingSince[g].Store(0)
			return r
		}
		got := mono()
		st.waitingSince[g].Store(0)
		r.maxWait = max(r.maxWait, time.Duration(got-waitStart))
		if st.holders.Add(1) != 1 {
			st.overlaps.Add(1)
		}
		if !st.stop.Load() {
			r.cycles++
			r.wait = append(r.wait, time.Duration(got-waitStart))
			if prev := int(st.lastReleaser.Load()); prev == g {
				r.self++
			} else if prev >= 0 {
				at := st.unlockAt.Load()
				r.handoff = append(r.handoff, time.Duration(got-at))
				if lastSent != nil {
					if sent := lastSent(); sent > at {
						r.wake = append(r.wake, time.Duration(sent-at))
						r.acquire = append(r.acquire, time.Duration(got-sent))
					}
				}
			}
		}

		time.Sleep(cfg.Work)

		st.holders.Add(-1)
		st.lastReleaser.Store(int32(g))
		st.unlockAt.Store(mono())
		uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), lockTimeout)
		t0 := time.Now()
		err := m.Unlock(uctx)
		if !st.stop.Load() && len(r.unlock) < maxSamples {
			r.unlock = append(r.unlock, time.Since(t0))
		}
		ucancel()
		release()
		if err != nil {
			fail(fmt.Errorf("unlock: %w", err))
		}
		time.Sleep(cfg.Pause)
	}
	return r
}
