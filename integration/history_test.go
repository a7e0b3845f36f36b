package integration_test

// The history of a chaos run and the checkers that judge it.
//
// Every Lock, TryLock, LockFor and Unlock call is recorded with its invoke and
// return times as offsets from one start time taken with time.Now (so all
// times come from this process's monotonic clock and compare directly), its
// outcome and the fencing token. Every successful first acquisition also opens
// a hold: when it was acquired, its ValidUntil then, when its release was
// invoked, its last ValidUntil, and when its Lost() channel closed, if it did.
//
// Five checkers read that record, each for a failure the others can miss:
//
//   - porcupine (checkLinearizable): the calls, seen from outside, are those of
//     one fenced mutex per name. Its model has no expiry, so it judges only
//     phases whose leases are far longer than the phase.
//   - the fenced resource (fencedResource.write), online: a holder whose
//     Lost() has not fired writes with its token; a token below the highest
//     accepted means a stale holder acted after a newer one.
//   - live holders (recorder.acquired), online: when a hold starts, any other
//     hold of the name not yet released whose Lost() has not fired is a
//     second live holder.
//   - validity windows (checkWindows) and loss deadlines (checkLossDeadlines),
//     after the run: these cover expiry, which porcupine cannot.

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/relock-go/relock/lock"
)

// opKind is what a recorded call did to the lock, from the handle's side.
type opKind int

const (
	opAcquire       opKind = iota // Lock, TryLock or LockFor on a handle holding nothing
	opReenter                     // the same calls on a handle that holds already
	opUnlockPartial               // an Unlock that leaves the handle holding
	opRelease                     // the Unlock that ends the hold
	opLoss                        // not a call: the hold's Lost() channel closed
)

func (k opKind) String() string {
	return [...]string{"acquire", "reenter", "unlock", "release", "loss"}[k]
}

// outcome is how a call ended.
type outcome int

const (
	outOK      outcome = iota // it did what it was asked
	outFail                   // it definitely did not: TryLock found the lock held
	outLost                   // an Unlock that found the hold already lost
	outUnknown                // an error: a lost reply may hide an effect, or undo it later
)

func (o outcome) String() string { return [...]string{"ok", "fail", "lost", "unknown"}[o] }

// classify maps an error to an outcome.
func classify(err error, release bool) outcome {
	switch {
	case err == nil:
		return outOK
	case release && errors.Is(err, lock.ErrLost):
		return outLost
	}
	return outUnknown
}

// opRecord is one recorded call. Times are offsets from recorder.start.
type opRecord struct {
	name     string
	handle   int // one per Mutex
	client   int // 0 = A, 1 = B
	call     string
	kind     opKind
	invoke   time.Duration
	ret      time.Duration
	outcome  outcome
	err      error
	noQuorum bool // err wraps lock.ErrNoQuorum
	token    int64
}

// holdRecord is one hold: from a successful first acquisition to the Unlock
// that ends it. Fields after lostCh are guarded by recorder.mu.
type holdRecord struct {
	name        string
	handle      int
	client      int
	token       int64
	call        string        // Lock, TryLock or LockFor
	lease       time.Duration // the hold's lease
	acquired    time.Duration // the acquire call's return
	validAtAcq  time.Duration // ValidUntil at acquisition
	lostCh      <-chan struct{}
	done        chan struct{} // closed once the hold ended: stops the loss watcher
	released    bool
	end         time.Duration // the final Unlock's invoke
	lastValid   time.Duration // the last ValidUntil seen: at acquisition, release or loss
	lost        bool
	lostAt      time.Duration // when the watcher saw Lost() close
	validAtLoss time.Duration // ValidUntil read right after
	// validAtLossOK: the loss can be judged against validAtLoss. Not when
	// Lost() was closed before the watch began (a downgrade's read hold
	// that ran out while the write hold was being released): the watcher
	// saw it only then, so lostAt is not when it was signalled.
	validAtLossOK bool
}

// recorder collects one phase's history and the online checkers' findings.
// It is safe for concurrent use.
type recorder struct {
	start   time.Time
	handles atomic.Int64
	watch   sync.WaitGroup // loss watchers

	mu         sync.Mutex
	ops        []*opRecord
	holds      []*holdRecord
	live       map[string]map[*holdRecord]struct{}
	violations map[string][]string // checker → findings
}

