package integration_test

// The lock family in the chaos suite (chaos_test.go): beside the Mutex
// workers, RWMutex workers and Semaphore workers run on names of their own,
// over the same two Clients and under the same faults, and their holds go
// to checkers of their own.
//
// Every hold, of either type, is a window as a Mutex's is (holdRecord and
// window in history_test.go): from the return of the call that took it to
// the earliest of its release's invoke, its Lost() firing and its last
// ValidUntil; an RWMutex hold also has its mode, a Permit its permits.
//
//   - rw-windows (checkRWWindows, rwmutex_test.go): no write window overlaps
//     a window of another handle; reads overlap only reads.
//   - sem-capacity (maxConcurrent, semaphore_test.go): the permits of the
//     windows open at any instant never exceed the capacity.
//   - rw-upgrade: a handle that only reads and asks to write gets ErrUpgrade
//     at once.
//   - loss-deadline (checkLossDeadlines) judges the family's losses with the
//     Mutex's.
//
// Calls that end with ErrNoQuorum are expected: a Semaphore of 2 permits on
// 5 nodes needs 4 of them (lock.SemaphoreQuorum), so a minority fault of
// two nodes makes it unavailable. They are counted, not judged.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/reentrant"
)

const (
	// Two workers of each type, one on each Client: the sixteen workers of
	// the suite stay sixteen (the machine's load does not grow), and twelve
	// Mutex workers keep three per Mutex name, enough for its floor of
	// acquisitions. Two RWMutex handles at once are enough to meet readers
	// beside readers and writers beside either; two Semaphore workers, each
	// taking 1 or 2 permits and now and then a second Permit while holding
	// one, ask for up to 6 of the 2 permits at once.
	chaosRWWorkers  = 2
	chaosSemWorkers = 2
	chaosSemPermits = 2 // the semaphore's capacity k
)

// familyCheckers are the family's checkers, in the summary's order.
var familyCheckers = []string{"rw-windows", "rw-upgrade", "sem-capacity"}

// familyLog is the history of the family's workers in one phase: their
// holds, and how their calls ended. It uses the phase's recorder for its
// clock and its loss watchers. Safe for concurrent use.
type familyLog struct {
	rec     *recorder
	rwName  string
	semName string

	mu       sync.Mutex
	holds    []*familyHold
	calls    map[string]int    // "family/call" → calls
	outcomes map[string]int    // "family/outcome" → calls
	upgrades []string          // rw-upgrade findings
	firstErr map[string]string // family → the first "error" outcome, for the summary
}

// familyHold is one hold of an RWMutex (write or read) or one Permit.
type familyHold struct {
	*holdRecord
	write   bool
	permits int64 // a Permit's; 0 for an RWMutex hold
}

// startFamily starts the family's workers in workers, until stop closes.
// Worker i of the suite is on client i%2 with the seed stream i+1, after the
// Mutex workers'.
func startFamily(t *testing.T, workers *sync.WaitGroup, stop <-chan struct{}, clients []*lock.Client, p phase, rec *recorder) *familyLog {
	f := &familyLog{rec: rec, rwName: fmt.Sprintf("chaos-%s-rw-0", p.name), semName: fmt.Sprintf("chaos-%s-sem-0", p.name),
		calls: map[string]int{}, outcomes: map[string]int{}, firstErr: map[string]string{}}
	for i := range chaosRWWorkers {
		w := &rwWorker{worker: newWorker(chaosMutexWorkers+i, clients, p, rec), fam: f}
		workers.Go(func() { w.run(stop, w.once) })
	}
	for i := range chaosSemWorkers {
		w := &semWorker{worker: newWorker(chaosMutexWorkers+chaosRWWorkers+i, clients, p, rec), fam: f}
		sem, err := w.c.NewSemaphore(f.semName, chaosSemPermits)
		require.NoError(t, err)
		w.sem = sem
		workers.Go(func() { w.run(stop, w.once) })
	}
	return f
}

// try makes one call of a family worker with a ctx of 0.2–2 s, tallies how
// it ended, and returns whether it took the hold and when it returned.
func (f *familyLog) try(w *worker, family, call string, fn func(context.Context) (bool, error)) (bool, time.Duration) {
	ctx, cancel := w.callCtx()
	defer cancel()
	ok, err := fn(ctx)
	at := f.rec.now()
	f.tally(family, call, ok, err)
	return ok, at
}