func newRecorder() *recorder {
	return &recorder{start: time.Now(), live: map[string]map[*holdRecord]struct{}{}, violations: map[string][]string{}}
}

func (r *recorder) since(t time.Time) time.Duration { return t.Sub(r.start) }
func (r *recorder) now() time.Duration              { return time.Since(r.start) }
func (r *recorder) newHandle() int                  { return int(r.handles.Add(1)) }

// violate records a finding of checker.
func (r *recorder) violate(checker, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.violations[checker] = append(r.violations[checker], fmt.Sprintf(format, args...))
}

// begin notes a call's invoke time; done completes and records it.
func (r *recorder) begin(name string, handle, client int, call string, kind opKind) *opRecord {
	return &opRecord{name: name, handle: handle, client: client, call: call, kind: kind, invoke: r.now()}
}

func (r *recorder) done(op *opRecord, out outcome, err error, token int64) {
	op.ret = r.now()
	op.outcome, op.err, op.token = out, err, token
	op.noQuorum = errors.Is(err, lock.ErrNoQuorum)
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// acquired opens the hold that op (a successful first acquisition) started,
// checks that no other hold of the name is live, and watches for its loss.
// The live check asks the library's own Lost() channels, not our watchers,
// so it does not depend on how fast a watcher goroutine runs.
func (r *recorder) acquired(m *lock.Mutex, op *opRecord, lease time.Duration) *holdRecord {
	h := &holdRecord{
		name: op.name, handle: op.handle, client: op.client, token: op.token, call: op.call, lease: lease,
		acquired: op.ret, validAtAcq: r.since(m.ValidUntil()),
		lostCh: m.Lost(), done: make(chan struct{}),
	}
	r.mu.Lock()
	for other := range r.live[op.name] {
		if !isClosed(other.lostCh) {
			r.violations["live-holders"] = append(r.violations["live-holders"], fmt.Sprintf(
				"%q: hold %d (token %d) acquired at %v while hold %d (token %d, acquired %v, valid until %v) was live",
				op.name, h.handle, h.token, h.acquired, other.handle, other.token, other.acquired, other.validAtAcq))
		}
	}
	if r.live[op.name] == nil {
		r.live[op.name] = map[*holdRecord]struct{}{}
	}
	r.live[op.name][h] = struct{}{}
	h.lastValid = h.validAtAcq
	r.holds = append(r.holds, h)
	r.mu.Unlock()
	r.watchLoss(h, m)
	return h
}

// validity is what the lock types (Mutex, RWMutex, Permit) tell of how long
// a hold is known to be valid.
type validity interface{ ValidUntil() time.Time }

// watchLoss notes when h's Lost() channel closes, and the last ValidUntil
// that m reports then, unless the hold ends first.
func (r *recorder) watchLoss(h *holdRecord, m validity) {
	select {
	case <-h.lostCh:
		at := r.now()
		r.mu.Lock()
		h.lost, h.lostAt = true, at
		r.mu.Unlock()
		return
	default:
	}
	r.watch.Add(1)
	go func() {
		defer r.watch.Done()
		select {
		case <-h.lostCh:
		case <-h.done:
			return
		}
		at := r.now()
		v := m.ValidUntil() // the last deadline, kept by the library on loss
		r.mu.Lock()
		defer r.mu.Unlock()
		h.lost, h.lostAt = true, at
		if !v.IsZero() {
			h.validAtLoss, h.validAtLossOK = r.since(v), true
			h.lastValid = h.validAtLoss
		}
	}()
}

// releasing closes h's window just before its final Unlock is invoked.
func (r *recorder) releasing(h *holdRecord, m validity) {
	at, v := r.now(), m.ValidUntil()
	r.mu.Lock()
	defer r.mu.Unlock()
	h.released, h.end = true, at
	if !v.IsZero() {
		h.lastValid = r.since(v)
	}
	delete(r.live[h.name], h)
}

// ended marks h over once its final Unlock returned.
func (r *recorder) ended(h *holdRecord) { close(h.done) }

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// snapshot returns the ops and holds once every watcher is done.
func (r *recorder) snapshot() ([]*opRecord, []*holdRecord) {
	r.watch.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops), slices.Clone(r.holds)
}

// findings returns a copy of the online checkers' findings, by checker.
func (r *recorder) findings() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for k, v := range r.violations {
		out[k] = slices.Clone(v)
	}
	return out
}

// fencedResource is the thing a lock protects, one per name: it remembers
// the highest token it accepted and refuses lower ones, as a fenced storage
// service would. The check of Lost() and the write happen under one mutex,
// so a write is judged at the instant the holder decided to make it.
type fencedResource struct {
	name string
	rec  *recorder

	mu       sync.Mutex
	highest  int64
	owner    int // handle of the highest token
	accepted int
	skipped  int // the holder saw its loss and did not write
	rejected int
}

func (f *fencedResource) write(h *holdRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case isClosed(h.lostCh):
		f.skipped++
	case h.token < f.highest || (h.token == f.highest && h.handle != f.owner):
		f.rejected++
		f.rec.violate("fenced-resource", "%q: hold %d wrote token %d at %v after hold %d wrote token %d",
			f.name, h.handle, h.token, f.rec.now(), f.owner, f.highest)
	default:
		f.highest, f.owner = h.token, h.handle
		f.accepted++
	}
}

// window is the span in which a hold may act: from its acquisition to the
// earliest of its release, its loss, and its last ValidUntil.
func window(h *holdRecord) (start, end time.Duration) {
	end = h.lastValid
	if h.released {
		end = min(end, h.end)
	}
	if h.lost {
		end = min(end, h.lostAt)
	}
	return h.acquired, end
}

// checkWindows reports holds of one name by different handles whose windows
// overlap. Unlike porcupine it knows about expiry: a hold's window ends at its
// validity deadline, and the next holder can only have won a quorum after the
// keys expired on the nodes, which is at least the drift allowance later. No
// slack: both ends come from this process's monotonic clock.
func checkWindows(holds []*holdRecord) []string {
	byName := map[string][]*holdRecord{}
	for _, h := range holds {
		byName[h.name] = append(byName[h.name], h)
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		hs := byName[name]
		sort.Slice(hs, func(i, j int) bool { return hs[i].acquired < hs[j].acquired })
		var reach *holdRecord // the hold whose window reaches furthest so far
		var reachEnd time.Duration
		for _, h := range hs {
			if reach != nil && h.acquired < reachEnd && h.handle != reach.handle {
				out = append(out, fmt.Sprintf("%q: hold %d acquired at %v, inside hold %d's window [%v, %v]",
					name, h.handle, h.acquired, reach.handle, reach.acquired, reachEnd))
			}
			if _, end := window(h); reach == nil || end > reachEnd {
				reach, reachEnd = h, end
			}
		}
	}
	return out
}

// checkLossDeadlines judges when each loss was signalled against the
// ValidUntil the library reported at that moment. The library arms its timer
// up to lossEarly before ValidUntil, so a signal normally comes before it;
// when it comes after, how much depends on how soon the timer and our
// watcher goroutine get a CPU. Two measures of the machine's delays from the
// timer's due time on are forgiven: the time the probe saw timers starved
// in all (starvedFor: the signal crosses several goroutines, and each hop
// can wait out a stall of its own), and the longest time one OS thread of
// the process waited for a CPU (threadWaitedFor: a goroutine on that thread
// waits with it, unseen by the probe on the other threads). They may
// overlap, which only makes the check more lenient. A signal later than
// slack beyond them is reported as late; it is a violation when it is later
// than the lease's drift allowance (lease × 1% + 2 ms) plus hardSlack beyond
// them: the nodes' keys can expire that long after ValidUntil at the
// earliest, and hardSlack absorbs what the measures miss (the sampling
// interval, a thread's wait not yet counted). The exact check of "nobody
// acts while another owner holds the lock" is the live-holders one.
func checkLossDeadlines(holds []*holdRecord, slack, hardSlack time.Duration, probe *stallProbe) (violations, late []string, worst time.Duration) {
	for _, h := range holds {
		if !h.lost || !h.validAtLossOK {
			continue
		}
		after := h.lostAt - h.validAtLoss
		// The library's timer is due lossEarly before ValidUntil: a stall
		// from then on held the signal up as much as one after it.
		from := h.validAtLoss - lossEarly
		stall := probe.starvedFor(from, h.lostAt)
		waited := probe.threadWaitedFor(from, h.lostAt)
		worst = max(worst, after)
		what := fmt.Sprintf("%q: hold %d (%s, lease %v) lost at %v, %v after its ValidUntil %v (timers starved then: %v in all, longest stall %v; one thread kept off a CPU up to %v)",
			h.name, h.handle, h.call, h.lease, h.lostAt, after, h.validAtLoss, stall, probe.worstStall(from, h.lostAt), waited)
		switch drift := h.lease/100 + 2*time.Millisecond; {
		case after > drift+hardSlack+stall+waited:
			violations = append(violations, what)
		case after > slack+stall+waited:
			late = append(late, what)
		}
	}
	return violations, late, worst
}