func (f *familyLog) tally(family, call string, ok bool, err error) {
	out := "ok"
	switch {
	case errors.Is(err, lock.ErrNoQuorum):
		out = "no-quorum"
	case errors.Is(err, context.DeadlineExceeded):
		out = "timeout"
	case errors.Is(err, lock.ErrLost):
		out = "lost"
	case errors.Is(err, lock.ErrUpgrade):
		out = "upgrade-refused"
	case err != nil:
		out = "error"
	case !ok:
		out = "busy"
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[family+"/"+call]++
	f.outcomes[family+"/"+out]++
	if out == "error" && f.firstErr[family] == "" {
		f.firstErr[family] = fmt.Sprintf("%s: %v", call, err)
	}
}

// open records a hold taken by a call that returned at `at`, whose loss
// channel is lost and whose validity m reports, and watches for its loss.
func (f *familyLog) open(w *worker, name string, handle int, call string, lease, at time.Duration, m validity, lost <-chan struct{}, write bool, permits int64) *familyHold {
	h := &familyHold{holdRecord: &holdRecord{name: name, handle: handle, client: w.client, call: call, lease: lease,
		acquired: at, validAtAcq: f.rec.since(m.ValidUntil()), lostCh: lost, done: make(chan struct{})},
		write: write, permits: permits}
	h.lastValid = h.validAtAcq
	f.mu.Lock()
	f.holds = append(f.holds, h)
	f.mu.Unlock()
	f.rec.watchLoss(h.holdRecord, m)
	return h
}

// release calls rel until count is 0 (a bounded number of times); the call
// that releases the last hold ends h's window just before it is invoked.
func (f *familyLog) release(h *familyHold, m validity, family, call string, count func() int, rel func(context.Context) error) {
	defer close(h.done)
	for range 8 {
		n := count()
		if n == 0 {
			return
		}
		if n == 1 {
			f.rec.releasing(h.holdRecord, m)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := rel(ctx)
		cancel()
		f.tally(family, call, err == nil, err)
		if errors.Is(err, lock.ErrNotHeld) {
			return
		}
	}
}

// keep holds until the worker's hold time has passed or lost closes.
func (w *worker) keep(lost <-chan struct{}) {
	t := time.NewTimer(w.holdTime())
	defer t.Stop()
	select {
	case <-lost:
	case <-t.C:
	}
}

// okErr is a blocking call's result as a Try call's.
func okErr(err error) (bool, error) { return err == nil, err }

// rwCalls are the RWMutex calls a worker picks from, by mode; lease is the
// lease of the *For calls.
var rwCalls = map[bool][]string{
	false: {"RLock", "RLock", "TryRLock", "RLockFor", "TryRLockFor"},
	true:  {"Lock", "Lock", "TryLock", "LockFor", "TryLockFor"},
}

func rwCall(rw *lock.RWMutex, call string, ctx context.Context, lease time.Duration) (bool, error) {
	switch call {
	case "RLock":
		return okErr(rw.RLock(ctx))
	case "TryRLock":
		return rw.TryRLock(ctx)
	case "RLockFor":
		return okErr(rw.RLockFor(ctx, lease))
	case "TryRLockFor":
		return rw.TryRLockFor(ctx, lease)
	case "Lock":
		return okErr(rw.Lock(ctx))
	case "TryLock":
		return rw.TryLock(ctx)
	case "LockFor":
		return okErr(rw.LockFor(ctx, lease))
	default:
		return rw.TryLockFor(ctx, lease)
	}
}

// rwWorker takes a fresh RWMutex handle each round and reads, writes, or
// writes and downgrades: Lock, RLock, Unlock, still reading, RUnlock.
type rwWorker struct {
	*worker
	fam *familyLog
}

func (w *rwWorker) once() {
	rw := w.c.NewRWMutex(w.fam.rwName)
	handle := w.rec.newHandle()
	switch k := w.rng.IntN(10); {
	case k < 5:
		w.read(rw, handle)
	default:
		w.write(rw, handle, k >= 8)
	}
}

// acquire takes a hold of the mode with a call picked at random, re-enters
// it up to once, and returns the call, its lease and when it returned.
func (w *rwWorker) acquire(rw *lock.RWMutex, write bool) (string, time.Duration, time.Duration, bool) {
	calls := rwCalls[write]
	call := calls[w.rng.IntN(len(calls))]
	lease := w.p.lease
	if strings.HasSuffix(call, "For") {
		lease = w.between(w.p.explicit[0], w.p.explicit[1])
	}
	ok, at := w.fam.try(w.worker, "rw", call, func(ctx context.Context) (bool, error) { return rwCall(rw, call, ctx, lease) })
	if ok && w.rng.IntN(3) == 0 {
		again := calls[w.rng.IntN(len(calls))]
		w.fam.try(w.worker, "rw", again+"(re-entry)", func(ctx context.Context) (bool, error) { return rwCall(rw, again, ctx, lease) })
	}
	return call, lease, at, ok
}

// read takes a read hold, sometimes asks to write while reading (which
// must be refused at once), holds, and releases.
func (w *rwWorker) read(rw *lock.RWMutex, handle int) {
	call, lease, at, ok := w.acquire(rw, false)
	if !ok {
		return
	}
	h := w.fam.open(w.worker, w.fam.rwName, handle, call, lease, at, rw, rw.Lost(), false, 0)
	if w.rng.IntN(4) == 0 {
		w.upgrade(rw, handle)
	}
	w.keep(h.lostCh)
	w.fam.release(h, rw, "rw", "RUnlock", rw.ReadHoldCount, rw.RUnlock)
}

// upgrade asks a handle that only reads for the write hold.
func (w *rwWorker) upgrade(rw *lock.RWMutex, handle int) {
	ctx, cancel := w.callCtx()
	defer cancel()
	start := time.Now()
	ok, err := rw.TryLock(ctx)
	took := time.Since(start)
	w.fam.tally("rw", "TryLock(upgrade)", ok, err)
	if ok || !errors.Is(err, lock.ErrUpgrade) || took > time.Second {
		w.fam.mu.Lock()
		w.fam.upgrades = append(w.fam.upgrades, fmt.Sprintf("hold %d reads and asked to write at %v: got %v, %v after %v, want ErrUpgrade at once",
			handle, w.rec.now(), ok, err, took))
		w.fam.mu.Unlock()
	}
	if ok { // keep the handle balanced
		_ = rw.Unlock(ctx)
	}
}

// write takes the write hold, holds and releases it. With downgrade it
// takes a read hold while writing, then releases the write hold and holds
// on as a reader: the read window starts when the read hold was taken, and
// its loss channel is the one Lost returns once the handle only reads.
func (w *rwWorker) write(rw *lock.RWMutex, handle int, downgrade bool) {
	call, lease, at, ok := w.acquire(rw, true)
	if !ok {
		return
	}
	h := w.fam.open(w.worker, w.fam.rwName, handle, call, lease, at, rw, rw.Lost(), true, 0)
	var rcall string
	var rlease, rat time.Duration
	var rok bool
	if downgrade {
		rcall, rlease, rat, rok = w.acquire(rw, false)
	}
	w.keep(h.lostCh)
	w.fam.release(h, rw, "rw", "Unlock", rw.WriteHoldCount, rw.Unlock)
	if !rok {
		return
	}
	r := w.fam.open(w.worker, w.fam.rwName, handle, rcall+"(downgrade)", rlease, rat, rw, rw.Lost(), false, 0)
	w.keep(r.lostCh)
	w.fam.release(r, rw, "rw", "RUnlock", rw.ReadHoldCount, rw.RUnlock)
}

// semWorker takes 1 or 2 permits of the phase's semaphore, and now and then
// one more Permit (another owner) while it holds the first.
type semWorker struct {
	*worker
	fam *familyLog
	sem *lock.Semaphore
}

func (w *semWorker) once() {
	first := w.acquire(1+w.rng.IntN(2), []string{"Acquire", "Acquire", "TryAcquire", "AcquireFor", "TryAcquireFor"})
	if first == nil {
		return
	}
	if w.rng.IntN(4) == 0 {
		if second := w.acquire(1, []string{"TryAcquire", "TryAcquireFor"}); second != nil {
			w.keep(second.lostCh)
			w.releasePermit(second)
		}
	}
	w.keep(first.lostCh)
	w.releasePermit(first)
}

// semHeld is a Permit and its hold record.
type semHeld struct {
	*familyHold
	p *lock.Permit
}

// acquire takes n permits with a call picked from calls, or returns nil.
func (w *semWorker) acquire(n int, calls []string) *semHeld {
	call := calls[w.rng.IntN(len(calls))]
	lease := w.p.lease
	if strings.HasSuffix(call, "For") {
		lease = w.between(w.p.explicit[0], w.p.explicit[1])
	}
	var p *lock.Permit
	ok, at := w.fam.try(w.worker, "sem", call, func(ctx context.Context) (bool, error) {
		var err error
		switch call {
		case "Acquire":
			p, err = w.sem.Acquire(ctx, n)
		case "TryAcquire":
			p, err = w.sem.TryAcquire(ctx, n)
		case "AcquireFor":
			p, err = w.sem.AcquireFor(ctx, n, lease)
		default:
			p, err = w.sem.TryAcquireFor(ctx, n, lease)
		}
		return p != nil, err
	})
	if !ok {
		return nil
	}
	h := w.fam.open(w.worker, w.fam.semName, w.rec.newHandle(), call, lease, at, p, p.Lost(), false, int64(n))
	return &semHeld{familyHold: h, p: p}
}

func (w *semWorker) releasePermit(s *semHeld) {
	held := 1
	w.fam.release(s.familyHold, s.p, "sem", "Release", func() int { return held }, func(ctx context.Context) error {
		held = 0
		return s.p.Release(ctx)
	})
}

// judge runs the family's checkers over the phase's holds, adds their
// findings to found, and returns the family's part of the summary line.
// The caller has taken the recorder's snapshot: every loss watcher is done.
func (f *familyLog) judge(found map[string][]string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	rw := map[string][]rwHold{}
	var sem []semHold
	var semWindows []*familyHold
	var reads, writes, downgrades, rwLost, semLost int
	var permits int64
	for _, h := range f.holds {
		start, end := window(h.holdRecord)
		end = max(end, start)
		if h.permits > 0 {
			sem = append(sem, semHold{from: start, to: end, permits: h.permits})
			semWindows = append(semWindows, h)
			permits += h.permits
			if h.lost {
				semLost++
			}
			continue
		}
		rw[h.name] = append(rw[h.name], rwHold{handle: h.handle, write: h.write, start: start, end: end})
		switch {
		case h.write:
			writes++
		case strings.HasSuffix(h.call, "(downgrade)"):
			downgrades++
		default:
			reads++
		}
		if h.lost {
			rwLost++
		}
	}
	for _, name := range slices.Sorted(maps.Keys(rw)) {
		for _, v := range checkRWWindows(rw[name]) {
			found["rw-windows"] = append(found["rw-windows"], fmt.Sprintf("%q: %s", name, v))
		}
	}
	peak := maxConcurrent(sem)
	if peak > chaosSemPermits {
		found["sem-capacity"] = append(found["sem-capacity"], overCapacity(f.semName, semWindows)...)
	}
	found["rw-upgrade"] = slices.Clone(f.upgrades)
	return fmt.Sprintf("rw %q: holds=%d (read %d, write %d, downgraded %d, lost %d) calls={%s}; "+
		"sem %q k=%d: holds=%d (permits %d, peak %d, lost %d) calls={%s}",
		f.rwName, reads+writes+downgrades, reads, writes, downgrades, rwLost, f.callSummary("rw"),
		f.semName, chaosSemPermits, len(sem), permits, peak, semLost, f.callSummary("sem"))
}

// records returns the family's holds as hold records, for the checkers
// that judge every lock type alike (checkLossDeadlines).
func (f *familyLog) records() []*holdRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*holdRecord, len(f.holds))
	for i, h := range f.holds {
		out[i] = h.holdRecord
	}
	return out
}

// overCapacity describes each instant, a window's start, at which the open
// windows hold more permits than the capacity, with those windows.
func overCapacity(name string, holds []*familyHold) []string {
	var out []string
	for _, h := range holds {
		at := h.acquired
		var open []string
		var sum int64
		for _, o := range holds {
			if start, end := window(o.holdRecord); start <= at && at < end {
				sum += o.permits
				open = append(open, fmt.Sprintf("hold %d (%s, %d permits, client %c, lost %v) [%v, %v]",
					o.handle, o.call, o.permits, 'A'+o.client, o.lost, start, end))
			}
		}
		if sum > chaosSemPermits {
			out = append(out, fmt.Sprintf("%q: %d permits held at %v: %s", name, sum, at, strings.Join(open, "; ")))
		}
	}
	return out
}

// callSummary lists the family's outcomes, then its calls. The caller holds
// f.mu.
func (f *familyLog) callSummary(family string) string {
	var parts []string
	for _, m := range []map[string]int{f.outcomes, f.calls} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if rest, ok := strings.CutPrefix(k, family+"/"); ok {
				parts = append(parts, fmt.Sprintf("%s=%d", rest, m[k]))
			}
		}
	}
	if e := f.firstErr[family]; e != "" {
		parts = append(parts, fmt.Sprintf("first-error=[%s]", e))
	}
	return strings.Join(parts, " ")
}