// lossEarly is how long before ValidUntil the library reports a loss at
// most (lock's lossEarly): the signal's path starts then.
const lossEarly = 100 * time.Millisecond

// stallProbe measures how late the process runs timers: a goroutine sleeps
// probeTick again and again and notes each wake-up later than due. It tells a
// late loss signal caused by the library from one caused by starvation.
type stallProbe struct {
	rec  *recorder
	stop chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	stalls  []stall
	threads []threadWaits // see threadwait_test.go
}

type stall struct{ due, woke time.Duration }

const probeTick = 2 * time.Millisecond

// startStallProbe starts two probe goroutines per P: each P runs its own
// timers, and one P can be held up while the other runs on. One wakes on
// a timer's channel. The other follows the path of a loss signal: a timer
// function starts a goroutine (as time.AfterFunc does for the library's
// loss deadline), which closes a channel that a third goroutine waits on
// (as the chaos watcher waits on Lost()); under load each hop can wait in
// the scheduler's run queue, which the plain timer does not show.
func startStallProbe(rec *recorder) *stallProbe {
	p := &stallProbe{rec: rec, stop: make(chan struct{})}
	for range runtime.GOMAXPROCS(0) {
		p.wg.Go(p.run)
		p.wg.Go(p.runSignalPath)
	}
	p.wg.Go(p.runThreadSampler)
	return p
}

func (p *stallProbe) run() {
	t := time.NewTimer(probeTick)
	defer t.Stop()
	for {
		due := p.rec.now() + probeTick
		t.Reset(probeTick)
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.note(due)
	}
}

func (p *stallProbe) runSignalPath() {
	for {
		due := p.rec.now() + probeTick
		fired := make(chan struct{})
		t := time.AfterFunc(probeTick, func() { close(fired) })
		select {
		case <-p.stop:
			t.Stop()
			return
		case <-fired:
		}
		p.note(due)
	}
}

// note records a wake-up for due that came more than a millisecond late.
func (p *stallProbe) note(due time.Duration) {
	if woke := p.rec.now(); woke-due > time.Millisecond {
		p.mu.Lock()
		p.stalls = append(p.stalls, stall{due: due, woke: woke})
		p.mu.Unlock()
	}
}

func (p *stallProbe) close() {
	close(p.stop)
	p.wg.Wait()
}

// worstStall is the longest lateness of the probe's wake-ups that were due
// between from and to.
func (p *stallProbe) worstStall(from, to time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var worst time.Duration
	for _, s := range p.stalls {
		if s.due >= from-probeTick && s.due <= to {
			worst = max(worst, s.woke-s.due)
		}
	}
	return worst
}

// starvedFor is how long, in all, the probe's wake-ups that were due
// between from and to were held up: the union of their late spans, so that
// stalls several probe goroutines saw at once count once. It is at least
// worstStall's.
func (p *stallProbe) starvedFor(from, to time.Duration) time.Duration {
	p.mu.Lock()
	var spans []stall
	for _, s := range p.stalls {
		if s.due >= from-probeTick && s.due <= to {
			spans = append(spans, s)
		}
	}
	p.mu.Unlock()
	slices.SortFunc(spans, func(a, b stall) int { return cmp.Compare(a.due, b.due) })
	var total time.Duration
	covered := time.Duration(math.MinInt64) // the union so far ends here
	for _, s := range spans {
		if start := max(s.due, covered); s.woke > start {
			total += s.woke - start
		}
		covered = max(covered, s.woke)
	}
	return total
}

// worst is the longest stall of the run.
func (p *stallProbe) worst() time.Duration { return p.worstStall(0, 1<<62) }

// Porcupine's view of the lock: one fenced mutex per name.

type mutexInput struct {
	name   string
	kind   opKind
	handle int
}

type mutexOutput struct {
	outcome outcome
	token   int64
}

// mutexState is the model's state: who holds the lock (0: nobody) and the
// highest token handed out.
type mutexState struct {
	holder int
	last   int64
}

// fencedMutexModel is the sequential specification. A failed or unknown
// acquire changes nothing: the handle never holds after an error, and what a
// lost reply may have left on the nodes is undone in the background without
// anyone using it. An Unlock that found the hold lost, or whose outcome is
// unknown, may have freed the lock; a loss frees it.
func fencedMutexModel() porcupine.Model {
	return porcupine.Model{
		Partition: partitionByName,
		Init:      func() any { return mutexState{} },
		Step: func(state, input, output any) (bool, any) {
			s, in, out := state.(mutexState), input.(mutexInput), output.(mutexOutput)
			switch in.kind {
			case opAcquire:
				if out.outcome != outOK {
					return true, s
				}
				if s.holder != 0 || out.token <= s.last {
					return false, s
				}
				return true, mutexState{holder: in.handle, last: out.token}
			case opReenter, opUnlockPartial:
				return out.outcome != outOK || s.holder == in.handle, s
			case opRelease:
				if out.outcome == outOK && s.holder != in.handle {
					return false, s
				}
			}
			if s.holder == in.handle { // a release or a loss
				s.holder = 0
			}
			return true, s
		},
		DescribeOperation: func(input, output any) string {
			in, out := input.(mutexInput), output.(mutexOutput)
			return fmt.Sprintf("%s(h%d) → %s token %d", in.kind, in.handle, out.outcome, out.token)
		},
		DescribeState: func(state any) string {
			s := state.(mutexState)
			return fmt.Sprintf("holder h%d, last token %d", s.holder, s.last)
		},
	}
}

func partitionByName(history []porcupine.Operation) [][]porcupine.Operation {
	byName := map[string][]porcupine.Operation{}
	for _, op := range history {
		name := op.Input.(mutexInput).name
		byName[name] = append(byName[name], op)
	}
	var out [][]porcupine.Operation
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out
}

// porcupineHistory turns the record into porcupine operations. A call with an
// unknown outcome returns "at infinity" (after everything else), so porcupine
// may place its effect at any time after its invocation. A loss is an instant.
func porcupineHistory(ops []*opRecord, holds []*holdRecord) []porcupine.Operation {
	var horizon time.Duration
	for _, op := range ops {
		horizon = max(horizon, op.ret)
	}
	horizon += time.Second
	var out []porcupine.Operation
	for _, op := range ops {
		ret := op.ret
		if op.outcome == outUnknown {
			ret = horizon
		}
		out = append(out, porcupine.Operation{
			ClientId: op.handle % 64, Call: int64(op.invoke), Return: int64(ret),
			Input:  mutexInput{name: op.name, kind: op.kind, handle: op.handle},
			Output: mutexOutput{outcome: op.outcome, token: op.token},
		})
	}
	for _, h := range holds {
		if h.lost {
			out = append(out, porcupine.Operation{
				ClientId: h.handle % 64, Call: int64(h.lostAt), Return: int64(h.lostAt),
				Input:  mutexInput{name: h.name, kind: opLoss, handle: h.handle},
				Output: mutexOutput{outcome: outOK, token: h.token},
			})
		}
	}
	return out
}

// checkLinearizable runs porcupine over the history. On a violation it
// writes porcupine's visualization to a file that outlives the test and
// names it in the finding.
func checkLinearizable(t *testing.T, ops []*opRecord, holds []*holdRecord, timeout time.Duration) (porcupine.CheckResult, time.Duration, []string) {
	model := fencedMutexModel()
	history := porcupineHistory(ops, holds)
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(model, history, timeout)
	took := time.Since(start)
	if res == porcupine.Ok {
		return res, took, nil
	}
	finding := fmt.Sprintf("porcupine: %s over %d operations", res, len(history))
	if dir, err := os.MkdirTemp("", "relock-chaos-"); err == nil {
		path := filepath.Join(dir, "linearizability.html")
		if err := porcupine.VisualizePath(model, info, path); err == nil {
			finding += "; visualization: " + path
		}
	}
	if res == porcupine.Unknown {
		t.Logf("%s (timed out after %v): not counted as a violation", finding, timeout)
		return res, took, nil
	}
	return res, took, []string{finding}
}