// requireRan fails when the RWMutex workers took no hold: their quorum is
// the Mutex's majority, so a phase in which they took none did not run.
// The Semaphore's holds are not counted here: its quorum of 4 of 5 nodes
// makes it unavailable for much of a phase of minority faults (expected).
// With go-redis clients at their defaults even the Mutex may get one hold
// (see judge), and no floor applies.
func (f *familyLog) requireRan(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	rw := 0
	for _, h := range f.holds {
		if h.permits == 0 {
			rw++
		}
	}
	if rw == 0 && !fixture.DefaultClients() {
		t.Errorf("no RWMutex hold in the phase: the family's workload did not run")
	}
}

// requireFree asserts that neither the RWMutex (its write hold, its
// readers, a waiting writer's mark) nor the Semaphore (its holders and
// their leases) has anything left on the first n nodes, allowing wait for
// background clean-ups to land.
func (f *familyLog) requireFree(t *testing.T, n int, wait time.Duration) {
	t.Helper()
	requireFree(t, n, f.rwName, wait)
	rwKey, err := reentrant.NewKey("", f.rwName)
	require.NoError(t, err)
	semKey := mustSemKey(t, f.semName)
	requireNoKeys(t, n, wait, rwKey.Readers(), rwKey.ReadLeases(), rwKey.WriterWaiting(), semKey.Lock, semKey.Leases)
}