// summarize counts what the history holds, for the final log line.
func summarize(ops []*opRecord, holds []*holdRecord) string {
	calls := map[string]int{}
	for _, op := range ops {
		calls[op.call]++
	}
	tokens := map[int64]bool{}
	losses := 0
	for _, h := range holds {
		tokens[h.token] = true
		if h.lost {
			losses++
		}
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(calls)) {
		parts = append(parts, fmt.Sprintf("%s=%d", c, calls[c]))
	}
	return fmt.Sprintf("ops=%d (%s) acquisitions=%d tokens=%d losses=%d",
		len(ops), strings.Join(parts, " "), len(holds), len(tokens), losses)
}

// TestChaosCheckersCatchViolations feeds the checkers hand-made histories:
// each must flag the broken one and accept the sound one, or a green chaos
// run would mean nothing.
func TestChaosCheckersCatchViolations(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	op := func(handle int, kind opKind, from, to int, out outcome, token int64) *opRecord {
		return &opRecord{name: "x", handle: handle, kind: kind, invoke: ms(from), ret: ms(to), outcome: out, token: token}
	}
	check := func(ops []*opRecord) porcupine.CheckResult {
		return porcupine.CheckOperationsTimeout(fencedMutexModel(), porcupineHistory(ops, nil), 10*time.Second)
	}

	overlap := []*opRecord{
		op(1, opAcquire, 0, 10, outOK, 100),
		op(2, opAcquire, 20, 30, outOK, 200), // 1 still holds
		op(1, opRelease, 40, 50, outOK, 100),
		op(2, opRelease, 60, 70, outOK, 200),
	}
	if got := check(overlap); got != porcupine.Illegal {
		t.Errorf("two overlapping holders: porcupine says %s, want Illegal", got)
	}
	stale := []*opRecord{
		op(1, opAcquire, 0, 10, outOK, 100),
		op(1, opRelease, 20, 30, outOK, 100),
		op(2, opAcquire, 40, 50, outOK, 90), // a token below the previous holder's
	}
	if got := check(stale); got != porcupine.Illegal {
		t.Errorf("a decreasing token: porcupine says %s, want Illegal", got)
	}
	// An Unlock whose outcome is unknown may free the lock later; concurrent
	// acquisitions make a sound history.
	sound := []*opRecord{
		op(1, opAcquire, 0, 10, outOK, 100),
		op(2, opAcquire, 5, 15, outUnknown, 0),
		op(1, opRelease, 20, 30, outUnknown, 100),
		op(3, opAcquire, 25, 40, outOK, 300),
		op(4, opAcquire, 26, 27, outFail, 0),
		op(3, opRelease, 50, 60, outOK, 300),
	}
	if got := check(sound); got != porcupine.Ok {
		t.Errorf("a sound history: porcupine says %s, want Ok", got)
	}

	a := &holdRecord{name: "x", handle: 1, acquired: ms(0), lastValid: ms(100), released: true, end: ms(80)}
	b := &holdRecord{name: "x", handle: 2, acquired: ms(50), lastValid: ms(150), released: true, end: ms(120)}
	if got := checkWindows([]*holdRecord{a, b}); len(got) != 1 {
		t.Errorf("overlapping windows: %d findings, want 1: %v", len(got), got)
	}
	b.acquired = ms(80) // the instant a's release was invoked: a lock handed over, no overlap
	if got := checkWindows([]*holdRecord{a, b}); len(got) != 0 {
		t.Errorf("adjacent windows: findings %v, want none", got)
	}

	rec := newRecorder()
	res := &fencedResource{name: "x", rec: rec}
	open := make(chan struct{})
	res.write(&holdRecord{handle: 2, token: 200, lostCh: open})
	res.write(&holdRecord{handle: 1, token: 100, lostCh: open})
	if res.rejected != 1 || len(rec.violations["fenced-resource"]) != 1 {
		t.Errorf("a stale write: %d rejected, findings %v; want 1", res.rejected, rec.violations)
	}
}