// requireNoKeys asserts that none of keys exists on the first n nodes,
// allowing wait for them to go.
func requireNoKeys(t *testing.T, n int, wait time.Duration, keys ...string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		var left []string
		for i := range n {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			for _, k := range keys {
				exists, err := cluster.Nodes[i].Direct().Exists(ctx, k).Result()
				require.NoError(t, err, "node %d", i)
				if exists > 0 {
					left = append(left, fmt.Sprintf("node %d: %s", i, k))
				}
			}
			cancel()
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys left after %v: %v", wait, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestChaosFamilyCheckersCatchViolations feeds the family's checkers
// hand-made holds: each must flag the broken history and accept the sound
// one.
func TestChaosFamilyCheckersCatchViolations(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	hold := func(name string, handle, from, to int, write bool, permits int64) *familyHold {
		return &familyHold{holdRecord: &holdRecord{name: name, handle: handle, call: "Lock", acquired: ms(from),
			lastValid: ms(to + 50), released: true, end: ms(to)}, write: write, permits: permits}
	}
	judge := func(holds ...*familyHold) map[string][]string {
		f := &familyLog{rwName: "rw", semName: "sem", calls: map[string]int{}, outcomes: map[string]int{}, firstErr: map[string]string{}, holds: holds}
		found := map[string][]string{}
		t.Log(f.judge(found))
		return found
	}
	sound := judge(
		hold("rw", 1, 0, 10, false, 0), hold("rw", 2, 5, 15, false, 0), // readers share
		hold("rw", 3, 15, 30, true, 0), hold("rw", 3, 20, 40, false, 0), // a downgrade
		hold("rw", 4, 35, 50, false, 0),
		hold("sem", 5, 0, 10, false, 2), hold("sem", 6, 10, 20, false, 1), hold("sem", 7, 12, 30, false, 1),
	)
	for _, c := range familyCheckers {
		require.Empty(t, sound[c], c)
	}
	bad := judge(
		hold("rw", 1, 0, 10, false, 0), hold("rw", 2, 9, 12, true, 0), // a writer beside a reader
		hold("sem", 5, 0, 10, false, 2), hold("sem", 6, 9, 20, false, 1), // 3 of 2 permits
	)
	require.Len(t, bad["rw-windows"], 1)
	require.Len(t, bad["sem-capacity"], 1)
	require.Contains(t, bad["sem-capacity"][0], "3 permits held at 9ms")

	// A window ends at its loss or its last ValidUntil, before its release.
	lost := hold("rw", 1, 0, 100, true, 0)
	lost.lost, lost.lostAt = true, ms(20)
	require.Empty(t, judge(lost, hold("rw", 2, 30, 40, true, 0))["rw-windows"])
	expired := hold("sem", 5, 0, 100, false, 2)
	expired.lastValid = ms(20)
	require.Empty(t, judge(expired, hold("sem", 6, 30, 40, false, 2))["sem-capacity"])
}
